"""`simul eval` checks before decoding that every stream fits the context, naming each one that does not."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from simul.cli import app
from simul.decoding.backend import ContextOverflowError
from simul.decoding.engine import Engine, EngineSettings
from simul.streams.format import write_streams
from tests.helpers import SENTENCES, eval_args, lag_stream

runner = CliRunner()


def test_preflight_names_the_streams_that_do_not_fit(tiny_model: Path, tmp_path: Path) -> None:
    paragraph = " ".join(src for src, _ in SENTENCES) * 3  # a paragraph-level segment among sentences
    streams = [lag_stream(f"s{i}", src, ref) for i, (src, ref) in enumerate(SENTENCES)]
    streams.insert(1, lag_stream("para-1", paragraph, "Ein Absatz."))
    streams.append(lag_stream("para-2", paragraph + " And one more sentence.", "Ein Absatz."))
    path = tmp_path / "streams.jsonl"
    write_streams(path, streams)
    out = tmp_path / "run"
    small = runner.invoke(app, eval_args(tiny_model, path, "--n-ctx", "512", "--out", str(out)))
    assert small.exit_code == 1
    message = small.stderr
    assert "2 of 6 streams do not fit the context window of 512 positions" in message, message
    named = re.findall(r"(\S+) \((\d+)\)", message.split("in brackets):")[1])
    assert [sid for sid, _ in named] == ["para-1", "para-2"]  # the short streams are not named
    need = max(int(n) for _, n in named)
    suggested = int(re.search(r"pass --n-ctx (\d+)", message).group(1))  # type: ignore[union-attr]
    assert suggested >= need > 512 and suggested & (suggested - 1) == 0
    assert not (out / "steps.jsonl").exists()  # nothing was decoded
    engine = Engine(EngineSettings(model=tiny_model, n_ctx=suggested, threads=1))
    try:
        engine.preflight(streams)  # the suggested context fits every stream (no decoding needed to know)
    finally:
        engine.close()


def test_overflow_advice_stays_within_the_models_training_length() -> None:
    exc = ContextOverflowError("stream 'a' step 2 needs 3000 positions", needed=3000, remedy=" or split it")
    assert str(exc).endswith("; pass --n-ctx 4096 or split it")
    assert exc.advice(8192).endswith("; pass --n-ctx 4096 or split it")
    # the next power of two is past the training length, the need is not: the training length is advised
    assert exc.advice(3500).endswith("; pass --n-ctx 3500 or split it")
    # past the training length no --n-ctx helps
    capped = exc.advice(2048)
    assert "pass --n-ctx" not in capped
    assert "trained on at most 2048 tokens" in capped
    assert ContextOverflowError("no figure").advice(2048) == "no figure"

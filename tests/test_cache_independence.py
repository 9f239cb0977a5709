"""Defaults that do not depend on a cache (issue 31): ``--ne-tokenizer auto`` is the target language's
tokenizer whether or not sacrebleu's cache holds the flores101 SentencePiece model, good or damaged, and
flores101, when asked for, fails before any stream is decoded if its file is absent or damaged.

The cache is a temporary ``$SACREBLEU`` folder in three states: no model file, a good-looking one (a real
SentencePiece model, trained here on a few sentences), and a damaged one.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import SimulError
from simul.metrics.registry import METRICS
from simul.metrics.tokenizers import flores101_model_path, get_tokenizer, resolve_ne_tokenizer
from tests.helpers import SENTENCES, eval_args

runner = CliRunner()
CACHES = ("empty", "good", "damaged")


def _spm_model() -> bytes:
    """A small but real SentencePiece model: sentencepiece loads it like the Flores-101 one."""
    spm = pytest.importorskip("sentencepiece")
    buffer = io.BytesIO()
    lines = [text for pair in SENTENCES for text in pair] * 10
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=buffer,
        vocab_size=60,
        hard_vocab_limit=False,
        normalization_rule_name="identity",
        minloglevel=2,
    )
    return buffer.getvalue()


@pytest.fixture(scope="module")
def spm_model() -> bytes:
    return _spm_model()


def _cache(root: Path, state: str, model: bytes) -> Path:
    """A sacrebleu cache folder in ``state``: empty, good (a loadable model file) or damaged."""
    cache = root / f"sacrebleu-{state}"
    models = cache / "models"
    models.mkdir(parents=True)
    if state == "good":
        (models / "sacrebleu_tokenizer_spm.model").write_bytes(model)
    elif state == "damaged":
        (models / "sacrebleu_tokenizer_spm.model").write_bytes(model[:-1])  # a download cut short
    return cache


@pytest.mark.parametrize("state", CACHES)
def test_auto_is_the_language_tokenizer_whatever_the_cache_holds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spm_model: bytes, state: str
) -> None:
    monkeypatch.setenv("SACREBLEU", str(_cache(tmp_path, state, spm_model)))
    assert flores101_model_path().exists() == (state != "empty")
    assert resolve_ne_tokenizer("auto", "de") == "13a"
    assert resolve_ne_tokenizer("auto", "zh") == "zh"
    assert resolve_ne_tokenizer("auto", "ja") == "ja-mecab"


def test_flores101_when_asked_for(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spm_model: bytes) -> None:
    monkeypatch.setenv("SACREBLEU", str(_cache(tmp_path, "empty", spm_model)))
    with pytest.raises(SimulError, match=r"is not at .*sacrebleu_tokenizer_spm\.model.*--ne-tokenizer auto"):
        resolve_ne_tokenizer("flores101", "de")
    monkeypatch.setenv("SACREBLEU", str(_cache(tmp_path, "damaged", spm_model)))
    with pytest.raises(SimulError, match=r"cannot be loaded .*damaged.*--ne-tokenizer auto"):
        resolve_ne_tokenizer("flores101", "de")
    monkeypatch.setenv("SACREBLEU", str(_cache(tmp_path, "good", spm_model)))
    assert resolve_ne_tokenizer("flores101", "de") == "flores101"
    pieces = get_tokenizer("flores101")("Die Katze")
    assert "".join(pieces).replace("\u2581", " ").strip() == "Die Katze"  # SentencePiece pieces


def _eval(model: Path, streams: Path, out: Path, *extra: str) -> Any:
    return runner.invoke(
        app, eval_args(model, streams, "--threads", "2", "--json", "--out", str(out), *extra)
    )


def _quality(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every metric of every method but the wall-clock ones."""
    timing = {name for name, info in METRICS.items() if info.timing}
    return {m["key"]: {k: v for k, v in m["metrics"].items() if k not in timing} for m in doc["methods"]}


def test_eval_gives_the_same_figures_whatever_the_cache_holds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spm_model: bytes, tiny_model: Path, streams_file: Path
) -> None:
    """Issue 31's "Done when": the same NE tokenizer and the same numbers with and without a flores101 model
    file, good or damaged, in the cache."""
    docs, runs = [], []
    for state in CACHES:
        monkeypatch.setenv("SACREBLEU", str(_cache(tmp_path, state, spm_model)))
        out = tmp_path / f"run-{state}"
        result = _eval(tiny_model, streams_file, out)
        assert result.exit_code == 0, result.output
        docs.append(json.loads(result.stdout))
        runs.append(out)
    assert [d["signatures"]["ne_tokenizer"] for d in docs] == ["13a"] * 3
    assert _quality(docs[1]) == _quality(docs[0]) == _quality(docs[2])
    for name in ("steps.jsonl", "per_stream.jsonl"):
        assert (runs[1] / name).read_bytes() == (runs[0] / name).read_bytes() == (runs[2] / name).read_bytes()
    config = json.loads((runs[0] / "run.json").read_text())["config"]
    assert config["ne_tokenizer"] == "13a"
    assert config["resolved"]["ne_tokenizer"] == {
        "given": "auto",
        "used": "13a",
        "rule": "the target language's sacrebleu tokenizer (zh, ja-mecab, else 13a)",
    }
    assert config["resolved"]["template"]["given"] == "auto"
    assert config["resolved"]["template"]["used"] == config["template"]


def test_a_damaged_flores101_model_fails_before_decoding(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spm_model: bytes, tiny_model: Path, streams_file: Path
) -> None:
    """Before issue 31: every stream decoded, then a sentencepiece RuntimeError traceback, and run.json left
    with status running and no metrics."""
    for state in ("damaged", "empty"):
        monkeypatch.setenv("SACREBLEU", str(_cache(tmp_path, state, spm_model)))
        out = tmp_path / f"flores-{state}"
        result = _eval(tiny_model, streams_file, out, "--ne-tokenizer", "flores101")
        assert result.exit_code == 1, result.output
        assert "sacrebleu_tokenizer_spm.model" in result.output and "--ne-tokenizer auto" in result.output
        assert isinstance(result.exception, SystemExit)  # handled: a message, no traceback
        assert result.output.count("error:") == 1 and "Traceback" not in result.output
        assert not (out / "run.json").exists() and not (out / "steps.jsonl").exists()  # nothing decoded
    monkeypatch.setenv("SACREBLEU", str(_cache(tmp_path, "good", spm_model)))
    result = _eval(tiny_model, streams_file, tmp_path / "flores-good", "--ne-tokenizer", "flores101")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["signatures"]["ne_tokenizer"] == "flores101"
    resolved = json.loads((tmp_path / "flores-good" / "run.json").read_text())["config"]["resolved"]
    assert resolved["ne_tokenizer"]["given"] == resolved["ne_tokenizer"]["used"] == "flores101"
    assert resolved["ne_tokenizer"]["model_sha256"] == hashlib.sha256(spm_model).hexdigest()
    assert resolved["ne_tokenizer"]["model_pieces"] > 0

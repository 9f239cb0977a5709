"""A failure while scoring leaves the decoded steps usable (issue 31): run.json says what happened (status
``scoring_failed``, not ``running`` with no metrics), the user gets one clear error instead of a traceback,
and `simul score RUN_DIR` finishes the run with the figures a run that never failed has."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.metrics.registry import METRICS
from simul.runs import evaluation
from tests.helpers import eval_args

runner = CliRunner()


def _failing_scorer(*args: Any, **kwargs: Any) -> Any:
    # what a damaged sentencepiece model raised from inside sacrebleu before issue 31
    raise RuntimeError("INTERNAL: could not parse ModelProto from sacrebleu_tokenizer_spm.model\nsecond-line")


def _quality(run: dict[str, Any]) -> list[dict[str, Any]]:
    """Every metric of every method but the wall-clock ones."""
    timing = {name for name, info in METRICS.items() if info.timing}
    return [{k: v for k, v in m["metrics"].items() if k not in timing} for m in run["methods"]]


def _one_clear_error(result: Any) -> str:
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)  # handled, not raised through
    assert result.output.count("error:") == 1 and "Traceback" not in result.output
    return " ".join(result.output.split())


def test_a_failing_scorer_leaves_a_run_that_score_finishes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tiny_model: Path, streams_file: Path
) -> None:
    whole = tmp_path / "whole"
    done = runner.invoke(app, eval_args(tiny_model, streams_file, "--threads", "2", "--out", str(whole)))
    assert done.exit_code == 0, done.output

    out = tmp_path / "failed"
    with monkeypatch.context() as patch:
        patch.setattr(evaluation, "score", _failing_scorer)
        failed = runner.invoke(app, eval_args(tiny_model, streams_file, "--threads", "2", "--out", str(out)))
    message = _one_clear_error(failed)
    assert "scoring failed after all 4 streams were decoded: RuntimeError: INTERNAL: could not" in message
    assert f"simul score {out}" in message and "second-line" not in message  # the reason's first line

    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "scoring_failed" and run["streams_done"] == 4
    assert run["scoring_error"]["error"] == "RuntimeError"
    assert run["scoring_error"]["message"].startswith("RuntimeError: INTERNAL: could not parse ModelProto")
    assert "methods" not in run  # no figures pretend to be there
    assert (out / "steps.jsonl").read_bytes() == (whole / "steps.jsonl").read_bytes()  # every step kept

    # readers that need a finished run say how to finish this one
    refused = runner.invoke(app, ["export", str(out), "--format", "simuleval"])
    assert "its scoring failed" in _one_clear_error(refused) and f"simul score {out}" in refused.output

    finished = runner.invoke(app, ["score", str(out), "--json", "--quiet"])
    assert finished.exit_code == 0, finished.output
    assert "is complete now" in finished.output
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "complete" and "scoring_error" not in run
    assert run["scored_later"]["error"]["error"] == "RuntimeError"
    reference = json.loads((whole / "run.json").read_text())
    assert run["signatures"] == reference["signatures"]
    assert _quality(run) == _quality(reference)
    assert (out / "per_stream.jsonl").read_bytes() == (whole / "per_stream.jsonl").read_bytes()
    again = runner.invoke(app, ["score", str(out), "--quiet"])  # now an ordinary complete run
    assert again.exit_code == 0 and "is complete now" not in again.output


def test_a_failing_scorer_without_a_run_directory(
    monkeypatch: pytest.MonkeyPatch, tiny_model: Path, streams_file: Path
) -> None:
    monkeypatch.setattr(evaluation, "score", _failing_scorer)
    failed = runner.invoke(app, eval_args(tiny_model, streams_file, "--threads", "2", "--limit", "1"))
    assert "scoring failed after all 1 streams were decoded: RuntimeError" in _one_clear_error(failed)


def test_resume_also_finishes_a_run_whose_scoring_failed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tiny_model: Path, streams_file: Path
) -> None:
    out = tmp_path / "failed"
    args = eval_args(tiny_model, streams_file, "--threads", "2", "--limit", "2", "--out", str(out))
    with monkeypatch.context() as patch:
        patch.setattr(evaluation, "score", _failing_scorer)
        _one_clear_error(runner.invoke(app, args))
    resumed = runner.invoke(app, [*args, "--resume"])
    assert resumed.exit_code == 0, resumed.output
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "complete" and run["methods"] and "scoring_error" not in run

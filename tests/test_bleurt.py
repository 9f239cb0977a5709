"""BLEURT from a local checkpoint through bleurt-pytorch (issue 41), on the tiny checkpoint that
``python -m simul.testing.tiny_bleurt`` builds offline: the scorer, `simul score --bleurt-model --update` on a
sentence-level run, ingested talks scored per re-segmented segment, `simul rank --metric bleurt`, and a clear
error for a folder that is no checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.metrics.bleurt import load_bleurt
from simul.reports.rank import rank
from tests.helpers import eval_args
from tests.ingested import ingest

runner = CliRunner()
LONGFORM_DATA = Path(__file__).parent / "data" / "longform"


def _run(path: Path) -> dict[str, Any]:
    return dict(json.loads((path / "run.json").read_text(encoding="utf-8")))


def test_the_tiny_checkpoint_scores_pairs_and_counts_what_it_cuts(tiny_bleurt: Path) -> None:
    scorer, reason = load_bleurt(str(tiny_bleurt), 2)
    assert reason is None and scorer is not None and scorer.max_tokens == 128
    refs = ["Die Katze saß auf der Matte.", "wir haben " * 80, "das ist gut"]
    cands = ["Die Katze sitzt.", "nicht", "das ist gut"]
    first, again = scorer.score([], cands, refs), scorer.score([], cands, refs)
    assert first.segments == again.segments and len(first.segments) == 3  # three batches of 2 and 1
    assert first.truncated == [False, True, False]
    assert len(set(first.segments)) == 3
    assert first.system == pytest.approx(sum(first.segments) / 3)
    assert first.signature == f"model:{tiny_bleurt}|batch:2|version:0.0.1"


def test_a_folder_without_a_checkpoint_is_named(tmp_path: Path) -> None:
    scorer, reason = load_bleurt(str(tmp_path), 2)
    assert scorer is None and reason is not None
    assert f"BLEURT checkpoint {tmp_path} is not a folder with config.json" in reason
    assert load_bleurt(None) == (None, None) and load_bleurt("none") == (None, None)


def test_score_adds_bleurt_to_a_run(
    tiny_model: Path, streams_file: Path, tiny_bleurt: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    made = runner.invoke(app, eval_args(tiny_model, streams_file, "--threads", "2", "--out", str(out)))
    assert made.exit_code == 0, made.output
    added = runner.invoke(app, ["score", str(out), "--bleurt-model", str(tiny_bleurt), "--update", "--quiet"])
    assert added.exit_code == 0, added.output
    run = _run(out)
    assert run["config"]["bleurt_model"] == str(tiny_bleurt)
    assert run["signatures"]["bleurt"].startswith(f"model:{tiny_bleurt}|batch:16|")
    rows = [json.loads(x) for x in (out / "per_stream.jsonl").read_text(encoding="utf-8").splitlines()]
    for method in run["methods"]:
        own = [r["bleurt"] for r in rows if r["method"] == method["key"]]
        assert len(own) == 4 and method["metrics"]["bleurt"] == pytest.approx(sum(own) / 4, abs=1e-3)
        assert method["counts"]["bleurt_truncated"] == 0
    again = runner.invoke(app, ["score", str(out), "--json", "--quiet"])  # the run's checkpoint is reused
    assert [m["metrics"]["bleurt"] for m in json.loads(again.stdout)["methods"]] == [
        m["metrics"]["bleurt"] for m in run["methods"]
    ]
    ranked = rank([out], "bleurt", samples=100).groups[0]
    assert ranked.metric == "bleurt" and ranked.bands[0].neighbours[0] is not None


def test_ingested_talks_get_bleurt_per_segment(tiny_bleurt: Path, tmp_path: Path) -> None:
    out = ingest(
        "omnisteval",
        LONGFORM_DATA / "omnisteval.jsonl",
        LONGFORM_DATA / "talks.jsonl",
        tmp_path / "ingested",
        "--bleurt-model",
        str(tiny_bleurt),
    )
    [method] = _run(out)["methods"]
    rows = [json.loads(x) for x in (out / "per_stream.jsonl").read_text(encoding="utf-8").splitlines()]
    segments = [seg["bleurt"] for r in rows for seg in r["segments"]]
    assert segments and all(isinstance(x, float) for x in segments)
    assert method["metrics"]["bleurt"] == pytest.approx(sum(segments) / len(segments), abs=1e-3)

"""Wall-clock figures live in timings.jsonl, so steps.jsonl and per_stream.jsonl of two identical runs are
byte-identical; readers join the timings back, and run directories from before the split still load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.runs.directory import STEPS_FILE, TIMINGS_FILE
from simul.streams.format import write_streams
from tests.helpers import eval_args, make_streams

runner = CliRunner()


@pytest.fixture(scope="module")
def two_runs(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("runs")
    streams = base / "s.jsonl"
    write_streams(streams, make_streams())
    runs = (base / "a", base / "b")
    for out in runs:
        result = runner.invoke(app, eval_args(tiny_model, streams, "--mask-k", "2", "--out", str(out)))
        assert result.exit_code == 0, result.output
    return runs


def test_identical_runs_write_identical_steps(two_runs: tuple[Path, Path]) -> None:
    a, b = two_runs
    for name in (STEPS_FILE, "per_stream.jsonl", "streams.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    steps = [json.loads(line) for line in (a / STEPS_FILE).read_text().splitlines()]
    timings = [json.loads(line) for line in (a / TIMINGS_FILE).read_text().splitlines()]
    assert not any(k.startswith("t_") for s in steps for k in s)
    keys = [(s["method"], s["stream"], s["step"]) for s in steps]
    assert keys == [(t["method"], t["stream"], t["step"]) for t in timings]
    assert all(set(t) - {"method", "stream", "step"} >= {"t_prompt", "t_gen"} for t in timings)


def _old_format(run: Path, target: Path) -> Path:
    """The run as simul wrote it before the split: the timing fields inside steps.jsonl."""
    target.mkdir()
    for item in run.iterdir():
        if item.name not in (STEPS_FILE, TIMINGS_FILE):
            (target / item.name).write_bytes(item.read_bytes())
    timings = {
        (t.pop("method"), t.pop("stream"), t.pop("step")): t
        for t in map(json.loads, (run / TIMINGS_FILE).read_text().splitlines())
    }
    lines = []
    for step in map(json.loads, (run / STEPS_FILE).read_text().splitlines()):
        step.update(timings[(step["method"], step["stream"], step["step"])])
        lines.append(json.dumps(step, sort_keys=True, ensure_ascii=False) + "\n")
    (target / STEPS_FILE).write_text("".join(lines))
    return target


def test_readers_join_the_timings_and_read_old_run_directories(
    two_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    a, _ = two_runs
    old = _old_format(a, tmp_path / "old")
    new_score = runner.invoke(app, ["score", str(a), "--json", "--quiet"])
    old_score = runner.invoke(app, ["score", str(old), "--json", "--quiet"])
    assert new_score.exit_code == old_score.exit_code == 0, old_score.output
    new_methods = json.loads(new_score.stdout)["methods"]
    assert new_methods == json.loads(old_score.stdout)["methods"]
    assert new_methods[0]["metrics"]["tps"] > 0  # the timings were joined back, not left at zero
    stored = json.loads((a / "run.json").read_text())["methods"]
    assert [m["metrics"] for m in stored] == [m["metrics"] for m in new_methods]
    assert runner.invoke(app, ["diff", str(a), str(old)]).exit_code == 0
    assert runner.invoke(app, ["show", str(old), "--stream", "s0"]).exit_code == 0
    assert runner.invoke(app, ["export", str(old)]).exit_code == 0


def test_missing_timings_are_damage(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = two_runs
    copy = tmp_path / "copy"
    copy.mkdir()
    for item in a.iterdir():
        if item.is_file():
            (copy / item.name).write_bytes(item.read_bytes())
    lines = (copy / TIMINGS_FILE).read_text().splitlines(keepends=True)
    (copy / TIMINGS_FILE).write_text("".join(lines[:-1]))
    result = runner.invoke(app, ["score", str(copy)])
    text = " ".join(result.output.split())
    assert result.exit_code == 1
    assert (
        f"steps.jsonl:{len(lines)}: unreadable step record (its timings are missing from timings.jsonl)"
        in text
    )

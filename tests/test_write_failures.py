"""Failures while writing results, and damaged run files: one clear error, no traceback, no stray files,
and never a run that looks complete."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.runs.directory import STATUS_COMPLETE
from simul.streams.format import write_streams
from tests.helpers import eval_args, make_streams

runner = CliRunner()


@pytest.fixture(scope="module")
def streams_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("streams") / "streams.jsonl"
    write_streams(path, make_streams()[:3])
    return path


def disk_full_on(monkeypatch: pytest.MonkeyPatch, name: str, after: int = 0) -> Callable[[], int]:
    """Make fsync fail with ENOSPC for files whose name contains ``name``, from its ``after``-th sync on
    (what a full disk does to a buffered write); returns a counter of the failures injected."""
    real = os.fsync
    seen = {"syncs": 0, "failed": 0}

    def fsync(fd: int) -> None:
        target = os.readlink(f"/proc/self/fd/{fd}")
        if name in Path(target).name:
            seen["syncs"] += 1
            if seen["syncs"] > after:
                seen["failed"] += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return lambda: seen["failed"]


def _stray(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp") or p.name == ".lock")


def test_disk_full_while_writing_steps(
    tiny_model: Path, streams_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    failures = disk_full_on(monkeypatch, "steps.jsonl")
    result = runner.invoke(app, eval_args(tiny_model, streams_file, "--threads", "2", "--out", str(out)))
    assert failures() == 1 and result.exit_code == 1
    text = " ".join(result.output.split())
    assert "Traceback" not in result.output and text.count("error:") == 1
    assert f"cannot write {out / 'steps.jsonl'}: the disk is full" in text
    assert f"--resume --out {out}" in text
    assert _stray(out) == []
    assert json.loads((out / "run.json").read_text())["status"] != STATUS_COMPLETE
    # once there is room again the run is continued and completes
    monkeypatch.undo()
    resumed = runner.invoke(
        app, eval_args(tiny_model, streams_file, "--threads", "2", "--out", str(out), "--resume")
    )
    assert resumed.exit_code == 0, resumed.output
    assert json.loads((out / "run.json").read_text())["status"] == STATUS_COMPLETE


def test_disk_full_while_writing_run_json(
    tiny_model: Path, streams_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    failures = disk_full_on(monkeypatch, "run.json", after=1)  # the first save (status running) succeeds
    result = runner.invoke(app, eval_args(tiny_model, streams_file, "--out", str(out)))
    assert failures() == 1 and result.exit_code == 1
    text = " ".join(result.output.split())
    assert "Traceback" not in result.output and text.count("error:") == 1
    assert f"cannot write {out / 'run.json'}: the disk is full" in text
    assert _stray(out) == []
    assert json.loads((out / "run.json").read_text())["status"] == "running"


def test_disk_full_while_writing_a_stream_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from simul.common.errors import SimulError

    disk_full_on(monkeypatch, "out.jsonl")
    with pytest.raises(SimulError, match="the disk is full"):
        write_streams(tmp_path / "out.jsonl", make_streams())
    assert list(tmp_path.iterdir()) == []


def test_unwritable_output_paths(tiny_model: Path, streams_file: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    for out, message in (
        (a_file, "exists and is not a directory"),
        (a_file / "run", "a part of the path is a file, not a folder"),
    ):
        result = runner.invoke(app, eval_args(tiny_model, streams_file, "--out", str(out)))
        assert result.exit_code == 1 and message in " ".join(result.output.split()), result.output
        assert "Traceback" not in result.output
    base = ["streams", "flores", "--limit", "2"]
    for target, message in (
        (tmp_path, "it is a directory"),
        (a_file / "x.jsonl", "is a file, not a folder"),
    ):
        result = runner.invoke(app, [*base, "-o", str(target)])
        assert result.exit_code == 1 and message in " ".join(result.output.split()), result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]


def test_show_html_to_a_bad_path(tiny_model: Path, streams_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert runner.invoke(app, eval_args(tiny_model, streams_file, "--out", str(out))).exit_code == 0
    show = ["show", str(out), "--stream", "s0", "--html"]
    for target, message in (
        (tmp_path, "it is a directory"),
        (tmp_path / "missing" / "page.html", "its folder does not exist"),
    ):
        result = runner.invoke(app, [*show, str(target)])
        assert result.exit_code == 1 and message in " ".join(result.output.split()), result.output
        assert "Traceback" not in result.output
    assert _stray(tmp_path) == [] and _stray(out) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_damaged_run_json(tiny_model: Path, streams_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert runner.invoke(app, eval_args(tiny_model, streams_file, "--out", str(out))).exit_code == 0
    good = json.loads((out / "run.json").read_text())

    def damaged(change: Callable[[dict], None]) -> None:  # type: ignore[type-arg]
        run = json.loads(json.dumps(good))
        change(run)
        (out / "run.json").write_text(json.dumps(run))

    cases = [
        (lambda run: run.pop("config"), "it has no 'config' object"),
        (lambda run: run["config"]["methods"][0].pop("name"), "config method 1 has no valid 'name'"),
        (lambda run: run["methods"][1].pop("name"), "scored method 2 lacks 'name'"),
    ]
    for change, message in cases:
        damaged(change)
        for command in (
            ["score", str(out)],
            ["show", str(out), "--stream", "s0"],
            ["diff", str(out), str(out)],
        ):
            result = runner.invoke(app, command)
            text = " ".join(result.output.split())
            assert result.exit_code == 1, (command, result.output)
            assert message in text and "run.json" in text and "Traceback" not in result.output


def test_advice_that_can_be_followed(tiny_model: Path, streams_file: Path, tmp_path: Path) -> None:
    from simul.request.methods import Method
    from simul.runs.evaluation import EvalRequest, Interrupted, run_evaluation

    cut = tmp_path / "cut"

    def stop(done: int, total: int) -> None:
        if done == 1:
            raise KeyboardInterrupt

    request = EvalRequest(streams_file, [Method("rt")], out=cut, comet_model="none")
    request.engine = request.engine.__class__(model=tiny_model, n_ctx=1024, threads=2)
    with pytest.raises(Interrupted):
        run_evaluation(request, progress=stop)
    exported = runner.invoke(app, ["export", str(cut)])
    assert exported.exit_code == 1 and "--resume" in exported.output
    assert "--allow-incomplete" not in exported.output  # export has no such option
    scored = runner.invoke(app, ["score", str(cut)])
    assert "--allow-incomplete" in scored.output  # score has


def test_context_advice_names_the_model_limit(tiny_model: Path, tmp_path: Path) -> None:
    from tests.helpers import lag_stream

    words = " ".join(f"word{i}" for i in range(3000))
    streams = tmp_path / "long.jsonl"
    write_streams(streams, [lag_stream("long", words, "Wort.", lag=2900)])
    result = runner.invoke(app, eval_args(tiny_model, streams, "--n-ctx", "100000"))
    text = " ".join(result.output.split())
    assert result.exit_code == 1
    assert "the model was trained on at most 4096 tokens, which caps --n-ctx" in text
    assert "pass --n-ctx" not in text

"""CPU time against wall time per method, the unreliable-timing rule, and its marks in tables and diffs.

Timings are never asserted: the rule is checked on synthetic CPU/wall/run-queue numbers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from simul.cli import app
from simul.machine.cpu_usage import (
    MIN_SHARE,
    CpuMeter,
    Snapshot,
    Usage,
    judge,
    runqueue_seconds,
)
from simul.reports.bench_tables import bench_table
from simul.reports.tables import methods_table
from simul.reports.timing_notes import TimingNotes
from simul.request.methods import Method
from simul.streams.format import write_streams
from tests.helpers import eval_args, make_streams

runner = CliRunner()


# -- the rule ------------------------------------------------------------------------------------------------


def test_run_queue_wait_decides_when_known() -> None:
    # got 8 of the 10 CPU seconds it asked for: just reliable
    assert judge(wall=5.0, cpu=8.0, runqueue=2.0, threads=2).reliable
    low = judge(wall=5.0, cpu=7.0, runqueue=3.0, threads=2)
    assert not low.reliable and low.basis == "runqueue" and low.cpu_share == pytest.approx(0.7)
    # an idle machine with passive waiting: fewer cores used than threads, but nothing refused
    idle = judge(wall=10.0, cpu=13.0, runqueue=0.05, threads=2)
    assert idle.reliable and idle.cpu_per_wall == pytest.approx(1.3)


def test_cpu_per_wall_decides_without_run_queue_figures() -> None:
    assert judge(wall=10.0, cpu=16.0, runqueue=None, threads=2).reliable  # 0.8 of 2 threads
    low = judge(wall=10.0, cpu=15.0, runqueue=None, threads=2)
    assert not low.reliable and low.basis == "cpu_per_wall" and low.cpu_share is None
    assert judge(wall=0.0, cpu=0.0, runqueue=None, threads=2).basis == "none"
    assert MIN_SHARE == 0.8


def _snap(wall: float, cpu: float, waits: dict[int, float] | None, load: float | None) -> Snapshot:
    return Snapshot(wall=wall, cpu=cpu, runqueue=waits, load1=load)


def test_usage_sums_calls_and_threads() -> None:
    usage = Usage()
    usage.add(_snap(0, 0, {1: 1.0, 2: 0.5}, 2.0), _snap(2, 3, {1: 1.5, 2: 1.0, 3: 0.25}, 4.0))
    usage.add(_snap(10, 10, {1: 2.0}, 1.0), _snap(11, 11.5, {1: 2.5}, 1.0))
    assert usage.calls == 2
    assert usage.wall == pytest.approx(3.0) and usage.cpu == pytest.approx(4.5)
    # 0.5 + 0.5 + 0.25 (a thread born during the call counts from zero), then 0.5
    assert usage.runqueue == pytest.approx(1.75)
    record = usage.to_json(threads=2)
    assert record["load1_mean"] == 2.0 and record["load1_max"] == 4.0
    assert record["cpu_share"] == pytest.approx(4.5 / 6.25, abs=1e-3)
    assert record["reliable"] is False
    back = Usage.from_json(record)
    assert (back.calls, back.wall, back.cpu, back.runqueue) == (2, 3.0, 4.5, 1.75)
    assert back.load_sum / back.load_samples == pytest.approx(2.0)
    # one call without schedstat: the run queue sum is unknown from then on
    usage.add(_snap(20, 20, None, None), _snap(21, 21, None, None))
    assert usage.runqueue is None and usage.to_json(2)["basis"] == "cpu_per_wall"


def test_meter_measures_per_method_even_when_a_call_fails() -> None:
    waits = iter([{1: 0.0}, {1: 0.1}, {1: 0.1}, {1: 0.3}, {1: 0.3}, {1: 0.3}])
    meter = CpuMeter(2, runqueue=lambda: next(waits), loadavg=lambda: 1.5)
    with meter.measure("rt"):
        pass
    with meter.measure("ssbd-b0.2"):
        pass
    with pytest.raises(KeyboardInterrupt), meter.measure("rt"):
        raise KeyboardInterrupt
    doc = meter.to_json()
    assert doc["threads"] == 2 and doc["min_share"] == MIN_SHARE
    assert doc["methods"]["rt"]["calls"] == 2 and doc["methods"]["ssbd-b0.2"]["calls"] == 1
    assert doc["methods"]["rt"]["runqueue_seconds"] == pytest.approx(0.1)
    assert doc["methods"]["ssbd-b0.2"]["runqueue_seconds"] == pytest.approx(0.2)
    resumed = CpuMeter(2)
    resumed.resume(doc)
    assert resumed.usage["rt"].calls == 2
    resumed.resume(None)  # a run that recorded nothing
    assert resumed.usage["rt"].calls == 2


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="Linux only")
def test_schedstat_is_read_for_every_thread() -> None:
    waits = runqueue_seconds()
    if waits is None:
        pytest.skip("this kernel keeps no schedstat")
    assert os.getpid() in waits or len(waits) >= 1
    assert all(w >= 0 for w in waits.values())
    assert runqueue_seconds(Path("/nonexistent")) is None


# -- reading a run's record: what to mark --------------------------------------------------------------------


RT = Method("rt")
SSBD = Method("ssbd", beta=0.2)


def _record(reliable: bool, share: float) -> dict[str, Any]:
    return {
        "calls": 12,
        "wall_seconds": 10.0,
        "cpu_seconds": 8.6,
        "runqueue_seconds": 8.6 / share - 8.6,
        "cpu_per_wall": 0.86,
        "cpu_share": share,
        "basis": "runqueue",
        "reliable": reliable,
        "load1_mean": 5.2,
        "load1_max": 6.0,
    }


def fake_run(rt_ok: bool, ssbd_ok: bool) -> dict[str, Any]:
    return {
        "config": {"methods": [RT.to_json(), SSBD.to_json()]},
        "environment": {
            "cpu_usage": {
                "threads": 2,
                "min_share": 0.8,
                "methods": {
                    RT.key: _record(rt_ok, 0.95 if rt_ok else 0.43),
                    SSBD.key: _record(ssbd_ok, 0.97 if ssbd_ok else 0.45),
                },
            }
        },
    }


def test_unreliable_method_marks_its_timing_figures() -> None:
    notes = TimingNotes.from_run(fake_run(rt_ok=True, ssbd_ok=False))
    assert set(notes.unreliable) == {SSBD.key} and notes.rt_key == RT.key
    assert {"tps", "speedup", "row_cost", "p50_update_ms"} <= notes.marks(SSBD.key)
    assert "chrf" not in notes.marks(SSBD.key) and "ad" not in notes.marks(SSBD.key)
    assert notes.marks(RT.key) == set()
    reason = notes.reason(SSBD.key, "tps")
    assert reason is not None and "got 45% of the CPU time it asked for" in reason
    assert "CPU/wall 0.86 for 2 threads" in reason and "load 5.2" in reason


def test_unreliable_baseline_marks_the_speedups_of_every_method() -> None:
    notes = TimingNotes.from_run(fake_run(rt_ok=False, ssbd_ok=True))
    assert notes.marks(SSBD.key) == {"speedup", "speedup_e2e", "efficiency"}
    assert "speedup" not in notes.marks(RT.key)  # RT's own speedup is 1 by definition
    assert "tps" in notes.marks(RT.key)
    reason = notes.reason(SSBD.key, "speedup")
    assert reason is not None and "RT (the baseline)" in reason and "43%" in reason
    assert notes.reason(SSBD.key, "tps") is None


def test_runs_without_a_record_mark_nothing() -> None:
    notes = TimingNotes.from_run({"config": {"methods": [RT.to_json()]}, "environment": {}})
    assert notes.unreliable == {} and notes.note() is None and notes.marks(RT.key) == set()
    assert TimingNotes.from_run({}).note() is None


def _render(renderable: Any) -> str:
    console = Console(width=250, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def _line(text: str, first: str) -> str:
    """The table row whose first cell starts with ``first``."""
    return next(line for line in text.splitlines() if line.strip(" │┃|").startswith(first))


def _rows() -> list[dict[str, Any]]:
    metrics = {"tps": 412.0, "speedup": 1.31, "chrf": 40.0, "p50_update_ms": 50.0, "ad": 80.0}
    return [
        {"key": RT.key, "name": "rt", "label": RT.label, "metrics": {**metrics, "speedup": 1.0}},
        {"key": SSBD.key, "name": "ssbd", "label": SSBD.label, "metrics": metrics},
    ]


def test_methods_table_marks_the_figures_and_says_why() -> None:
    text = _render(methods_table(_rows(), timing=TimingNotes.from_run(fake_run(True, False))))
    ssbd_line = _line(text, "SSBD")
    rt_line = _line(text, "RT")
    assert "412!" in ssbd_line and "1.31!" in ssbd_line and "40.0!" not in ssbd_line
    assert "!" not in rt_line
    assert "speed figures unreliable" in text and "SSBD(b=0.2) got 45% of the CPU time" in text
    clean = _render(methods_table(_rows(), timing=TimingNotes.from_run(fake_run(True, True))))
    assert "!" not in clean and "unreliable" not in clean


def test_bench_table_marks_the_figures() -> None:
    rows = [
        {
            **row,
            "time_split": {"prompt": 10.0, "verify": 20.0, "decode": 60.0, "python": 10.0},
            "frozen_steps": 0,
            "steps": 10,
        }
        for row in _rows()
    ]
    text = _render(bench_table(rows, "bench", TimingNotes.from_run(fake_run(False, True))))
    rt_line = _line(text, "RT")
    ssbd_line = _line(text, "SSBD")
    assert "412!" in rt_line and "1.00!" not in rt_line
    assert "1.31!" in ssbd_line and "412!" not in ssbd_line
    assert "RT got 43%" in text


# -- end to end on the tiny model: the record in run.json, the marks in eval, score and diff -----------------


@pytest.fixture(scope="module")
def run_dir(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cpu")
    streams = root / "streams.jsonl"
    write_streams(streams, make_streams())
    out = root / "run"
    result = runner.invoke(app, eval_args(tiny_model, streams, "--out", str(out), "--threads", "2"))
    assert result.exit_code == 0, result.output
    return out


def test_run_json_records_policy_threads_and_cpu(run_dir: Path) -> None:
    env = json.loads((run_dir / "run.json").read_text())["environment"]
    assert env["threads"] == 2
    assert env["thread_choice"]["source"] == "--threads" and env["thread_choice"]["threads"] == 2
    assert env["openmp"]["wait_policy"] in ("passive", "active", "runtime default") or env["openmp"]["set_by"]
    assert env["openmp"]["set_by"] in ("simul", "user", "nobody")
    usage = env["cpu_usage"]
    assert usage["threads"] == 2 and set(usage["methods"]) == {RT.key, SSBD.key}
    for record in usage["methods"].values():
        assert record["calls"] == len(make_streams())
        assert record["wall_seconds"] > 0 and record["cpu_seconds"] >= 0
        assert isinstance(record["reliable"], bool)
        assert record["basis"] in ("runqueue", "cpu_per_wall")


def _with_usage(run_dir: Path, target: Path, key: str | None) -> Path:
    """A copy of the run whose CPU record says ``key`` (if any) got 43% of its CPU, the rest 99%: the real
    record depends on how busy the machine running the tests is."""
    import shutil

    shutil.copytree(run_dir, target)
    doc = json.loads((target / "run.json").read_text())
    for k, record in doc["environment"]["cpu_usage"]["methods"].items():
        record.update(_record(k != key, 0.43 if k == key else 0.99))
    (target / "run.json").write_text(json.dumps(doc))
    return target


def test_score_and_diff_mark_unreliable_timings(run_dir: Path, tmp_path: Path) -> None:
    quiet = _with_usage(run_dir, tmp_path / "quiet", None)
    busy = _with_usage(run_dir, tmp_path / "busy", SSBD.key)
    scored = runner.invoke(app, ["score", str(busy)])
    assert scored.exit_code == 0, scored.output
    assert "speed figures unreliable" in scored.stderr and "got 43% of the CPU time" in scored.stderr

    result = runner.invoke(app, ["diff", str(quiet), str(busy), "--json", "--bootstrap", "0"])
    doc = json.loads(result.stdout)
    ssbd = next(m for m in doc["methods"] if m["new"] == SSBD.key)
    rows = {r["name"]: r for r in ssbd["metrics"]}
    assert rows["tps"]["timing_unreliable"]["new"].startswith("got 43%")
    assert rows["tps"]["timing_unreliable"]["base"] is None
    assert rows["chrf"]["timing_unreliable"] is None

    table = runner.invoke(app, ["diff", str(quiet), str(busy), "--bootstrap", "0"])
    rt_part, ssbd_part = table.stderr.split(SSBD.label, 1)
    assert "!" not in _line(rt_part, "TPS ")
    assert _line(ssbd_part, "TPS ").count("!") == 1  # the new run's figure only
    # the note may wrap anywhere on the terminal's width
    assert "new run: got 43% of the CPU time it asked for" in " ".join(table.stderr.split())

    md = runner.invoke(app, ["diff", str(busy), str(quiet), "--markdown", "--bootstrap", "0"])
    assert "> ! speed figures unreliable" in md.stdout and "base run: got 43%" in md.stdout


def test_threads_zero_is_automatic_and_json_says_which_timings_are_unreliable(
    tiny_model: Path, tmp_path: Path
) -> None:
    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams()[:1])
    out = tmp_path / "run"
    result = runner.invoke(
        app, [*eval_args(tiny_model, streams, "--out", str(out), "--threads", "0"), "--json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    env = json.loads((out / "run.json").read_text())["environment"]
    assert env["thread_choice"]["source"] == "auto" and env["threads"] == env["thread_choice"]["threads"] >= 1
    unreliable = {k for k, r in env["cpu_usage"]["methods"].items() if not r["reliable"]}
    assert set(doc["timing_unreliable"]) == unreliable

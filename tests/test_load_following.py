"""Exact mode's threads that follow the load (simul.machine.load_following, issue 53): the chooser's rule
under a scripted load, and outputs byte-identical with 1 thread, 2 threads and the count switched
mid-stream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.decoding.backend import exactness
from simul.machine import load_following, threads
from simul.machine.load_following import LoadFollower, changes_note, cpu_pressure
from simul.reports.timing_notes import TimingNotes
from simul.streams.format import write_streams
from tests.helpers import eval_args, make_streams

runner = CliRunner()


class ScriptedLoad:
    """A clock that advances by each pass's time, a CPU pressure set by the script, and the changes made."""

    def __init__(self) -> None:
        self.now = 100.0
        self.pressure: float | None = 0.0
        self.applied: list[int] = []

    def passes(self, follower: LoadFollower, ms: float | dict[int, float], seconds: float) -> None:
        """One-token passes for ``seconds`` of the clock, of ``ms`` each (per thread count, if a dict)."""
        end = self.now + seconds
        while self.now < end:
            took = (ms[follower.threads] if isinstance(ms, dict) else ms) / 1000.0
            self.now += took
            follower.after_pass(1, took)


def test_a_scripted_load_makes_the_chooser_switch_and_say_why() -> None:
    load = ScriptedLoad()
    follower = LoadFollower(
        2, load.applied.append, clock=lambda: load.now, pressure=lambda: load.pressure, placement=dict
    )
    follower.calibrated({2: 0.010, 1: 0.018})  # before the run: 10 ms on 2 threads, 18 ms on 1
    load.passes(follower, 10.5, 5)  # idle: as calibrated
    assert follower.changes == [] and follower.threads == 2
    load.pressure = 70.0  # two busy loops start: the passes take 4x
    load.passes(follower, 40, 3)
    assert load.applied == [1]
    first = follower.changes[0]
    assert (first.from_threads, first.to_threads) == (2, 1)
    assert "4.0x their cost on 2 threads (40.0 ms against 10.0 ms), CPU pressure 70%" in first.reason
    load.passes(follower, 19, 9)  # one thread under pressure: no probe before 10 s
    assert load.applied == [1]
    # a probe of 2 threads, still under pressure (the probe itself finds out whether they pay), which are
    # no faster than the last window on one thread, measured under the same load
    load.passes(follower, {1: 19, 2: 25}, 3)
    assert load.applied == [1, 2, 1]
    assert follower.changes[1].reason.startswith("probe after 10 s on 1 thread, CPU pressure 70%")
    assert "probe: one-token passes took 25.0 ms on 2 threads, no faster than 19.0 ms on 1" in (
        follower.changes[2].reason
    )
    load.pressure = 5.0  # the load eases
    load.passes(follower, 18, 15)  # the next probe waits twice as long
    assert load.applied == [1, 2, 1]
    load.passes(follower, {1: 18, 2: 10}, 6)
    assert load.applied == [1, 2, 1, 2] and "probe after 20 s" in follower.changes[3].reason
    load.passes(follower, 10, 10)  # the load is gone: 2 threads stay
    assert load.applied == [1, 2, 1, 2] and follower.threads == 2
    record = follower.to_json()
    assert [(c["from"], c["to"]) for c in record] == [(2, 1), (1, 2), (2, 1), (1, 2)]
    assert all(c["at_s"] > 0 and c["passes"] > 0 and c["reason"] for c in record)
    assert [c["at_s"] for c in record] == sorted(c["at_s"] for c in record)


def test_without_calibration_the_fastest_window_is_the_cost_and_a_lone_burst_of_pressure_is_not_enough() -> (
    None
):
    load = ScriptedLoad()
    follower = LoadFollower(
        4, load.applied.append, clock=lambda: load.now, pressure=lambda: load.pressure, placement=dict
    )
    load.passes(follower, 10, 3)
    load.pressure = 90.0
    load.passes(follower, 12, 3)  # pressure alone, passes 1.2x: below even the lowered bar (1.3x)
    assert load.applied == []
    load.passes(follower, 14, 3)  # 1.4x under high pressure
    assert load.applied == [1] and "1.4x their cost on 4 threads" in follower.changes[0].reason


def test_threads_stacked_on_one_cpu_make_it_go_down_to_one() -> None:
    """The slow phases' cause: llama.cpp's two threads on one CPU (their passes are as fast as calibrated
    here, so only the placement can decide)."""
    load = ScriptedLoad()
    ran = {11: 0.0, 12: 0.0, 13: 0.0}  # the main thread, OpenMP's worker, an idle helper thread
    where = {11: 0, 12: 1, 13: 1}

    def placement() -> dict[int, tuple[float, int]]:
        return {tid: (ran[tid], where[tid]) for tid in ran}

    def passes(seconds: float) -> None:
        end = load.now + seconds
        while load.now < end:
            load.now += 0.01
            ran[11] += 0.005
            ran[12] += 0.005
            follower.after_pass(1, 0.01)

    follower = LoadFollower(
        2, load.applied.append, clock=lambda: load.now, pressure=lambda: 90.0, placement=placement, cpus=2
    )
    follower.calibrated({2: 0.010})
    passes(5)  # on two CPUs: nothing to do
    assert load.applied == []
    where[12] = 0  # both on CPU 0
    passes(1.05)  # one check sees it: not yet
    assert load.applied == []
    passes(1.05)
    assert load.applied == [1]
    why = follower.changes[0].reason
    assert why.startswith("llama.cpp's 2 threads all ran on CPU 0 in 2 checks in a row")
    assert why.endswith("CPU pressure 90%")
    # on one thread the passes are no faster (this script's passes take 10 ms on any count): each probe
    # goes back, and the next one waits twice as long (10 s, 20 s, then 40 s: past these 60 s)
    passes(60)
    assert load.applied == [1, 2, 1, 2, 1]
    assert [round(c.at_s - follower.changes[0].at_s) for c in follower.changes[1::2]] == [10, 31]
    # one CPU allowed: the placement means nothing
    alone = LoadFollower(2, load.applied.append, clock=lambda: load.now, placement=placement, cpus=1)
    alone.calibrated({2: 0.010})
    for _ in range(500):
        load.now += 0.01
        alone.after_pass(1, 0.01)
    assert alone.changes == []


def test_a_probe_that_wins_under_load_keeps_the_threads_even_stacked() -> None:
    """Beside two busy loops gemma's stacked pair beats one thread (a larger share of the CPUs): the probe
    finds that, and the stacking rule rests until a slow window sends the threads down again."""
    load = ScriptedLoad()
    ran = {11: 0.0, 12: 0.0}
    where = {11: 0, 12: 0}  # stacked from the start
    cost = {2: 0.030, 1: 0.040}  # under this load: 30 ms a pass on the stacked pair, 40 ms on one thread

    def placement() -> dict[int, tuple[float, int]]:
        return {tid: (ran[tid], where[tid]) for tid in ran}

    def passes(seconds: float) -> None:
        end = load.now + seconds
        while load.now < end:
            took = cost[follower.threads]
            load.now += took
            ran[11] += took / 2
            ran[12] += took / 2
            follower.after_pass(1, took)

    follower = LoadFollower(
        2, load.applied.append, clock=lambda: load.now, pressure=lambda: 90.0, placement=placement, cpus=2
    )
    follower.calibrated({2: 0.010, 1: 0.018})  # idle costs
    passes(3)
    assert load.applied == [1] and "all ran on CPU 0" in follower.changes[0].reason
    passes(60)  # the probe after 10 s wins: 2 threads stay although they still share CPU 0
    assert load.applied == [1, 2]
    assert follower.changes[1].reason.startswith("probe after 10 s on 1 thread, CPU pressure 90%")
    cost[2] = 0.090  # the pair now runs 2.25x slower than one thread did: the slowness rule sends it down
    passes(3)
    assert load.applied == [1, 2, 1]
    assert "their cost on 2 threads" in follower.changes[2].reason


def test_thread_placement_reads_this_process() -> None:
    import threading

    placed = load_following.thread_placement()
    if not placed:
        pytest.skip("no /proc/self/task here")
    assert threading.get_native_id() in placed
    ran, cpu = placed[threading.get_native_id()]
    assert ran > 0 and cpu >= 0
    before = {1: (0.0, 0), 2: (0.0, 0), 3: (0.0, 1)}
    assert load_following.stacked_cpu(before, {1: (0.5, 0), 2: (0.5, 0), 3: (0.001, 1)}, 1.0) == 0
    assert load_following.stacked_cpu(before, {1: (0.5, 0), 2: (0.5, 1), 3: (0.0, 1)}, 1.0) is None
    assert load_following.stacked_cpu(before, {1: (0.5, 0), 2: (0.0, 0), 3: (0.0, 1)}, 1.0) is None


def test_cpu_pressure_reads_psi_and_says_none_without_it(tmp_path: Path) -> None:
    psi = tmp_path / "cpu"
    psi.write_text(
        "some avg10=12.50 avg60=3.00 avg300=1.00 total=123\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    )
    assert cpu_pressure(psi) == 12.5
    assert cpu_pressure(tmp_path / "missing") is None
    psi.write_text("garbage\n")
    assert cpu_pressure(psi) is None


def test_the_caption_and_the_marks_say_the_threads_changed() -> None:
    changes = [
        {"at_s": 3.25, "passes": 120, "from": 2, "to": 1, "reason": "one-token passes took 4.0x"},
        {"at_s": 13.5, "passes": 700, "from": 1, "to": 2, "reason": "probe after 10 s on 1 thread"},
    ]
    note = changes_note(changes)
    assert note == (
        "threads followed the load (exact mode): 2 changes (2->1 at 3.2 s: one-token passes took 4.0x; "
        "1->2 at 13.5 s: probe after 10 s on 1 thread); speed figures taken under changing threads"
    )
    assert changes_note([]) is None and changes_note("x") is None and changes_note(None) is None
    run = {
        "config": {"methods": [{"name": "rt"}, {"name": "ssbd", "beta": 0.2}]},
        "environment": {"thread_changes": changes},
    }
    timing = TimingNotes.from_run(run)
    assert timing.changes_note == note
    assert set(timing.unreliable) == {"rt", "ssbd-b0.2"}
    assert all("taken under changing threads (2 changes)" in why for why in timing.unreliable.values())
    assert "tps" in timing.marks("rt")
    assert TimingNotes.from_run({"config": run["config"], "environment": {}}).unreliable == {}


# -- whole runs on the tiny model, exact mode ----------------------------------------------------------------


@pytest.fixture(scope="module")
def near_ties(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model whose greedy choices have near-ties (in fast mode its rows move with the kernels)."""
    from simul.decoding.backend import _llama
    from simul.testing.tiny_gguf import build_tiny_gguf

    support = exactness.exact_support(_llama(), 0)
    if support.patch != exactness.PATCH:
        pytest.skip(f"no exact mode here: {support.reason}")
    return build_tiny_gguf(tmp_path_factory.mktemp("ties") / "ties.gguf", seed=0, design="random")


@pytest.fixture
def flipping(monkeypatch: pytest.MonkeyPatch) -> None:
    """A follower that switches at almost every check: automatic threads are 2 on any machine, a decision
    after every 2 one-token passes, any pass counts as slow and a probe follows at once (no CPU pressure);
    and the automatic count's passes are reported 100x their time, so that every probe loses and the flips
    do not depend on which count runs the tiny model faster on this machine (on two idle cores two threads
    sometimes did: a probe won, the threads stayed, and the run switched only twice)"""
    monkeypatch.setattr(threads, "auto_threads", lambda physical, quota=None, model_bytes=None: 2)
    monkeypatch.setattr(load_following, "CHECK_SECONDS", 0.0)
    monkeypatch.setattr(load_following, "MIN_PASSES", 2)
    monkeypatch.setattr(load_following, "SLOW", 0.0)
    monkeypatch.setattr(load_following, "PROBE_SECONDS", 0.0)
    monkeypatch.setattr(load_following, "cpu_pressure", lambda: None)
    after_pass = LoadFollower.after_pass

    def top_is_slow(self: LoadFollower, rows: int, seconds: float) -> None:
        after_pass(self, rows, 100 * seconds if self.threads == self.top else seconds)

    monkeypatch.setattr(LoadFollower, "after_pass", top_is_slow)


@pytest.mark.usefixtures("flipping")
def test_outputs_are_byte_identical_with_1_2_and_switching_threads(near_ties: Path, tmp_path: Path) -> None:
    streams = tmp_path / "s.jsonl"
    write_streams(streams, make_streams(lag=2)[:3])
    got = {}
    for name, extra in (("one", ["--threads", "1"]), ("two", ["--threads", "2"]), ("auto", [])):
        out = tmp_path / name
        args = eval_args(near_ties, streams, "--exact", "--beta", "0.2", "-o", str(out), *extra)
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        got[name] = (out, json.loads((out / "run.json").read_text()))
    steps = {name: (out / "steps.jsonl").read_bytes() for name, (out, _) in got.items()}
    assert steps["one"] == steps["two"] == steps["auto"]
    assert [m["metrics"].get("bleu") for m in got["one"][1]["methods"]] == [
        m["metrics"].get("bleu") for m in got["auto"][1]["methods"]
    ]
    # fixed threads: no follower, nothing recorded; automatic: switched mid-stream, every change recorded
    assert "thread_changes" not in got["one"][1]["environment"]
    assert "thread_changes" not in got["two"][1]["environment"]
    changes = got["auto"][1]["environment"]["thread_changes"]
    assert len(changes) >= 4, changes
    assert {(c["from"], c["to"]) for c in changes} == {(2, 1), (1, 2)}
    assert all(isinstance(c["reason"], str) and c["reason"] for c in changes)
    out = got["auto"][0]
    shown = runner.invoke(app, ["show", str(out), "--stream", "s0"])
    assert shown.exit_code == 0, shown.output
    assert "threads followed the load (exact mode)" in " ".join(shown.output.split())
    scored = runner.invoke(app, ["score", str(out)])
    text = " ".join(scored.output.split())
    assert "threads followed the load (exact mode)" in text and "taken under changing threads" in text


@pytest.mark.usefixtures("flipping")
def test_fast_mode_keeps_the_threads_of_the_start(near_ties: Path, tmp_path: Path) -> None:
    streams = tmp_path / "s.jsonl"
    write_streams(streams, make_streams(lag=2)[:1])
    out = tmp_path / "fast"
    result = runner.invoke(app, eval_args(near_ties, streams, "--no-exact", "-o", str(out)))
    assert result.exit_code == 0, result.output
    assert "thread_changes" not in json.loads((out / "run.json").read_text())["environment"]

"""Evaluations taking turns in one process (simul.runs.side_by_side, `simul bench --parallel N`).

What must hold: each lane's outputs equal those of the same evaluation run alone (the turns change when
passes are made, not what they compute); only one lane decodes at a time and turns go to the lane furthest
behind; a lane's clock leaves out the time it waited; a failing lane stops the others instead of leaving
them waiting, and its error is the one reported.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.decoding.engine import EngineSettings
from simul.machine import clock
from simul.request.methods import Method
from simul.runs.evaluation import EvalRequest, Interrupted, run_evaluation
from simul.runs.side_by_side import Baton, LaneStopped, run_side_by_side
from simul.streams.format import write_streams
from tests.helpers import make_streams

runner = CliRunner()
METHODS = [Method("rt"), Method("ssbd", beta=0.2)]


def request(model: Path, streams: Path, parallel: int) -> EvalRequest:
    return EvalRequest(
        streams_path=streams,
        methods=METHODS,
        engine=EngineSettings(model=model, n_ctx=1024, threads=2, parallel=parallel),
        comet_model="none",
    )


def outputs(results: dict[str, list]) -> dict[tuple[str, str], list[list[int]]]:  # type: ignore[type-arg]
    return {(key, r.stream_id): [s.output_ids for s in r.steps] for key, rs in results.items() for r in rs}


def test_lanes_decode_exactly_as_alone_while_taking_many_turns(tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "streams.jsonl"
    # 12 streams, so that turns change hands often (a turn ends when its lane gets ahead by a stream)
    many = [dataclasses.replace(s, id=f"{s.id}-lag{lag}") for lag in (2, 3, 4) for s in make_streams(lag)]
    write_streams(streams, many)
    requests = [request(tiny_model, streams, 1), request(tiny_model, streams, 3)]
    # turn_seconds=0: a lane may hand over after any forward pass, so the turns are as many as can be
    (single, batched), lanes = run_side_by_side(requests, ["N=1", "N=3"], turn_seconds=0.0)
    assert all(lane.turns >= 3 for lane in lanes), [lane.to_json() for lane in lanes]
    alone_single = run_evaluation(requests[0])
    alone_batched = run_evaluation(requests[1])
    assert outputs(single.results) == outputs(alone_single.results)
    assert outputs(batched.results) == outputs(alone_batched.results)
    assert single.run["config"]["parallel"] == 1 and batched.run["config"]["parallel"] == 3
    for lane, outcome in zip(lanes, (single, batched), strict=True):
        # a lane's throughput counts its own turns: never more than the wall time of its turns
        assert outcome.run["throughput"]["wall_seconds"] <= lane.wall_seconds + 0.05


def test_one_lane_at_a_time_and_turns_go_to_the_lane_furthest_behind() -> None:
    plans = {0: (10, 3), 1: (4, 7)}  # lane: (streams, forward passes per stream)
    baton = Baton(["a", "b"], turn_seconds=0.0)
    share = {0: 0.0, 1: 0.0}
    running: list[int] = []
    log: list[int] = []
    problems: list[str] = []

    def lane(i: int) -> None:
        n_streams, passes = plans[i]
        baton.progress(i, 0, n_streams)
        for done in range(n_streams):
            for _ in range(passes):
                running.append(i)
                if len(running) > 1:
                    problems.append(f"lanes {running} ran at once")
                other = 1 - i
                if share[other] < 1.0 and share[i] > share[other] + 1.0 / n_streams + 1e-9:
                    problems.append(
                        f"lane {i} ran at {share[i]:.2f} while lane {other} waited at {share[other]:.2f}"
                    )
                log.append(i)
                time.sleep(0.001)
                running.remove(i)
                baton.after_pass(i)
            share[i] = (done + 1) / n_streams
            baton.progress(i, done + 1, n_streams)

    threads = [threading.Thread(target=lane, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a lane never got its turn back"
    assert problems == []
    assert log.count(0) == 30 and log.count(1) == 28
    switches = sum(1 for a, b in itertools.pairwise(log) if a != b)
    assert switches >= 8  # the lanes advanced together rather than one after the other
    assert all(lane.turns >= 4 for lane in baton.lanes)


def test_a_lane_clock_leaves_out_the_time_it_waited(monkeypatch: pytest.MonkeyPatch) -> None:
    now = {"wall": 100.0, "cpu": 10.0}
    monkeypatch.setattr(time, "perf_counter", lambda: now["wall"])
    monkeypatch.setattr(time, "process_time", lambda: now["cpu"])
    seen: list[float] = []

    def lane() -> None:  # a thread of its own: the offsets are per thread
        w0, c0 = clock.wall(), clock.cpu()
        now["wall"] += 2.0  # its own work
        now["cpu"] += 3.0
        since = clock.paused()
        now["wall"] += 5.0  # another lane's turn
        now["cpu"] += 9.0
        seen.append(clock.resumed(since))
        now["wall"] += 1.0  # its own work again
        now["cpu"] += 1.5
        seen.extend([clock.wall() - w0, clock.cpu() - c0])

    main_before = clock.wall()
    thread = threading.Thread(target=lane)
    thread.start()
    thread.join()
    assert seen == [5.0, 3.0, 4.5]
    assert clock.wall() - main_before == 8.0  # this thread did not wait: all 8 s count


def test_a_stopped_lane_stops_the_others_instead_of_leaving_them_waiting() -> None:
    baton = Baton(["a", "b"], turn_seconds=0.0)
    outcome: list[str] = []

    def waiting_lane() -> None:
        try:
            baton.progress(0, 0, 5)  # waits until lane b is ready, which it never is
            outcome.append("entered")
        except LaneStopped:
            outcome.append("stopped")

    thread = threading.Thread(target=waiting_lane)
    thread.start()
    time.sleep(0.05)
    baton.stop(1)
    thread.join(timeout=10)
    assert not thread.is_alive() and outcome == ["stopped"]
    assert baton.stopped_by == 1


def test_a_stop_in_one_lane_stops_the_other_and_both_keep_what_they_finished(
    tiny_model: Path, tmp_path: Path
) -> None:
    streams = tmp_path / "streams.jsonl"
    many = [dataclasses.replace(s, id=f"{s.id}-lag{lag}") for lag in (2, 3, 4) for s in make_streams(lag)]
    write_streams(streams, many)
    requests = [request(tiny_model, streams, 1), request(tiny_model, streams, 3)]
    for i, req in enumerate(requests):
        req.out = tmp_path / f"run{i}"

    def ctrl_c_in_lane_0(lane: int, done: int, total: int) -> None:
        if lane == 0 and done == 2:
            raise KeyboardInterrupt  # as Ctrl-C would, in the main thread

    with pytest.raises(Interrupted) as stopped:
        run_side_by_side(requests, ["N=1", "N=3"], progress=ctrl_c_in_lane_0, turn_seconds=0.0)
    assert stopped.value.outcome.streams_done == 2
    for i in (0, 1):
        run = json.loads((tmp_path / f"run{i}" / "run.json").read_text())
        assert run["status"] == "interrupted", (i, run["status"])
        kept = (tmp_path / f"run{i}" / "steps.jsonl").read_text().splitlines()
        assert len({json.loads(line)["stream"] for line in kept}) == run["streams_done"] < len(many)


def test_bench_parallel_reports_both_runs_and_their_agreement(tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams())
    out1, out2 = tmp_path / "p1", tmp_path / "p2"
    args = ["bench", "--model", str(tiny_model), "--streams", str(streams), "--no-cd"]
    result = runner.invoke(
        app, [*args, "--parallel", "2", "--out", str(out1), "--parallel-out", str(out2), "--json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    side = doc["side_by_side"]
    assert side["parallel"] == 2 and [r["parallel"] for r in side["runs"]] == [1, 2]
    assert all(r["wall_seconds"] > 0 and r["turns"] >= 1 and r["updates"] > 0 for r in side["runs"])
    # the walls in the runs are rounded to 1 ms, and the tiny model's runs last a fraction of a second
    assert side["wall_ratio"] == pytest.approx(
        side["runs"][1]["wall_seconds"] / side["runs"][0]["wall_seconds"], rel=1e-2
    )
    assert [m["method"] for m in side["agreement"]] == ["rt", "ssbd-b0.2"]
    for m in side["agreement"]:
        assert 0 <= m["same_final_outputs"] <= m["streams"] == 4
    # the two run directories are complete runs of their own, N = 1 and N = 2
    for path, n in ((out1, 1), (out2, 2)):
        run = json.loads((path / "run.json").read_text())
        assert run["status"] == "complete" and run["config"]["parallel"] == n
    assert "beside --parallel 1" in result.stderr and "final outputs identical in" in result.stderr


def test_bench_parallel_with_a_failing_lane_reports_its_error(tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams())
    taken = tmp_path / "taken"
    taken.write_text("a file, where the batched run's directory should go\n")
    args = ["bench", "--model", str(tiny_model), "--streams", str(streams), "--no-cd", "--quiet"]
    result = runner.invoke(app, [*args, "--parallel", "2", "--parallel-out", str(taken)])
    assert result.exit_code == 1, result.output
    assert f"--parallel-out {taken} exists and is not a directory" in result.output.replace("\n", "")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--parallel-out", "x"], "--parallel-out needs --parallel"),
        (["--parallel", "0"], "--parallel must be 1 or more"),
        (["--parallel", "2", "--out", "same", "--parallel-out", "same"], "must be different"),
    ],
)
def test_bench_parallel_usage_errors(tmp_path: Path, extra: list[str], message: str) -> None:
    result = runner.invoke(app, ["bench", *extra])
    assert result.exit_code == 2, result.output
    assert message in result.output

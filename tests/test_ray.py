"""`--ray` on a local two-worker Ray instance with the tiny model: equal to one process, and a worker killed
mid-run is replaced and its shard resumed (finished streams are not decoded again)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.decoding.engine import EngineSettings
from simul.request.methods import Method
from simul.runs.evaluation import EvalRequest
from simul.runs.ray_runner import RayEvent, RayOptions, run_on_ray, shard_dir
from simul.streams.format import write_streams
from tests.helpers import SENTENCES, eval_args, lag_stream
from tests.test_merge import quality, steps_without_timing

pytest.importorskip("ray", reason="Ray is not installed (pip install 'simul[ray]')")

# Starting Ray and two workers takes well over 30 s on a loaded 2-core machine.
pytestmark = pytest.mark.slow

runner = CliRunner()
N_STREAMS = 6
EXTRA = ("--beta", "0.2", "--threads", "1", "--n-ctx", "1024")


@pytest.fixture(scope="module")
def streams_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("streams") / "streams.jsonl"
    write_streams(path, [lag_stream(f"s{i}", *SENTENCES[i % len(SENTENCES)]) for i in range(N_STREAMS)])
    return path


@pytest.fixture(scope="module")
def single(tiny_model: Path, streams_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("single") / "run"
    result = runner.invoke(app, eval_args(tiny_model, streams_file, *EXTRA, "--out", str(out)))
    assert result.exit_code == 0, result.output
    return out


def assert_equal_runs(a: Path, b: Path) -> None:
    assert quality(a) == quality(b)
    for name in ("streams.jsonl", "per_stream.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert steps_without_timing(a) == steps_without_timing(b)


def test_ray_run_equals_single_process_run(
    tiny_model: Path, streams_file: Path, single: Path, tmp_path: Path
) -> None:
    out = tmp_path / "ray"
    args = [*EXTRA, "--out", str(out), "--ray", "local", "--ray-workers", "2", "--json"]
    result = runner.invoke(app, eval_args(tiny_model, streams_file, *args))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["run_dir"] == str(out) and doc["streams"] == N_STREAMS
    assert_equal_runs(single, out)
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "complete" and len(run["shards"]) >= 2
    assert all(Path(s["path"]).parent == out / "shards" for s in run["shards"])
    diff = runner.invoke(app, ["diff", str(single), str(out), "--json"])
    assert diff.exit_code == 0, diff.output
    # a finished Ray run is not started again by accident
    again = runner.invoke(app, eval_args(tiny_model, streams_file, *args))
    assert again.exit_code == 1 and "--overwrite" in again.output


def test_ray_runs_whole_talks_like_one_process(tiny_model: Path, tmp_path: Path) -> None:
    """Long-form streams (whole talks) are shards' streams like any other: the same steps as one process."""
    from tests.test_longform_decoding import SENTENCES as TALK
    from tests.test_longform_decoding import make_talk, read_steps

    talks = tmp_path / "talks.jsonl"
    write_streams(talks, [make_talk(f"talk-{i}", TALK[i:] + TALK[:i]) for i in range(3)])
    args = (*EXTRA, "--max-window", "8")
    alone = tmp_path / "alone"
    result = runner.invoke(app, eval_args(tiny_model, talks, *args, "--out", str(alone)))
    assert result.exit_code == 0, result.output
    spread = tmp_path / "ray"
    result = runner.invoke(
        app, eval_args(tiny_model, talks, *args, "--out", str(spread), "--ray", "local", "--ray-workers", "2")
    )
    assert result.exit_code == 0, result.output
    assert read_steps(spread) == read_steps(alone)
    assert quality(spread) == quality(alone)
    run = json.loads((spread / "run.json").read_text())
    assert run["config"]["longform"]["max_window"] == 8 and len(run["shards"]) >= 2


# Enough streams that a shard outlasts the driver's 0.25 s polls: with 3 streams a shard, a fast CPU finished
# the shard before the driver saw its first progress, and the kill came too late to test anything.
N_KILL_STREAMS = 60


@pytest.fixture(scope="module")
def many_streams(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("many") / "streams.jsonl"
    streams = [lag_stream(f"s{i}", *SENTENCES[i % len(SENTENCES)]) for i in range(N_KILL_STREAMS)]
    write_streams(path, streams)
    return path


@pytest.fixture(scope="module")
def many_single(tiny_model: Path, many_streams: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("many-single") / "run"
    result = runner.invoke(app, eval_args(tiny_model, many_streams, *EXTRA, "--out", str(out)))
    assert result.exit_code == 0, result.output
    return out


def test_killed_worker_is_replaced_and_its_shard_resumed(
    tiny_model: Path, many_streams: Path, many_single: Path, tmp_path: Path
) -> None:
    streams_file, single = many_streams, many_single
    out = tmp_path / "ray"
    request = EvalRequest(
        streams_path=streams_file,
        methods=[Method("rt"), Method("ssbd", beta=0.2)],
        engine=EngineSettings(model=tiny_model, n_ctx=1024, threads=1),
        out=out,
        comet_model="none",
    )
    events: list[RayEvent] = []
    running: dict[int, int] = {}  # shard index -> pid of its worker
    killed: list[tuple[int, int]] = []  # (shard index, streams it had finished)
    seen: list[tuple[int, int]] = []

    def on_event(event: RayEvent) -> None:
        events.append(event)
        if event.kind == "started" and event.shard is not None and event.pid is not None:
            running[event.shard.index] = event.pid
        if (
            event.kind == "progress"
            and event.shard is not None
            and not killed
            and 0 < event.done < event.total
        ):
            killed.append((event.shard.index, event.done))
            os.kill(running[event.shard.index], signal.SIGKILL)

    # two shards of 30 streams each: the kill comes after the first progress the driver sees of one of them
    options = RayOptions(workers=2, shards=2, num_cpus=1, retries=2)
    merged = run_on_ray(request, options, progress=lambda d, t: seen.append((d, t)), on_event=on_event)

    assert killed, "no worker was killed: no shard reported progress mid-way"
    index, finished_before = killed[0]
    retries = [e for e in events if e.kind == "retry"]
    assert [e.shard.index for e in retries if e.shard is not None] == [index]
    assert sum(1 for e in events if e.kind == "worker") == 3  # two, and one replacement
    # the resumed shard starts from the streams it had finished: they are not decoded again
    after = [e for e in events[events.index(retries[0]) :] if e.kind == "progress" and e.shard is not None]
    first_after = next(e for e in after if e.shard is not None and e.shard.index == index)
    assert first_after.done >= finished_before
    shard_run = json.loads((shard_dir(out, retries[0].shard) / "run.json").read_text())  # type: ignore[arg-type]
    assert shard_run["status"] == "complete"
    assert seen[-1] == (N_KILL_STREAMS, N_KILL_STREAMS) and all(d <= t for d, t in seen)
    assert merged.outcome.complete and merged.outcome.streams_done == N_KILL_STREAMS
    assert_equal_runs(single, out)


def test_ray_refuses_bad_options(tiny_model: Path, streams_file: Path) -> None:
    bad: Any = runner.invoke(app, eval_args(tiny_model, streams_file, "--ray", "local", "--ray-workers", "0"))
    assert bad.exit_code == 2 and "--ray-workers" in bad.output
    bad = runner.invoke(
        app, eval_args(tiny_model, streams_file, "--ray", "local", "--ray-gpus", "4", "--limit", "1")
    )
    assert bad.exit_code == 1 and "GPU" in bad.output

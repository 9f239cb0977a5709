"""Run the shards of an evaluation as Ray actors and merge them (`simul eval/sweep --ray [ADDRESS]`).

Each worker is a Ray actor that loads the model once and then decodes whole shards (``--shard K/N`` runs,
simul/runs/shard.py) into ``OUT/shards/K-of-N/``, an ordinary run directory each. A worker that dies (its
process killed, its node lost) is replaced and its shard is resumed from its run directory, so finished
streams are not decoded again. When every shard is complete, they are merged into ``OUT``
(simul/runs/merge.py) and COMET is computed there, once.

The workers write to ``OUT`` themselves, so on a cluster ``OUT`` must be on a file system every node sees (as
on a Slurm cluster); each worker checks that it sees it before decoding. ``--model`` must likewise be a path
every node can read (the embedded default model is assembled on each node from the installed package).

Ray is imported only here and only when asked for: `pip install 'simul[ray]'`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import shutil
import sys
import tempfile
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError, UsageError
from simul.decoding.methods.plugins import check_plugins
from simul.runs.directory import RUN_FILE, STATUS_COMPLETE
from simul.runs.evaluation import EvalRequest, load_stream_set, run_evaluation
from simul.runs.merge import MergeOutcome, merge_shards
from simul.runs.shard import Shard, plan

SHARDS_DIR = "shards"
MARKER = ".simul-ray-out"
LOCAL = "local"


@dataclass(frozen=True)
class RayOptions:
    """Where and how the shards run.

    ``address``: ``local`` starts a private Ray instance on this machine (stopped at the end); anything
    else is passed to ``ray.init(address=...)`` (``auto``, ``host:6379``, ``ray://host:10001``).
    """

    address: str = LOCAL
    workers: int = 2
    shards: int | None = None  # default: 2 per worker, so that a slow shard does not hold the run up
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    retries: int = 2  # a shard whose worker died is resumed on a fresh worker this many times
    object_store_mb: int = 128  # for a local instance; the workers exchange only small messages

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise UsageError(f"--ray-workers must be at least 1, got {self.workers}")
        if self.shards is not None and self.shards < 1:
            raise UsageError(f"--ray-shards must be at least 1, got {self.shards}")
        if self.num_cpus <= 0 or self.num_gpus < 0:
            raise UsageError("--ray-cpus must be above 0 and --ray-gpus at least 0")
        if self.retries < 0:
            raise UsageError(f"--ray-retries must be 0 or more, got {self.retries}")

    @property
    def shard_count(self) -> int:
        return self.shards if self.shards is not None else 2 * self.workers


@dataclass(frozen=True)
class RayEvent:
    """What the driver saw: ``kind`` is worker (a worker started, ``pid`` set), started, progress, retry or
    done; ``shard`` is set for all but worker."""

    kind: str
    shard: Shard | None = None
    pid: int | None = None
    done: int = 0
    total: int = 0
    message: str = ""


Progress = Callable[[int, int], None]
EventHook = Callable[[RayEvent], None]


class ShardWorker:
    """One Ray worker: the model loaded once, then any number of shards decoded with it."""

    def __init__(self, request: EvalRequest, out: str) -> None:
        from simul.decoding.engine import Engine

        if not (Path(out) / MARKER).exists():
            import socket

            raise SimulError(
                f"the Ray worker on {socket.gethostname()} cannot see {out}: --out must be on a file system "
                "that every node of the cluster shares"
            )
        self.engine = Engine(request.engine)

    def pid(self) -> int:
        return os.getpid()

    def run_shard(self, request: EvalRequest, queue: Any) -> int:
        assert request.shard is not None
        index = request.shard.index

        def report(done: int, total: int) -> None:
            queue.put((index, done, total))

        outcome = run_evaluation(request, engine=self.engine, progress=report)
        return outcome.streams_done

    def close(self) -> None:
        self.engine.close()


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise SimulError("--ray needs Ray: pip install 'simul[ray]'") from None
    return ray


def shard_dir(out: Path, shard: Shard) -> Path:
    return out / SHARDS_DIR / f"{shard.index}-of-{shard.count}"


def _status(path: Path) -> str | None:
    import json

    try:
        return str(json.loads((path / RUN_FILE).read_text(encoding="utf-8")).get("status"))
    except (OSError, ValueError):
        return None


def _prepare_out(request: EvalRequest) -> None:
    """Refuse to clobber a finished run or to restart an unfinished one silently; clear it on --overwrite."""
    assert request.out is not None
    out = request.out
    if out.exists() and not out.is_dir():
        raise SimulError(f"--out {out} exists and is not a directory")
    has_run = (out / RUN_FILE).exists()
    has_shards = (out / SHARDS_DIR).is_dir() and any((out / SHARDS_DIR).iterdir())
    if request.overwrite:
        if has_shards:
            shutil.rmtree(out / SHARDS_DIR)
        (out / RUN_FILE).unlink(missing_ok=True)
    elif has_run and not has_shards:
        raise SimulError(
            f"{out} holds a run that was not made with --ray; pass --overwrite to replace it, "
            "or choose another --out"
        )
    elif request.resume:
        if has_run and _status(out) == STATUS_COMPLETE:
            raise SimulError(
                f"{out} is already complete; nothing to resume (pass --overwrite to run it again)"
            )
    elif has_run or has_shards:
        raise SimulError(
            f"{out} already holds a run; pass --resume to continue it, --overwrite to replace it, "
            "or choose another --out"
        )
    (out / SHARDS_DIR).mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("written by simul for its Ray workers\n", encoding="utf-8")


def run_on_ray(
    request: EvalRequest,
    options: RayOptions,
    progress: Progress | None = None,
    on_event: EventHook | None = None,
    on_comet_loading: Callable[[], None] | None = None,
) -> MergeOutcome:
    """Decode every shard on Ray workers, then merge them into ``request.out``."""
    if request.shard is not None:
        raise UsageError("--ray runs every shard itself; it cannot be combined with --shard")
    # a method from outside simul is refused here rather than on every worker; the workers import it by the
    # module path its Method holds (the entry point resolved here), so it must be importable on every node
    check_plugins(request.methods)
    streams = load_stream_set(request.streams_path, request.limit)
    shards = plan(streams, min(options.shard_count, len(streams)))
    temporary = request.out is None
    if temporary:
        if options.address != LOCAL:
            raise UsageError("--ray with a cluster address needs --out DIR on a file system the nodes share")
        if request.resume:
            raise UsageError("--resume needs --out DIR (the run directory to continue)")
        request = dataclasses.replace(request, out=Path(tempfile.mkdtemp(prefix="simul-ray-")))
    assert request.out is not None
    out = request.out
    ray = _import_ray()
    try:
        _prepare_out(request)
        sizes = {s.index: sum(1 for st in streams if s.owns(st.id)) for s in shards}
        # Ray prints the errors of its workers (a worker that died) on stdout; stdout is for --json.
        with contextlib.redirect_stdout(sys.stderr):
            started_here = _start(ray, options)
            try:
                _run_shards(ray, request, options, shards, sizes, progress, on_event)
            finally:
                if started_here:
                    ray.shutdown()
        dirs = [shard_dir(out, s) for s in shards]
        merged = merge_shards(
            dirs,
            out,
            overwrite=True,
            comet_model=request.comet_model,
            comet_batch_size=request.comet_batch_size,
            require_comet=request.require_comet,
            on_comet_loading=on_comet_loading,
        )
        if temporary:
            merged.outcome.run_dir = None
        return merged
    finally:
        if temporary:
            shutil.rmtree(out, ignore_errors=True)


def _start(ray: Any, options: RayOptions) -> bool:
    """Connect to Ray; True when a local instance was started here (and must be stopped)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if ray.is_initialized():
        return False
    if options.address == LOCAL:
        ray.init(
            num_cpus=max(1, math.ceil(options.workers * options.num_cpus)),
            num_gpus=None if options.num_gpus > 0 else 0,  # detected when asked for
            object_store_memory=options.object_store_mb * 1024 * 1024,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="ERROR",
        )
        return True
    try:
        ray.init(address=options.address, log_to_driver=False, logging_level="WARNING")
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise SimulError(f"cannot connect to the Ray cluster at {options.address!r}: {exc}") from None
    return True


def _run_shards(
    ray: Any,
    request: EvalRequest,
    options: RayOptions,
    shards: list[Shard],
    sizes: dict[int, int],
    progress: Progress | None,
    on_event: EventHook | None,
) -> None:
    """Keep ``options.workers`` actors busy with the shards that are not complete yet; replace dead ones."""
    from ray.exceptions import RayActorError, RayTaskError
    from ray.util.queue import Empty, Queue

    assert request.out is not None
    out = request.out
    emit = on_event or (lambda event: None)
    complete = {s.index for s in shards if _status(shard_dir(out, s)) == STATUS_COMPLETE}
    done = {s.index: sizes[s.index] if s.index in complete else 0 for s in shards}
    pending = deque(s for s in shards if s.index not in complete)
    total = sum(sizes.values())

    def show() -> None:
        if progress:
            progress(sum(done.values()), total)

    show()
    if not pending:
        return
    _check_resources(ray, options)
    threads = request.engine.threads or max(1, int(options.num_cpus))
    worker_request = dataclasses.replace(request, engine=dataclasses.replace(request.engine, threads=threads))
    remote_cls = ray.remote(ShardWorker).options(
        num_cpus=options.num_cpus, num_gpus=options.num_gpus, max_restarts=0
    )
    queue = Queue(actor_options={"num_cpus": 0})
    attempts = {s.index: 0 for s in shards}
    idle: list[Any] = []
    running: dict[Any, tuple[Any, Shard]] = {}
    pids: dict[int, int] = {}  # id(actor) -> its process id

    def new_worker() -> Any:
        actor = remote_cls.remote(worker_request, str(out))
        try:
            pid = ray.get(actor.pid.remote())
        except RayActorError as exc:
            raise SimulError(f"a Ray worker could not start: {_cause(exc)}") from None
        pids[id(actor)] = pid
        emit(RayEvent("worker", pid=pid))
        return actor

    def submit(actor: Any, shard: Shard) -> None:
        shard_request = dataclasses.replace(
            worker_request,
            shard=shard,
            out=shard_dir(out, shard),
            resume=True,  # a fresh directory is created; a partial one (a dead worker's) is continued
            overwrite=False,
            comet_model="none",  # computed once, at the merge
            require_comet=False,
        )
        running[actor.run_shard.remote(shard_request, queue)] = (actor, shard)
        emit(RayEvent("started", shard=shard, pid=pids.get(id(actor)), total=sizes[shard.index]))

    def drain() -> None:
        try:
            items = queue.get_nowait_batch(queue.qsize())
        except Empty:
            return
        for index, d, t in items:
            done[index] = d
            emit(RayEvent("progress", shard=Shard(index, shards[0].count), done=d, total=t))

    try:
        for _ in range(min(options.workers, len(pending))):
            idle.append(new_worker())
        while pending and idle:
            submit(idle.pop(), pending.popleft())
        while running:
            ready, _ = ray.wait(list(running), num_returns=1, timeout=0.25)
            drain()
            for ref in ready:
                actor, shard = running.pop(ref)
                try:
                    ray.get(ref)
                except RayActorError as exc:
                    attempts[shard.index] += 1
                    reason = _cause(exc)
                    if attempts[shard.index] > options.retries:
                        raise SimulError(
                            f"shard {shard.label} failed {attempts[shard.index]} times (last: {reason}); its "
                            f"finished streams are kept in {shard_dir(out, shard)}: run the same command "
                            "with --resume to continue"
                        ) from None
                    emit(RayEvent("retry", shard=shard, message=reason))
                    pending.appendleft(shard)
                    actor = new_worker()
                except RayTaskError as exc:
                    cause = exc.cause if isinstance(getattr(exc, "cause", None), BaseException) else exc
                    if isinstance(cause, SimulError):
                        raise type(cause)(f"shard {shard.label}: {cause}") from None
                    raise SimulError(f"shard {shard.label} failed on its Ray worker: {cause}") from None
                else:
                    done[shard.index] = sizes[shard.index]
                    emit(RayEvent("done", shard=shard, done=sizes[shard.index], total=sizes[shard.index]))
                idle.append(actor)
                while pending and idle:
                    submit(idle.pop(), pending.popleft())
            show()
    finally:
        for actor in idle + [a for a, _ in running.values()]:
            ray.kill(actor)
        ray.kill(queue.actor)


def _check_resources(ray: Any, options: RayOptions) -> None:
    """A worker that can never be placed would wait forever: say so instead."""
    have = ray.cluster_resources()
    for name, need, flag in (
        ("CPU", options.num_cpus, "--ray-cpus"),
        ("GPU", options.num_gpus, "--ray-gpus"),
    ):
        if need > 0 and float(have.get(name, 0.0)) < need:
            raise SimulError(
                f"each Ray worker asks for {need:g} {name} ({flag}) but the cluster has "
                f"{float(have.get(name, 0.0)):g}; lower {flag} or add nodes"
            )


def _cause(exc: BaseException) -> str:
    """The line of a Ray error that says what went wrong (a SimulError raised in the worker, if any)."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if "SimulError: " in line:
            return line.split("SimulError: ", 1)[1]
    return lines[0] if lines else type(exc).__name__

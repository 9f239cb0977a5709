"""How much CPU the process got while each method decoded, to tell when its timings are unreliable.

Per method, summed over its decode calls (methods are interleaved stream by stream, so the sums cover the
whole run):

    wall       wall-clock seconds inside the calls
    cpu        CPU seconds of the whole process (all threads, ``time.process_time``) in the calls
    runqueue   seconds the process's threads were runnable but waiting for a CPU: the second field of
               Linux's /proc/self/task/*/schedstat (absent where the kernel does not keep it)
    load1      the 1-minute load average at the start and end of each call (mean and maximum)

(wall and cpu through simul.machine.clock, which leaves out the turns of other evaluations of the same process
when several take turns, as in `simul bench --parallel`; the run queue wait stays the whole process's)

and from them

    cpu_per_wall = cpu / wall                 cores the process used on average
    cpu_share    = cpu / (cpu + runqueue)     the share of the CPU time it asked for that it got

Speed figures (TPS, speedup, c, p50/p95, ...) measured while the process got clearly less CPU than it asked
for measure the machine's other jobs as much as the method, so they are marked *unreliable* when

    cpu_share < MIN_SHARE                     (when the run queue wait is known), otherwise
    cpu_per_wall < MIN_SHARE * threads

The run queue test comes first because CPU/wall also depends on the OpenMP wait policy: with the passive
policy (simul's choice when a core is busy) threads sleep at barriers and during the single-threaded Python
part of an update, so a process may use fewer cores than it has threads; a thread that sleeps asks for
nothing, while one waiting in the run queue is refused. CPU/wall is kept in the record either way. A method
is also marked when its forward passes cost more than calibrated (simul.machine.calibration, `simul bench`).

This module measures and records; which figures of a report get the mark, and what its caption says, is
simul.reports.timing_notes, which reads the record back from run.json.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simul.machine import clock

MIN_SHARE = 0.8
TASKS = Path("/proc/self/task")


def schedstat_seconds(tasks: Path = TASKS) -> dict[int, tuple[float, float]] | None:
    """Per thread of this process: (seconds it ran on a CPU, seconds it was runnable but waited for one),
    the first two fields of Linux's ``/proc/self/task/*/schedstat``; None when unknown."""
    out: dict[int, tuple[float, float]] = {}
    try:
        names = os.listdir(tasks)
    except OSError:
        return None
    for name in names:
        try:
            fields = (tasks / name / "schedstat").read_text().split()
        except OSError:
            continue  # the thread has just exited
        if len(fields) < 2:
            return None
        out[int(name)] = (int(fields[0]) / 1e9, int(fields[1]) / 1e9)
    return out if out else None


def runqueue_seconds(tasks: Path = TASKS) -> dict[int, float] | None:
    """Per thread of this process: seconds spent runnable but waiting for a CPU; None when unknown."""
    stats = schedstat_seconds(tasks)
    return None if stats is None else {tid: waited for tid, (_, waited) in stats.items()}


def load1() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - not available on this platform
        return None


@dataclass(frozen=True)
class Snapshot:
    wall: float
    cpu: float
    runqueue: dict[int, float] | None
    load1: float | None


@dataclass
class Usage:
    """Sums over a method's decode calls."""

    wall: float = 0.0
    cpu: float = 0.0
    runqueue: float | None = 0.0  # None once any call could not measure it
    load_sum: float = 0.0
    load_max: float | None = None
    load_samples: int = 0
    calls: int = 0

    def add(self, start: Snapshot, end: Snapshot) -> None:
        self.calls += 1
        self.wall += end.wall - start.wall
        self.cpu += end.cpu - start.cpu
        if self.runqueue is not None and start.runqueue is not None and end.runqueue is not None:
            # Threads born during the call count from zero; threads that ended take their wait with them.
            self.runqueue += sum(
                max(0.0, wait - start.runqueue.get(tid, 0.0)) for tid, wait in end.runqueue.items()
            )
        else:
            self.runqueue = None
        for load in (start.load1, end.load1):
            if load is not None:
                self.load_sum += load
                self.load_samples += 1
                self.load_max = load if self.load_max is None else max(self.load_max, load)

    def to_json(self, threads: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "calls": self.calls,
            "wall_seconds": round(self.wall, 3),
            "cpu_seconds": round(self.cpu, 3),
            "runqueue_seconds": None if self.runqueue is None else round(self.runqueue, 3),
            "load1_mean": round(self.load_sum / self.load_samples, 2) if self.load_samples else None,
            "load1_max": None if self.load_max is None else round(self.load_max, 2),
        }
        out.update(judge(self.wall, self.cpu, self.runqueue, threads).to_json())
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Usage:
        """The sums back from run.json (to continue them when a run is resumed)."""
        samples = 2 * int(data.get("calls", 0))
        mean = data.get("load1_mean")
        runqueue = data.get("runqueue_seconds")
        return cls(
            wall=float(data.get("wall_seconds", 0.0)),
            cpu=float(data.get("cpu_seconds", 0.0)),
            runqueue=None if runqueue is None else float(runqueue),
            load_sum=float(mean) * samples if mean is not None else 0.0,
            load_max=data.get("load1_max"),
            load_samples=samples if mean is not None else 0,
            calls=int(data.get("calls", 0)),
        )


@dataclass(frozen=True)
class Verdict:
    reliable: bool
    basis: str  # "runqueue", "cpu_per_wall" or "none" (nothing measured)
    cpu_per_wall: float | None
    cpu_share: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "reliable": self.reliable,
            "basis": self.basis,
            "cpu_per_wall": None if self.cpu_per_wall is None else round(self.cpu_per_wall, 3),
            "cpu_share": None if self.cpu_share is None else round(self.cpu_share, 3),
        }


def judge(wall: float, cpu: float, runqueue: float | None, threads: int) -> Verdict:
    """The rule of this module's docstring."""
    per_wall = cpu / wall if wall > 0 else None
    share = cpu / (cpu + runqueue) if runqueue is not None and cpu + runqueue > 0 else None
    if share is not None:
        return Verdict(share >= MIN_SHARE, "runqueue", per_wall, share)
    if per_wall is not None:
        return Verdict(per_wall >= MIN_SHARE * threads, "cpu_per_wall", per_wall, None)
    return Verdict(True, "none", None, None)


class CpuMeter:
    """Accumulates :class:`Usage` per method key around each decode call."""

    def __init__(
        self,
        threads: int,
        runqueue: Callable[[], dict[int, float] | None] = runqueue_seconds,
        loadavg: Callable[[], float | None] = load1,
    ) -> None:
        self.threads = threads
        self.usage: dict[str, Usage] = {}
        self._runqueue = runqueue
        self._loadavg = loadavg

    def snapshot(self) -> Snapshot:
        return Snapshot(clock.wall(), clock.cpu(), self._runqueue(), self._loadavg())

    @contextmanager
    def measure(self, key: str) -> Iterator[None]:
        start = self.snapshot()
        try:
            yield
        finally:
            self.usage.setdefault(key, Usage()).add(start, self.snapshot())

    def resume(self, recorded: Mapping[str, Any] | None) -> None:
        """Continue the sums a previous process recorded for the same run."""
        for key, data in ((recorded or {}).get("methods") or {}).items():
            self.usage[key] = Usage.from_json(data)

    def to_json(self) -> dict[str, Any]:
        return {
            "threads": self.threads,
            "min_share": MIN_SHARE,
            "methods": {key: usage.to_json(self.threads) for key, usage in sorted(self.usage.items())},
        }

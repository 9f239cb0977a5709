"""The clocks that decoding timings are read from: wall and CPU seconds, less the time a lane was paused.

Normally these are ``time.perf_counter`` and ``time.process_time``. When several evaluations of one process
take turns (simul.runs.side_by_side: `simul bench --parallel N` runs N = 1 and N = N in alternation, so that
both are measured under the same machine conditions), each runs in a thread of its own, a *lane*, and
while a lane waits for its turn the others run. The time it waited, and the CPU time the process spent
meanwhile, belong to the others: they are subtracted here, per thread, so that a lane's per-update
timings, throughput and CPU/wall ratio count its own turns alone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_lane = threading.local()


def wall() -> float:
    """Wall-clock seconds (``time.perf_counter``) less this thread's paused time."""
    return time.perf_counter() - getattr(_lane, "paused_wall", 0.0)


def cpu() -> float:
    """Process CPU seconds (``time.process_time``) less what the process spent while this thread waited."""
    return time.process_time() - getattr(_lane, "paused_cpu", 0.0)


def paused() -> tuple[float, float]:
    """The readings to hand to :func:`resumed` when this thread stops to wait for its turn."""
    return time.perf_counter(), time.process_time()


def resumed(since: tuple[float, float]) -> float:
    """Count the wait that began at ``since`` (from :func:`paused`) as paused; returns its wall seconds."""
    wall_s = time.perf_counter() - since[0]
    _lane.paused_wall = getattr(_lane, "paused_wall", 0.0) + wall_s
    _lane.paused_cpu = getattr(_lane, "paused_cpu", 0.0) + time.process_time() - since[1]
    return wall_s


@contextmanager
def untimed() -> Iterator[None]:
    """Leave what runs inside out of this thread's clocks, as if the thread had waited (simul bench's
    calibration, which is no part of a lane's decoding). Nothing inside may pause the thread itself."""
    since = paused()
    try:
        yield
    finally:
        resumed(since)

"""Several evaluations in one process, taking turns, so that their speeds are measured side by side.

`simul bench --parallel N` compares decoding one stream at a time with decoding N at once. Run one after the
other, the two would meet different machines: on a shared host the cost of a forward pass drifts by tens of
percent within an hour (other tenants' memory traffic, frequency), which is more than the difference being
measured. Here each evaluation runs in a thread of its own, a *lane*, with its own model context, and the
lanes take turns: only one decodes at a time, a turn lasts at least ``turn_seconds`` and ends after a forward
pass, and the next turn goes to the lane that is furthest behind (the smallest share of its streams done).
So the lanes advance through their streams together and finish together, and whatever the machine does meets
them at the same stage of their work. Each lane's timings, throughput and CPU/wall count its own turns alone
(see simul.machine.clock); a lane's outputs do not depend on the turns (each has its own context, and
nothing it computes is shared).

Lanes start their turns once all of them are loaded and ready to decode (model loading and warm-up are not
measured), and a lane that has decoded everything waits for the others before it scores, so that no scoring
runs beside another lane's decoding. A stop (Ctrl-C) or an error in one lane stops the others at their next
turn with :class:`LaneStopped`, a KeyboardInterrupt, so each keeps what it finished, as an interrupted
evaluation does.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from simul.decoding.backend.llama import set_pass_hook
from simul.machine import clock
from simul.runs.evaluation import EvalOutcome, EvalRequest, run_evaluation

TURN_SECONDS = 1.0
_STARTING, _WAITING, _RUNNING, _DONE = "starting", "waiting", "running", "done"


class LaneStopped(KeyboardInterrupt):
    """Another lane was stopped or failed; this one stops at its next turn, keeping what it finished."""


@dataclass
class LaneRecord:
    """What one lane's turns added up to."""

    name: str
    turns: int = 0
    wall_seconds: float = 0.0  # wall time of its turns, from its first turn to its last
    cpu_seconds: float = 0.0  # CPU time of the process during its turns
    load1: list[float] = field(default_factory=list)  # 1-minute load average at the start of each turn

    def to_json(self) -> dict[str, Any]:
        wall = self.wall_seconds
        return {
            "name": self.name,
            "turns": self.turns,
            "wall_seconds": round(wall, 3),
            "cpu_seconds": round(self.cpu_seconds, 3),
            "cpu_per_wall": round(self.cpu_seconds / wall, 3) if wall > 0 else None,
            "load1_mean": round(sum(self.load1) / len(self.load1), 2) if self.load1 else None,
            "load1_max": round(max(self.load1), 2) if self.load1 else None,
        }


def _load1() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


class Baton:
    """Turns among lanes: one runs at a time; see the module docstring for the rule."""

    def __init__(self, names: Sequence[str], turn_seconds: float = TURN_SECONDS) -> None:
        self.lanes = [LaneRecord(name) for name in names]
        self.turn_seconds = turn_seconds
        self._cond = threading.Condition()
        self._state = [_STARTING] * len(names)
        self._done_share = [0.0] * len(names)
        self._holder: int | None = None
        self._turn_start = 0.0  # perf_counter at the start of the holder's turn
        self._turn_clock = (0.0, 0.0)  # the holder's clock.wall() and clock.cpu() then
        self._stopped = False
        self.stopped_by: int | None = None  # the lane whose stop or failure stopped the others

    # -- called by the lanes --------------------------------------------------------------------------------

    def progress(self, lane: int, done: int, total: int) -> None:
        """A lane's progress (streams done of total). Its first call enters the turns (waiting until every
        lane is ready and its turn comes); the call that reports all done leaves them."""
        with self._cond:
            self._done_share[lane] = done / total if total else 1.0
            state = self._state[lane]
        if state == _STARTING:
            self._enter(lane)
        if total == 0 or done >= total:
            self.leave(lane)

    def after_pass(self, lane: int) -> None:
        """Called after each forward pass of a lane: hand over when its turn is over and another lane is
        further behind."""
        if self._holder != lane or time.perf_counter() - self._turn_start < self.turn_seconds:
            return
        with self._cond:
            self._check_stopped()
            nxt = self._next(exclude=None)
            if nxt is None or nxt == lane:
                return
            self._end_turn(lane)
            self._state[lane] = _WAITING
            self._give(nxt)
            self._wait_for_turn(lane)

    def leave(self, lane: int) -> None:
        """The lane has decoded everything (or stopped): hand over, then wait until every lane has."""
        with self._cond:
            if self._state[lane] == _DONE:
                return
            if self._holder == lane:
                self._end_turn(lane)
                self._holder = None
            self._state[lane] = _DONE
            nxt = self._next(exclude=lane)
            if self._holder is None and nxt is not None:
                self._give(nxt)
            self._cond.notify_all()
            since = clock.paused()
            while not self._stopped and any(s != _DONE for s in self._state):
                self._cond.wait(timeout=1.0)
            clock.resumed(since)

    def stop(self, lane: int) -> None:
        """Stop every other lane at its next turn (this one stopped or failed)."""
        with self._cond:
            if not self._stopped:
                self._stopped = True
                self.stopped_by = lane
            if self._holder == lane:
                self._end_turn(lane)
                self._holder = None
            self._state[lane] = _DONE
            self._cond.notify_all()

    # -- inside the lock ------------------------------------------------------------------------------------

    def _enter(self, lane: int) -> None:
        with self._cond:
            self._state[lane] = _WAITING
            if all(s != _STARTING for s in self._state) and self._holder is None:
                nxt = self._next(exclude=None)
                if nxt is not None:
                    self._give(nxt)
            self._cond.notify_all()
            self._wait_for_turn(lane)

    def _next(self, exclude: int | None) -> int | None:
        """The lane to run next: of those waiting or running (not ``exclude``), the furthest behind; none
        while some lane is still getting ready."""
        if any(s == _STARTING for s in self._state):
            return None
        candidates = [i for i, s in enumerate(self._state) if s in (_WAITING, _RUNNING) and i != exclude]
        if not candidates:
            return None
        return min(candidates, key=lambda i: (self._done_share[i], i))

    def _give(self, lane: int) -> None:
        self._holder = lane
        self._cond.notify_all()

    def _wait_for_turn(self, lane: int) -> None:
        since = clock.paused()
        while self._holder != lane:
            self._check_stopped()
            self._cond.wait(timeout=1.0)
        clock.resumed(since)
        self._check_stopped()
        self._state[lane] = _RUNNING
        record = self.lanes[lane]
        record.turns += 1
        load = _load1()
        if load is not None:
            record.load1.append(load)
        self._turn_start = time.perf_counter()
        self._turn_clock = (clock.wall(), clock.cpu())

    def _end_turn(self, lane: int) -> None:
        record = self.lanes[lane]
        record.wall_seconds += clock.wall() - self._turn_clock[0]
        record.cpu_seconds += clock.cpu() - self._turn_clock[1]

    def _check_stopped(self) -> None:
        if self._stopped:
            raise LaneStopped()


def run_side_by_side(
    requests: Sequence[EvalRequest],
    names: Sequence[str],
    progress: Callable[[int, int, int], None] | None = None,
    turn_seconds: float = TURN_SECONDS,
) -> tuple[list[EvalOutcome], list[LaneRecord]]:
    """Run the evaluations in turns (lane 0 in this thread, so that Ctrl-C reaches it); returns their
    outcomes and what each lane's turns added up to. ``progress(lane, done, total)`` reports streams done.

    The first failure is raised once every lane has stopped (a stop in lane 0 as the KeyboardInterrupt
    it is, with the evaluation's partial outcome)."""
    baton = Baton(names, turn_seconds)
    outcomes: list[EvalOutcome | None] = [None] * len(requests)
    errors: list[BaseException | None] = [None] * len(requests)

    def lane_main(lane: int) -> None:
        def on_progress(done: int, total: int) -> None:
            if progress is not None:
                progress(lane, done, total)
            baton.progress(lane, done, total)

        set_pass_hook(lambda: baton.after_pass(lane))
        try:
            outcomes[lane] = run_evaluation(requests[lane], progress=on_progress)
        except BaseException as exc:  # every failure must stop the other lanes
            errors[lane] = exc
            baton.stop(lane)
        finally:
            set_pass_hook(None)
            baton.leave(lane)

    threads = [
        threading.Thread(target=lane_main, args=(lane,), name=f"simul-lane-{lane}", daemon=True)
        for lane in range(1, len(requests))
    ]
    for thread in threads:
        thread.start()
    try:
        lane_main(0)
    except BaseException:  # a stop while lane 0 waited for the others to finish: stop them too
        baton.stop(0)
        raise
    finally:
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=1.0)
    if baton.stopped_by is not None:
        error = errors[baton.stopped_by]
        assert error is not None
        raise error
    return [o for o in outcomes if o is not None], baton.lanes

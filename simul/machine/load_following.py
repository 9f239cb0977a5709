"""Threads that follow the load during a run, in exact mode only.

Why: next to busy processes llama.cpp's OpenMP threads fall into phases in which every pass costs many times
the CPU it costs alone (docs/results.md, "Busy machines": on 2 cores beside two busy loops, two threads ran
the same tiny-model passes 5x slower than one thread). The thread count chosen at start
(simul.machine.threads) does not see a load that starts later, and it ignores the load on purpose, because
in fast mode the thread count can change outputs. In exact mode it cannot: every row's logits are those of a
one-token pass whatever the threads (simul.decoding.backend.exactness), so the count can follow the load
between two forward passes (``llama_set_n_threads``) without moving one output byte;
tests/test_load_following.py decodes the same streams with 1 thread, 2 threads and a switch between them
mid-stream and compares every output.

The rule, checked after a forward pass once CHECK_SECONDS have passed since the last check, on the one-token
passes since then (RT's passes, a draft model's, the first pass of every SSBD update: the pass whose cost
calibration measured):

* on ``top`` threads (the automatic count: cores, affinity, cgroup quota; simul.machine.threads), when
  every thread of the process that was busy since the last check last ran on one and the same CPU, in
  STACKED_CHECKS checks in a row, it goes down to 1 thread. This is the slow phases' cause (measured in
  docs/results.md "Busy machines"): where no CPU is idle, a woken thread is placed on its waker's CPU, so
  llama.cpp's threads end up sharing one CPU beside the busy processes; then every barrier of a pass
  (hundreds per token) is a context switch between them, or a spin of the waiting thread on the CPU that
  the thread it waits for needs. Two threads on one CPU cannot beat one thread there.
* on ``top`` threads, also: the mean pass against the calibrated cost of a pass on ``top`` threads
  (simul.machine.calibration, before the run; without calibration, the fastest window seen so far on that
  count): more than SLOW times it, and slower than a one-thread pass is known to be, in SLOW_WINDOWS checks
  in a row, goes down to 1 thread.
  Linux's CPU pressure (``/proc/pressure/cpu``, the share of the last 10 s in which a runnable task waited
  for a CPU) is recorded with the reason, and a pressure above PRESSURE_HIGH lowers the bar to
  PRESSURE_SLOW.
* on 1 thread, every ``probe`` seconds (PROBE_SECONDS, doubled after each probe that failed, up to
  MAX_PROBE_SECONDS), ``top`` threads are tried again, whatever the CPU pressure; the probe's first window
  decides against the last window on 1 thread, so both were measured under the same load: no faster, and
  it goes back. A probe that won means that under this load ``top`` threads beat one even where they share
  a CPU (on gemma beside two busy loops: a stacked pair gets a larger share of the CPUs than one thread, and
  costs only 1.3x one thread's CPU per pass), so the stacking rule rests until the next change; the
  slowness rule stays, against the last window on 1 thread.

The wait policy is OpenMP's, read once when llama.cpp loads (simul.machine.openmp): it cannot follow the
load during a run and stays as chosen at start. Every change is recorded (seconds since the model was loaded,
pass number, from, to, reason) in run.json's ``environment.thread_changes``; `simul show` and the tables'
caption list them, and a run's speed figures are marked as taken under changing threads.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simul.machine.cpu_usage import TASKS, schedstat_seconds

PRESSURE_FILE = Path("/proc/pressure/cpu")
CHECK_SECONDS = 1.0  # between two decisions
MIN_PASSES = 4  # one-token passes a decision needs
SLOW = 2.0  # passes this many times their calibrated cost on `top` threads: go down to 1
SLOW_WINDOWS = 2  # ... in this many checks in a row (one slow second is not a phase)
PRESSURE_HIGH = 40.0  # % of the last 10 s some runnable task waited for a CPU
PRESSURE_SLOW = 1.3  # the bar for going down when the pressure is high
PROBE_SECONDS = 10.0  # on 1 thread: try `top` again after this long
MAX_PROBE_SECONDS = 120.0
BUSY_SHARE = 0.05  # a thread that ran this share of a check's interval is one of llama.cpp's busy threads
STACKED_CHECKS = 2  # llama.cpp's threads on one CPU in this many checks in a row: go down to 1


def cpu_pressure(path: Path = PRESSURE_FILE) -> float | None:
    """Linux's CPU pressure: ``some avg10``, the share (%) of the last 10 seconds in which at least one
    runnable task waited for a CPU (Documentation/accounting/psi.rst); None where the kernel has no PSI."""
    try:
        first = path.read_text(encoding="ascii").splitlines()[0]
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    fields = dict(part.split("=", 1) for part in first.split()[1:] if "=" in part)
    try:
        return float(fields["avg10"])
    except (KeyError, ValueError):
        return None


def thread_placement(tasks: Path = TASKS) -> dict[int, tuple[float, int]]:
    """Per thread of this process: (seconds it has run, the CPU it last ran on), from
    ``/proc/self/task/*/schedstat`` (simul.machine.cpu_usage.schedstat_seconds) and field 39 of ``stat``;
    empty where unreadable (not Linux)."""
    out: dict[int, tuple[float, int]] = {}
    for tid, (ran, _) in (schedstat_seconds(tasks) or {}).items():
        try:
            cpu = int((tasks / str(tid) / "stat").read_text().rsplit(")", 1)[1].split()[36])
        except (OSError, ValueError, IndexError):
            continue
        out[tid] = (ran, cpu)
    return out


def stacked_cpu(
    before: dict[int, tuple[float, int]], after: dict[int, tuple[float, int]], seconds: float
) -> int | None:
    """The CPU on which every thread that ran for at least BUSY_SHARE of ``seconds`` between two
    placements ended, when there are two or more such threads and they share one CPU; else None."""
    if seconds <= 0:
        return None
    busy = [
        cpu
        for tid, (ran, cpu) in after.items()
        if tid in before and ran - before[tid][0] >= BUSY_SHARE * seconds
    ]
    return busy[0] if len(busy) >= 2 and len(set(busy)) == 1 else None


@dataclass(frozen=True)
class ThreadChange:
    """One change of the thread count during a run."""

    at_s: float  # seconds since the follower started (the engine had loaded the model)
    passes: int  # forward passes before the change
    from_threads: int
    to_threads: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "at_s": round(self.at_s, 3),
            "passes": self.passes,
            "from": self.from_threads,
            "to": self.to_threads,
            "reason": self.reason,
        }


class LoadFollower:
    """Chooses the thread count between forward passes (the rule of the module docstring) and records why.

    ``apply(n)`` changes the count (LlamaBackend.set_threads); ``clock`` and ``pressure`` (default:
    cpu_pressure) are read when needed, so tests pass scripted ones."""

    def __init__(
        self,
        top: int,
        apply: Callable[[int], None],
        clock: Callable[[], float] = time.monotonic,
        pressure: Callable[[], float | None] | None = None,
        placement: Callable[[], dict[int, tuple[float, int]]] | None = None,
        cpus: int = 2,
    ) -> None:
        if top < 2:
            raise ValueError(f"a load follower needs 2 threads or more to choose from, got {top}")
        self.top = top
        self.threads = top
        self._apply = apply
        self._clock = clock
        self._pressure = pressure
        self._placement = placement
        self._cpus = cpus  # CPUs this process may run on: stacking means something only with 2 or more
        self._placed = self._place()
        self._stacked_checks = 0
        self._start = clock()
        self._last_check = self._start
        self._last_check_before = self._start
        self._last_change = self._start
        self._probe_wait = PROBE_SECONDS
        self._probing = False
        self._slow_windows = 0  # consecutive slow checks on `top` threads
        self._last_mean: dict[int, float] = {}  # the last window's mean pass per thread count
        self._top_won = False  # the last probe found `top` threads faster than 1 under the load of then
        self._window: list[float] = []  # seconds of the one-token passes since the last check
        self.passes = 0
        # seconds of a one-token pass per thread count: the calibrated cost, else the fastest window seen
        self.expected: dict[int, float] = {}
        self._calibrated: set[int] = set()
        self.changes: list[ThreadChange] = []
        self.paused = False

    def calibrated(self, seconds_by_threads: dict[int, float]) -> None:
        """Calibrated seconds of a one-token pass per thread count measured (simul.machine.calibration)."""
        for n, seconds in seconds_by_threads.items():
            if seconds > 0:
                self.expected[n] = seconds
                self._calibrated.add(n)

    def after_pass(self, rows: int, seconds: float) -> None:
        """Called after every forward pass of ``rows`` rows that took ``seconds``."""
        if self.paused:
            return
        self.passes += 1
        if rows == 1:
            self._window.append(seconds)
        now = self._clock()
        if now - self._last_check < CHECK_SECONDS or len(self._window) < MIN_PASSES:
            return
        mean = sum(self._window) / len(self._window)
        self._window = []
        self._last_check_before, self._last_check = self._last_check, now
        self._decide(now, mean)

    def _place(self) -> dict[int, tuple[float, int]]:
        return (self._placement or thread_placement)() if self._cpus >= 2 else {}

    def _decide(self, now: float, mean: float) -> None:
        n = self.threads
        placed, elapsed = self._place(), now - self._last_check_before
        cpu = stacked_cpu(self._placed, placed, elapsed) if n > 1 else None
        self._placed = placed
        self._stacked_checks = self._stacked_checks + 1 if cpu is not None else 0
        if n not in self._calibrated and (n not in self.expected or mean < self.expected[n]):
            self.expected[n] = mean  # the fastest window on this count, where calibration did not say
        pressure = (self._pressure or cpu_pressure)()
        said = "" if pressure is None else f", CPU pressure {pressure:.0f}%"
        self._last_mean[n] = mean
        if n == self.top:
            if self._probing:
                self._probing = False
                alone = self._last_mean.get(1, self.expected.get(1))
                if alone is not None and mean >= alone:
                    self._probe_wait = min(MAX_PROBE_SECONDS, 2 * self._probe_wait)
                    self._change(
                        now,
                        1,
                        f"probe: one-token passes took {1000 * mean:.1f} ms on {n} threads, no faster than "
                        f"{1000 * alone:.1f} ms on 1{said}",
                    )
                    return
                self._probe_wait = PROBE_SECONDS
                self._top_won = True
            if cpu is not None and self._stacked_checks >= STACKED_CHECKS and not self._top_won:
                self._change(
                    now,
                    1,
                    f"llama.cpp's {n} threads all ran on CPU {cpu} in {self._stacked_checks} checks in a row "
                    f"(every barrier a context switch; {1000 * mean:.1f} ms a one-token pass){said}",
                )
                return
            base = self.expected.get(n)
            alone = self._last_mean.get(1, self.expected.get(1)) if self._top_won else self.expected.get(1)
            bar = PRESSURE_SLOW if pressure is not None and pressure > PRESSURE_HIGH else SLOW
            slow = base is not None and mean > bar * base and (alone is None or mean > alone)
            self._slow_windows = self._slow_windows + 1 if slow else 0
            if base and self._slow_windows >= SLOW_WINDOWS:
                self._change(
                    now,
                    1,
                    f"one-token passes took {mean / base:.1f}x their cost on {n} threads "
                    f"({1000 * mean:.1f} ms against {1000 * base:.1f} ms){said}",
                )
        elif now - self._last_change >= self._probe_wait:
            self._probing = True
            self._change(now, self.top, f"probe after {self._probe_wait:.0f} s on 1 thread{said}")

    def _change(self, now: float, to: int, reason: str) -> None:
        self.changes.append(ThreadChange(now - self._start, self.passes, self.threads, to, reason))
        self._apply(to)
        if to < self.threads:
            self._top_won = False
        self.threads = to
        self._last_change = now
        self._window = []
        self._slow_windows = 0
        self._stacked_checks = 0
        self._placed = self._place()

    def to_json(self) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.changes]


SHOWN = 4  # changes listed in a caption; the rest are counted


def changes_note(changes: Any) -> str | None:
    """For a table's caption and `simul show`: the thread changes of run.json's ``environment.thread_changes``
    in words (None without any). The callers escape it (a reason is text from a file)."""
    if not isinstance(changes, list) or not changes:
        return None
    parts = []
    for change in changes[:SHOWN]:
        if not isinstance(change, dict):
            continue
        at, a, b = (_number(change.get(k)) for k in ("at_s", "from", "to"))
        if at is None or a is None or b is None:
            continue
        reason = change.get("reason")
        why = f": {reason[:160]}" if isinstance(reason, str) and reason else ""
        parts.append(f"{int(a)}->{int(b)} at {at:.1f} s{why}")
    more = f"; and {len(changes) - SHOWN} more" if len(changes) > SHOWN else ""
    return (
        f"threads followed the load (exact mode): {len(changes)} change{'s' if len(changes) != 1 else ''} "
        f"({'; '.join(parts)}{more}); speed figures taken under changing threads"
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e9:
        return None
    return float(value)

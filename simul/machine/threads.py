"""How many CPU threads llama.cpp gets when ``--threads`` is omitted or 0 (automatic).

    threads = max(1, min(MAX_AUTO_THREADS, physical cores - busy cores))

* physical cores: distinct (package, core) pairs among the CPUs this process may run on
  (``sched_getaffinity``), so ``taskset`` and container CPU limits count, and the two hyperthreads of one
  core count once (as in llama.cpp's own default: they share one core's vector units).
* busy cores: work other than ours that is both current and sustained, rounded to the nearest whole core:
  the smaller of (a) the cores' worth of those CPUs that other processes used over a short sample
  (BUSY_SAMPLE_SECONDS of ``/proc/stat``, steal time included) just before the model loads and (b) the
  1-minute load average. Each alone misleads: the sample catches a passing burst (a compile step, a
  browser tab) that would cost the whole run half its threads; the load average lags by a minute, misses a
  job that has just started and still counts the previous `simul eval` of a script that runs evaluations
  back to back.
* MAX_AUTO_THREADS: a 270M-4B model on the CPU gains little beyond 8 threads, and every thread is one
  more party to the hundreds of barriers per token.

Why leave busy cores alone: llama.cpp's threads meet at a barrier after every operation, so a forward pass
goes at the pace of its slowest thread, and a thread that shares its core with another job is off the CPU
for whole scheduler slices (milliseconds) while the others wait. On 2 cores with one of them taken, 2
passive threads were no faster than 1 (issue 13's closing note); with more cores and more busy ones, the
threads that share cores would hold back those that do not.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_AUTO_THREADS = 8
BUSY_SAMPLE_SECONDS = 0.25
SYS_CPU = Path("/sys/devices/system/cpu")
PROC_STAT = Path("/proc/stat")


@dataclass(frozen=True)
class ThreadChoice:
    """The thread count and how it was arrived at (recorded in run.json's environment)."""

    threads: int
    source: str  # "--threads" (the user's number) or "auto"
    cpus: int  # logical CPUs in the affinity mask
    physical_cores: int
    busy_cores: float | None  # other work on those CPUs during the sample; None when not measured
    load1: float | None = None  # the 1-minute load average when the threads were chosen

    @property
    def taken_cores(self) -> int:
        """Cores taken by other work, as the automatic rule counts them (0 when not measured)."""
        return taken_cores(self.busy_cores, self.load1)

    def to_json(self) -> dict[str, Any]:
        return {
            "threads": self.threads,
            "source": self.source,
            "cpus": self.cpus,
            "physical_cores": self.physical_cores,
            "busy_cores": None if self.busy_cores is None else round(self.busy_cores, 2),
            "load1": None if self.load1 is None else round(self.load1, 2),
        }


def affinity() -> list[int]:
    """The CPUs this process may run on."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return list(range(os.cpu_count() or 1))


def physical_cores(cpus: Iterable[int], sysfs: Path = SYS_CPU) -> int:
    """Distinct (package, core) pairs of ``cpus``; each CPU counts alone where sysfs does not say."""
    cores: set[tuple[str, str]] = set()
    for cpu in cpus:
        topology = sysfs / f"cpu{cpu}" / "topology"
        try:
            package = (topology / "physical_package_id").read_text().strip()
            core = (topology / "core_id").read_text().strip()
        except OSError:
            package, core = "cpu", str(cpu)
        cores.add((package, core))
    return max(1, len(cores))


def read_cpu_times(stat: Path = PROC_STAT) -> dict[int, tuple[int, int]]:
    """Per CPU: (busy, total) clock ticks since boot from /proc/stat; empty when unreadable.

    busy = user + nice + system + irq + softirq + steal; total adds idle and iowait (guest time is already
    inside user and nice).
    """
    out: dict[int, tuple[int, int]] = {}
    try:
        lines = stat.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu" or not name[3:].isdigit():
            continue
        fields = [int(x) for x in rest.split()[:8]]
        if len(fields) < 8:
            continue
        user, nice, system, idle, iowait, irq, softirq, steal = fields
        busy = user + nice + system + irq + softirq + steal
        out[int(name[3:])] = (busy, busy + idle + iowait)
    return out


def busy_cores(
    before: Mapping[int, tuple[int, int]],
    after: Mapping[int, tuple[int, int]],
    cpus: Iterable[int],
    own_cpu_seconds: float,
    seconds: float,
) -> float | None:
    """Cores' worth of work other than ours on ``cpus`` between two /proc/stat samples."""
    busy = total = 0
    n = 0
    for cpu in cpus:
        if cpu in before and cpu in after:
            busy += after[cpu][0] - before[cpu][0]
            total += after[cpu][1] - before[cpu][1]
            n += 1
    if n == 0 or total <= 0 or seconds <= 0:
        return None
    # Ticks of all sampled CPUs over the window: total / n ticks per CPU elapsed.
    cores = busy / (total / n) - own_cpu_seconds / seconds
    return max(0.0, cores)


def taken_cores(busy: float | None, load1: float | None) -> int:
    """Whole cores taken by other work: the smaller of the sample and the load average, rounded (0 unless
    both are known)."""
    if busy is None or load1 is None:
        return 0
    return int(min(busy, load1) + 0.5)


def auto_threads(physical: int, busy: float | None, load1: float | None = None) -> int:
    """The rule of this module's docstring: ``busy`` from the sample, ``load1`` the load average."""
    return max(1, min(MAX_AUTO_THREADS, physical - taken_cores(busy, load1)))


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - not available on this platform
        return None


def choose_threads(
    requested: int | None,
    sample: Callable[[], dict[int, tuple[int, int]]] = read_cpu_times,
    sleep: Callable[[float], None] = time.sleep,
    loadavg: Callable[[], float | None] = load_average,
) -> ThreadChoice:
    """``requested`` threads when given (> 0); otherwise the automatic rule."""
    cpus = affinity()
    physical = physical_cores(cpus)
    if requested is not None and requested < 0:
        raise ValueError(f"threads must be 0 (automatic) or more, got {requested}")
    load1 = loadavg()
    # Sampled with --threads too: the OpenMP wait policy is chosen from the same sample
    # (simul.machine.openmp).
    before, own_before, t0 = sample(), time.process_time(), time.perf_counter()
    sleep(BUSY_SAMPLE_SECONDS)
    after, own_after, t1 = sample(), time.process_time(), time.perf_counter()
    busy = busy_cores(before, after, cpus, own_after - own_before, t1 - t0)
    if requested:
        return ThreadChoice(requested, "--threads", len(cpus), physical, busy, load1)
    threads = auto_threads(physical, busy, load1)
    return ThreadChoice(threads, "auto", len(cpus), physical, busy, load1)

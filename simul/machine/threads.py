"""How many CPU threads llama.cpp gets when ``--threads`` is omitted or 0 (automatic).

    threads = max(1, min(MAX_AUTO_THREADS, physical cores, floor(CPU quota), model MiB // 16))

* physical cores: distinct (package, core) pairs among the CPUs this process may run on
  (``sched_getaffinity``), so ``taskset`` and cpusets count, and the two hyperthreads of one core count once
  (as in llama.cpp's own default: they share one core's vector units).
* CPU quota: the cgroup's CFS bandwidth limit in CPUs, which is how ``docker --cpus 2`` and Kubernetes CPU
  limits confine a container (its affinity mask still shows every CPU of the host): quota / period from
  cgroup v2's ``cpu.max`` or v1's ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us``, the smallest along the
  process's cgroup and its ancestors. It rounds down (a 2.5-CPU quota gets 2 threads: a third would be
  throttled for part of every period, and the others wait for it at every barrier), to at least 1.
  Unlimited (``max``, ``-1``) or unreadable: no quota.
* MAX_AUTO_THREADS: a 270M-4B model on the CPU gains little beyond 8 threads, and every thread is one
  more party to the hundreds of barriers per token.
* model MiB // BYTES_PER_THREAD (16 MiB): a model whose weights are small has passes too short to split.
  Every operation of a pass ends at a barrier of all threads; where an operation's share of the weights is
  a few kilobytes, the barrier costs more than the work it splits. On the 2-core AMD EPYC (measured in
  docs/results.md "The whole `make test` beside two busy loops, again"), a one-token pass of float32 test
  models took, on 2 threads against 1, with the bounded spin: 1.68x (0.8 MiB), 1.61x (18 MiB), 0.87x
  (68 MiB), 0.92x (222 MiB), 0.59x (520 MiB); with the passive wait that simul chooses beside busy cores
  41.5x, 5.9x, 1.6x, 1.2x, 0.98x. The rule takes the size of the model file, which does not change from run
  to run.

Nothing that changes from one second to the next enters the rule: outputs and speed figures must not depend
on a passing burst. An earlier rule took off the cores that other work kept busy, the smaller of a 0.25 s CPU
sample and the 1-minute load average; on an idle 2-core machine, one second after another job ended, the
sample caught a burst of unknown origin and the load average still counted the finished job: 1 thread, and
the identical next run 2 (RT 58.8 against 82.9 tokens/s, SSBD's speedup 1.42 against 1.72), and the tiny test
model's greedy outputs change with the thread count. Now the same command on the same machine (or container)
always gets the same threads.

The price: next to a job that holds a core for the whole run, a thread shares that core, and llama.cpp's
threads, which meet at a barrier after every operation, go at the pace of that thread (on 2 cores with one
busy, 2 passive threads were measured no faster than 1). The load still decides how the threads wait
(simul.machine.openmp: ``passive`` when the sample and the load average agree that a core is taken, from
the sample taken here), a run that got less CPU than it asked for is marked (simul.machine.cpu_usage), and
``--threads N`` chooses the count outright.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

MAX_AUTO_THREADS = 8
BYTES_PER_THREAD = 16 << 20  # automatic threads: at most one per this many bytes of model file, at least 1
BUSY_SAMPLE_SECONDS = 0.25
SYS_CPU = Path("/sys/devices/system/cpu")
PROC_STAT = Path("/proc/stat")
CGROUP_ROOT = Path("/")  # the file system root the cgroup files are read under (tests pass a fake one)
# cgroup v1 mounts the cpu controller under one of these names (often several, linked to one another)
V1_CPU_MOUNTS = ("cpu,cpuacct", "cpu", "cpuacct,cpu")


@dataclass(frozen=True)
class CpuQuota:
    """A cgroup's CFS bandwidth limit: ``quota_us`` of CPU time per ``period_us`` of wall time."""

    quota_us: int
    period_us: int
    file: str  # where it was read (cpu.max, or cpu.cfs_quota_us for v1)

    @property
    def cpus(self) -> float:
        return self.quota_us / self.period_us

    @property
    def threads(self) -> int:
        """The whole CPUs the quota allows, at least 1."""
        return max(1, math.floor(self.cpus))

    def to_json(self) -> dict[str, Any]:
        return {
            "cpus": round(self.cpus, 3),
            "quota_us": self.quota_us,
            "period_us": self.period_us,
            "file": self.file,
        }


@dataclass(frozen=True)
class ThreadChoice:
    """The thread count and how it was arrived at (recorded in run.json's environment)."""

    threads: int
    source: str  # "--threads" (the user's number) or "auto"
    cpus: int  # logical CPUs in the affinity mask
    physical_cores: int  # physical cores among them
    busy_cores: float | None  # other work on those CPUs during the sample; None when not measured
    load1: float | None = None  # the 1-minute load average when the threads were chosen
    cpu_quota: CpuQuota | None = None  # the cgroup's CPU quota; None: none found
    machine_cpus: int | None = None  # logical CPUs of the machine (the affinity mask may hold fewer)
    model_bytes: int | None = None  # the model file's size, where the rule was given it

    @property
    def taken_cores(self) -> int:
        """Cores taken by other work as the sample and load average saw them (0 when not measured); it
        decides the OpenMP wait policy (simul.machine.openmp), never the thread count."""
        return taken_cores(self.busy_cores, self.load1)

    def to_json(self) -> dict[str, Any]:
        return {
            "threads": self.threads,
            "source": self.source,
            "cpus": self.cpus,
            "physical_cores": self.physical_cores,
            "machine_cpus": self.machine_cpus,
            "cpu_quota": None if self.cpu_quota is None else self.cpu_quota.to_json(),
            "busy_cores": None if self.busy_cores is None else round(self.busy_cores, 2),
            "load1": None if self.load1 is None else round(self.load1, 2),
            "model_bytes": self.model_bytes,
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


# -- the cgroup CPU quota ----------------------------------------------------------------------------------


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None


def own_cgroups(root: Path = CGROUP_ROOT) -> tuple[str | None, str | None]:
    """This process's cgroup paths from ``/proc/self/cgroup``: (v2's, v1's cpu controller's); None where
    absent. A line reads ``ID:CONTROLLERS:PATH``; v2's is ``0::PATH``."""
    text = _read(root / "proc" / "self" / "cgroup") or ""
    v2 = v1 = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        ident, controllers, path = parts
        if ident == "0" and controllers == "":
            v2 = path
        elif "cpu" in controllers.split(","):
            v1 = path
    return v2, v1


def _along(base: Path, cgroup: str | None) -> list[Path]:
    """``base``/``cgroup`` and each ancestor up to ``base``, those that exist. In a container the path
    /proc/self/cgroup names is often not under the container's own mount (another namespace), where the
    mount itself is the container's cgroup."""
    parts = [p for p in PurePosixPath(cgroup or "/").parts if p not in ("/", ".", "..")]
    dirs = [base.joinpath(*parts[:n]) for n in range(len(parts), -1, -1)]
    return [d for d in dirs if d.is_dir()]


def _v2_quota(directory: Path) -> CpuQuota | None:
    fields = (_read(directory / "cpu.max") or "").split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    return _quota(fields[0], fields[1], directory / "cpu.max")


def _v1_quota(directory: Path) -> CpuQuota | None:
    quota = _read(directory / "cpu.cfs_quota_us")
    period = _read(directory / "cpu.cfs_period_us")
    if quota is None or period is None:
        return None
    return _quota(quota, period, directory / "cpu.cfs_quota_us")


def _quota(quota: str, period: str, file: Path) -> CpuQuota | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    if q <= 0 or p <= 0:  # -1: no limit (v1)
        return None
    return CpuQuota(q, p, str(file))


def cgroup_cpu_quota(root: Path = CGROUP_ROOT) -> CpuQuota | None:
    """The tightest CFS quota over this process's cgroup and its ancestors, cgroup v2 and v1 alike; None
    when there is none (or nothing is readable: not Linux, no cgroup file system)."""
    v2, v1 = own_cgroups(root)
    base = root / "sys" / "fs" / "cgroup"
    found = [q for d in _along(base, v2) if (q := _v2_quota(d)) is not None]
    for mount in V1_CPU_MOUNTS:
        if (base / mount).is_dir():
            found += [q for d in _along(base / mount, v1) if (q := _v1_quota(d)) is not None]
    return min(found, key=lambda q: q.cpus, default=None)


# -- the rule -------------------------------------------------------------------------------------------


def auto_threads(physical: int, quota: CpuQuota | None = None, model_bytes: int | None = None) -> int:
    """The rule of this module's docstring (``model_bytes`` None: the model's size is not known)."""
    allowed = physical if quota is None else min(physical, quota.threads)
    if model_bytes is not None:
        allowed = min(allowed, size_threads(model_bytes))
    return max(1, min(MAX_AUTO_THREADS, allowed))


def size_threads(model_bytes: int) -> int:
    """The most threads a model file of ``model_bytes`` gets automatically: one per BYTES_PER_THREAD."""
    return max(1, model_bytes // BYTES_PER_THREAD)


def fewer_threads_note(record: Any) -> str | None:
    """For a table's caption: why a run used fewer threads than the machine's physical cores, from run.json's
    ``environment.thread_choice`` (None when it used them all, or the record does not say). Only numbers
    of the record are shown, so a damaged or hostile run.json prints nothing unescaped."""
    if not isinstance(record, Mapping):
        return None
    threads, physical, cpus = (_whole(record.get(k)) for k in ("threads", "physical_cores", "cpus"))
    if threads is None or physical is None:
        return None
    machine = _whole(record.get("machine_cpus"))
    reasons = []
    if record.get("source") == "--threads":
        reasons.append(f"--threads {threads}")
    else:
        if machine is not None and cpus is not None and cpus < machine:
            reasons.append(f"the affinity mask allows {cpus} of the machine's {machine} CPUs")
        quota = record.get("cpu_quota")
        allowed = _number(quota.get("cpus")) if isinstance(quota, Mapping) else None
        if allowed is not None and math.floor(allowed) < physical:
            reasons.append(f"the cgroup CPU quota allows {allowed:g} CPUs")
        if threads == MAX_AUTO_THREADS < physical:
            reasons.append(f"automatic threads stop at {MAX_AUTO_THREADS}")
        size = _whole(record.get("model_bytes"), below=1 << 50)
        if size is not None and size_threads(size) == threads < physical:
            mib = BYTES_PER_THREAD >> 20
            reasons.append(f"the model is {size / (1 << 20):.1f} MiB: at most one thread per {mib} MiB")
        if not reasons and "cpu_quota" not in record and threads < physical:
            # a run by an older simul (no cpu_quota in its record): its rule left out the cores taken at start
            reasons.append("cores taken by other work at start (an older simul left them alone)")
    fewer = threads < physical or (cpus is not None and machine is not None and cpus < machine)
    if not fewer or not reasons:
        return None
    of = f"{physical} physical core{'s' if physical != 1 else ''}"
    if machine is not None and cpus is not None and cpus < machine:
        of += f" of {cpus} usable CPUs (the machine has {machine})"
    return f"{threads} thread{'s' if threads != 1 else ''} on {of}: {'; '.join(reasons)}"


def _whole(value: Any, below: int = 1 << 20) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < below else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value) if 0 < value < 1 << 20 else None


# -- the CPU sample (for the wait policy) ------------------------------------------------------------------


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
    """Whole cores taken by other work, for the wait policy: the smaller of the sample and the load
    average, rounded (0 unless both are known). Each alone misleads: the sample catches a passing burst,
    the load average lags by a minute."""
    if busy is None or load1 is None:
        return 0
    return int(min(busy, load1) + 0.5)


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - not available on this platform
        return None


def choose_threads(
    requested: int | None,
    sample: Callable[[], dict[int, tuple[int, int]]] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    loadavg: Callable[[], float | None] | None = None,
    cpus: Sequence[int] | None = None,
    model: Path | None = None,
) -> ThreadChoice:
    """``requested`` threads when given (> 0); otherwise the automatic rule, with ``model``'s file size
    where given. The CPU sample and the load average are taken either way, for the OpenMP wait policy
    (simul.machine.openmp) alone. The readers are looked up when called (SYS_CPU, CGROUP_ROOT,
    read_cpu_times, load_average), so tests can fake them."""
    if requested is not None and requested < 0:
        raise ValueError(f"threads must be 0 (automatic) or more, got {requested}")
    sample = sample or read_cpu_times
    loadavg = loadavg or load_average
    mask = list(cpus) if cpus is not None else affinity()
    physical = physical_cores(mask, SYS_CPU)
    quota = cgroup_cpu_quota(CGROUP_ROOT)
    machine = os.cpu_count()
    load1 = loadavg()
    before, own_before, t0 = sample(), time.process_time(), time.perf_counter()
    sleep(BUSY_SAMPLE_SECONDS)
    after, own_after, t1 = sample(), time.process_time(), time.perf_counter()
    busy = busy_cores(before, after, mask, own_after - own_before, t1 - t0)
    size = _file_size(model)
    if requested:
        threads, source = requested, "--threads"
    else:
        threads, source = auto_threads(physical, quota, model_bytes=size), "auto"
    return ThreadChoice(threads, source, len(mask), physical, busy, load1, quota, machine, size)


def _file_size(path: Path | None) -> int | None:
    if path is None:
        return None
    try:
        return path.stat().st_size
    except OSError:
        return None

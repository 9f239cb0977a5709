"""How much memory this process can still take: what a model about to be loaded may use.

Linux reports it in two places, and the smaller figure counts:

* the machine: ``MemAvailable`` of ``/proc/meminfo`` (the kernel's estimate of the memory available for new
  allocations without swapping: free memory plus the page cache and reclaimable slabs it can drop;
  Documentation/filesystems/proc.rst);
* the control group the process runs in (a container's ``docker --memory``, a Kubernetes memory limit, a
  Slurm job's allocation): its limit less its current use, from cgroup v2 (``memory.max`` and
  ``memory.current`` in the process's group, named by ``/proc/self/cgroup``'s ``0::/PATH`` line) or cgroup v1
  (``memory.limit_in_bytes`` and ``memory.usage_in_bytes`` of the memory controller). The out-of-memory
  killer acts on the group's limit whatever the machine has free.

Where neither can be read (not Linux), :func:`available_memory` returns None and callers skip their check.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

GIB = 1024**3
# cgroup v1 writes "no limit" as a huge number (PAGE_COUNTER_MAX pages); anything above this is no limit
_NO_LIMIT = 1 << 60


@dataclass(frozen=True)
class MemoryReading:
    """Bytes this process can still allocate, and where the figure comes from."""

    available: int
    source: str  # "MemAvailable" or "cgroup v2 limit" / "cgroup v1 limit"

    def describe(self) -> str:
        return f"{gib(self.available)} available ({self.source})"


def gib(count: int | float) -> str:
    """A byte count in GiB, one decimal (e.g. ``13.9 GiB``)."""
    return f"{count / GIB:.1f} GiB"


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return None if value >= _NO_LIMIT else value


def mem_available(meminfo: Path) -> int | None:
    """``MemAvailable`` of a ``/proc/meminfo``-format file, in bytes (None when absent or unreadable)."""
    try:
        lines = meminfo.read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        name, _, rest = line.partition(":")
        if name.strip() == "MemAvailable":
            parts = rest.split()
            if parts and parts[0].isdigit():
                unit = parts[1].lower() if len(parts) > 1 else "b"
                return int(parts[0]) * (1024 if unit == "kb" else 1)
    return None


def cgroup_headroom(proc_self_cgroup: Path, cgroup_root: Path) -> tuple[int, str] | None:
    """The memory left under this process's control group limit (limit - current use) and which cgroup
    version says so; None when the group has no limit or cannot be read."""
    try:
        lines = proc_self_cgroup.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, group = rest.partition(":")
        relative = group.lstrip("/")
        if hierarchy == "0" and controllers == "":  # cgroup v2's unified hierarchy
            folder = cgroup_root / relative
            limit, used = _read_int(folder / "memory.max"), _read_int(folder / "memory.current")
            if limit is not None and used is not None:
                return max(0, limit - used), "cgroup v2 limit"
        elif "memory" in controllers.split(","):
            folder = cgroup_root / "memory" / relative
            limit = _read_int(folder / "memory.limit_in_bytes")
            used = _read_int(folder / "memory.usage_in_bytes")
            if limit is not None and used is not None:
                return max(0, limit - used), "cgroup v1 limit"
    return None


def available_memory(
    meminfo: Path = Path("/proc/meminfo"),
    proc_self_cgroup: Path = Path("/proc/self/cgroup"),
    cgroup_root: Path = Path("/sys/fs/cgroup"),
) -> MemoryReading | None:
    """The smaller of the machine's available memory and the headroom under the process's cgroup limit."""
    readings: list[MemoryReading] = []
    machine = mem_available(meminfo)
    if machine is not None:
        readings.append(MemoryReading(machine, "MemAvailable"))
    group = cgroup_headroom(proc_self_cgroup, cgroup_root)
    if group is not None:
        readings.append(MemoryReading(*group))
    return min(readings, key=lambda r: r.available) if readings else None

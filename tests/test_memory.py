"""The memory a process can still take (simul.machine.memory): /proc/meminfo's MemAvailable and the
process's cgroup limit (v2 and v1), the smaller one counting; files written here stand in for /proc and
/sys/fs/cgroup."""

from __future__ import annotations

from pathlib import Path

from simul.machine.memory import GIB, MemoryReading, available_memory, cgroup_headroom, gib, mem_available

MEMINFO = """MemTotal:       24684084 kB
MemFree:         1000000 kB
MemAvailable:   16777216 kB
Buffers:          100000 kB
"""


def _files(tmp_path: Path, cgroup_line: str, files: dict[str, str]) -> tuple[Path, Path, Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(MEMINFO, encoding="ascii")
    proc = tmp_path / "cgroup"
    proc.write_text(cgroup_line + "\n", encoding="ascii")
    root = tmp_path / "sys"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="ascii")
    return meminfo, proc, root


def test_mem_available_reads_kilobytes(tmp_path: Path) -> None:
    meminfo, _, _ = _files(tmp_path, "0::/", {})
    assert mem_available(meminfo) == 16777216 * 1024 == 16 * GIB
    assert mem_available(tmp_path / "missing") is None


def test_a_cgroup_v2_limit_below_the_machine_counts(tmp_path: Path) -> None:
    files = {"job/memory.max": str(6 * GIB), "job/memory.current": str(2 * GIB)}
    meminfo, proc, root = _files(tmp_path, "0::/job", files)
    assert cgroup_headroom(proc, root) == (4 * GIB, "cgroup v2 limit")
    assert available_memory(meminfo, proc, root) == MemoryReading(4 * GIB, "cgroup v2 limit")


def test_no_cgroup_limit_leaves_the_machine_figure(tmp_path: Path) -> None:
    files = {"job/memory.max": "max", "job/memory.current": str(2 * GIB)}
    meminfo, proc, root = _files(tmp_path, "0::/job", files)
    assert cgroup_headroom(proc, root) is None
    assert available_memory(meminfo, proc, root) == MemoryReading(16 * GIB, "MemAvailable")


def test_a_cgroup_v1_limit(tmp_path: Path) -> None:
    files = {
        "memory/slurm/job1/memory.limit_in_bytes": str(3 * GIB),
        "memory/slurm/job1/memory.usage_in_bytes": str(GIB),
    }
    meminfo, proc, root = _files(tmp_path, "4:memory:/slurm/job1", files)
    assert available_memory(meminfo, proc, root) == MemoryReading(2 * GIB, "cgroup v1 limit")
    # v1 writes "no limit" as a huge page-counter value
    files["memory/slurm/job1/memory.limit_in_bytes"] = "9223372036854771712"
    meminfo, proc, root = _files(tmp_path / "b", "4:memory:/slurm/job1", files)
    assert available_memory(meminfo, proc, root) == MemoryReading(16 * GIB, "MemAvailable")


def test_nothing_readable_gives_none(tmp_path: Path) -> None:
    assert available_memory(tmp_path / "a", tmp_path / "b", tmp_path / "c") is None
    assert gib(14 * 10**9) == "13.0 GiB"

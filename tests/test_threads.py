"""The automatic thread count: the physical cores this process may use, within its cgroup CPU quota, at most
8, whatever the load."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.decoding.backend import LlamaBackend
from simul.machine import threads as threads_module
from simul.machine.threads import (
    BYTES_PER_THREAD,
    MAX_AUTO_THREADS,
    CpuQuota,
    auto_threads,
    busy_cores,
    cgroup_cpu_quota,
    choose_threads,
    fewer_threads_note,
    physical_cores,
    read_cpu_times,
)
from tests.helpers import eval_args


def _topology(root: Path, cpu: int, package: int, core: int) -> None:
    topology = root / f"cpu{cpu}" / "topology"
    topology.mkdir(parents=True)
    (topology / "physical_package_id").write_text(f"{package}\n")
    (topology / "core_id").write_text(f"{core}\n")


def test_hyperthreads_of_one_core_count_once(tmp_path: Path) -> None:
    # 2 packages x 2 cores x 2 hyperthreads
    for cpu in range(8):
        _topology(tmp_path, cpu, package=cpu // 4, core=(cpu // 2) % 2)
    assert physical_cores(range(8), tmp_path) == 4
    assert physical_cores([0, 1], tmp_path) == 1  # taskset to the two threads of one core
    assert physical_cores([0, 2, 4], tmp_path) == 3


def test_cpus_without_topology_count_alone(tmp_path: Path) -> None:
    assert physical_cores([0, 1, 2], tmp_path) == 3


def test_proc_stat_parsing(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text(
        "cpu  300 0 30 600 10 0 5 5 0 0\n"
        "cpu0 100 0 10 300 5 0 2 3 0 0\n"
        "cpu1 200 0 20 300 5 0 3 2 0 0\n"
        "intr 12345\n"
        "cpufreq x\n"
    )
    times = read_cpu_times(stat)
    # busy = user + nice + system + irq + softirq + steal; total adds idle and iowait
    assert times == {0: (115, 420), 1: (225, 530)}
    assert read_cpu_times(tmp_path / "absent") == {}


def test_busy_cores_subtracts_our_own_work() -> None:
    before = {0: (0, 0), 1: (0, 0), 2: (0, 0)}
    after = {0: (100, 100), 1: (50, 100), 2: (100, 100)}  # cpu 2 is not ours to use
    assert busy_cores(before, after, [0, 1], own_cpu_seconds=0.0, seconds=1.0) == pytest.approx(1.5)
    assert busy_cores(before, after, [0, 1], own_cpu_seconds=0.5, seconds=1.0) == pytest.approx(1.0)
    assert busy_cores(before, after, [0, 1], own_cpu_seconds=5.0, seconds=1.0) == 0.0
    assert busy_cores({}, after, [0, 1], 0.0, 1.0) is None


def _cgroup_root(tmp_path: Path, proc: str, files: dict[str, str]) -> Path:
    """A fake file system root: /proc/self/cgroup and files under /sys/fs/cgroup."""
    root = tmp_path / "root"
    (root / "proc" / "self").mkdir(parents=True)
    (root / "proc" / "self" / "cgroup").write_text(proc)
    for name, text in files.items():
        path = root / "sys" / "fs" / "cgroup" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_cgroup_v2_quota_is_the_tightest_along_the_path(tmp_path: Path) -> None:
    root = _cgroup_root(
        tmp_path,
        "0::/kubepods/pod1/box\n",
        {
            "kubepods/cpu.max": "400000 100000\n",
            "kubepods/pod1/cpu.max": "250000 100000\n",  # the pod's limit: 2.5 CPUs
            "kubepods/pod1/box/cpu.max": "max 100000\n",  # the container itself: unlimited
        },
    )
    quota = cgroup_cpu_quota(root)
    assert quota is not None and quota.cpus == 2.5 and quota.threads == 2
    assert quota.file.endswith("kubepods/pod1/cpu.max")
    assert quota.to_json() == {"cpus": 2.5, "quota_us": 250000, "period_us": 100000, "file": quota.file}


def test_cgroup_v2_in_a_container_namespace(tmp_path: Path) -> None:
    # `docker --cpus 2`: the container sees its own cgroup at the mount's root
    root = _cgroup_root(tmp_path, "0::/\n", {"cpu.max": "200000 100000\n"})
    quota = cgroup_cpu_quota(root)
    assert quota is not None and quota.cpus == 2.0
    # a path from another namespace that is not under the mount: the mount itself is the container's
    other = _cgroup_root(tmp_path / "b", "0::/docker/abc\n", {"cpu.max": "150000 100000\n"})
    assert cgroup_cpu_quota(other) == CpuQuota(150000, 100000, str(other / "sys/fs/cgroup/cpu.max"))


def test_cgroup_v1_cfs_quota(tmp_path: Path) -> None:
    root = _cgroup_root(
        tmp_path,
        "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n",
        {
            "cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "50000\n",
            "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
            "cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
            "cpu,cpuacct/cpu.cfs_period_us": "100000\n",
        },
    )
    quota = cgroup_cpu_quota(root)
    assert quota is not None and quota.cpus == 0.5
    assert quota.threads == 1  # a fractional quota rounds down, to at least 1


@pytest.mark.parametrize(
    "files",
    [
        {},  # no cgroup file system (not Linux, or not mounted)
        {"cpu.max": "max 100000\n"},
        {"cpu.max": "garbage\n"},
        {"cpu.max": "0 100000\n"},
        {"cpu,cpuacct/cpu.cfs_quota_us": "-1\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"},
        {"cpu,cpuacct/cpu.cfs_quota_us": "50000\n"},  # no period
    ],
)
def test_no_quota(tmp_path: Path, files: dict[str, str]) -> None:
    assert cgroup_cpu_quota(_cgroup_root(tmp_path, "0::/\n4:cpu,cpuacct:/\n", files)) is None


@pytest.mark.parametrize(
    ("physical", "quota", "threads"),
    [
        (2, None, 2),
        (1, None, 1),
        (16, None, MAX_AUTO_THREADS),
        (64, CpuQuota(200000, 100000, "cpu.max"), 2),  # docker --cpus 2 on a 64-core host
        (64, CpuQuota(250000, 100000, "cpu.max"), 2),  # rounds down
        (4, CpuQuota(50000, 100000, "cpu.max"), 1),  # at least 1
        (2, CpuQuota(800000, 100000, "cpu.max"), 2),  # a quota above the cores: the cores
    ],
)
def test_auto_rule(physical: int, quota: CpuQuota | None, threads: int) -> None:
    assert auto_threads(physical, quota) == threads


MIB = 1 << 20


@pytest.mark.parametrize(
    ("physical", "model_bytes", "threads"),
    [
        (2, 839_008, 1),  # the tiny test model: passes too short to split
        (8, 18 * MIB, 1),
        (8, 32 * MIB, 2),
        (8, 68 * MIB, 4),
        (2, 253 * MIB, 2),  # the embedded default model on 2 cores: the cores
        (16, 253 * MIB, MAX_AUTO_THREADS),
        (4, 0, 1),  # an empty file (refused later by the loader) still gets a thread
    ],
)
def test_auto_rule_small_models_get_fewer_threads(physical: int, model_bytes: int, threads: int) -> None:
    """Issue 53: on 2 cores a one-token pass of an 18 MiB model took 1.6x as long on 2 threads as on 1
    (41x with the passive wait simul chooses beside busy cores, for the 0.8 MiB tiny model)."""
    assert auto_threads(physical, None, model_bytes=model_bytes) == threads
    assert auto_threads(physical, None, model_bytes=None) == min(physical, MAX_AUTO_THREADS)


def test_choose_threads_reads_the_model_size(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_machine(monkeypatch, tmp_path, cores=4)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"\0" * (2 * BYTES_PER_THREAD + 5))
    quiet = iter([{0: (0, 0)}, {0: (0, 100)}, {0: (0, 0)}, {0: (0, 100)}, {0: (0, 0)}, {0: (0, 100)}])
    take = dict(sample=lambda: next(quiet), sleep=lambda s: None, loadavg=lambda: 0.0)
    choice = choose_threads(0, model=model, **take)  # type: ignore[arg-type]
    assert choice.threads == 2 and choice.model_bytes == 2 * BYTES_PER_THREAD + 5
    assert fewer_threads_note(choice.to_json()) == (
        "2 threads on 4 physical cores: the model is 32.0 MiB: at most one thread per 16 MiB"
    )
    # --threads wins; a model that cannot be read does not limit
    assert choose_threads(4, model=model, **take).threads == 4  # type: ignore[arg-type]
    assert choose_threads(0, model=tmp_path / "gone.gguf", **take).threads == 4  # type: ignore[arg-type]


def _fake_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cores: int, cpu_max: str = "") -> None:
    """``cores`` CPUs, one per core, and a cgroup with ``cpu_max`` (none when empty)."""
    sysfs = tmp_path / "cpu"
    for cpu in range(cores):
        _topology(sysfs, cpu, package=0, core=cpu)
    monkeypatch.setattr(threads_module, "SYS_CPU", sysfs)
    monkeypatch.setattr(threads_module, "affinity", lambda: list(range(cores)))
    files = {"cpu.max": cpu_max} if cpu_max else {}
    monkeypatch.setattr(threads_module, "CGROUP_ROOT", _cgroup_root(tmp_path, "0::/\n", files))


def _burst_then_idle(cores: int) -> Iterator[dict[int, tuple[int, int]]]:
    """/proc/stat samples: a CPU burst of one core over the first sample, then idle ones."""
    yield {c: (0, 0) for c in range(cores)}
    yield {c: (100 if c == 0 else 0, 100) for c in range(cores)}
    tick = 100
    while True:
        yield {c: (100, tick) for c in range(cores)}
        tick += 100


def test_a_busy_sample_and_a_high_load_leave_the_thread_count_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 31: one core busy in the sample and a load average still counting a finished job chose 1
    thread of 2; the identical next run 2. The count does not look at either."""
    _fake_machine(monkeypatch, tmp_path, cores=2)
    samples = _burst_then_idle(2)
    # a real (short) sleep: the sample subtracts this process's own CPU time per second of the window
    nap = lambda s: time.sleep(0.05)  # noqa: E731
    busy = choose_threads(0, sample=lambda: next(samples), sleep=nap, loadavg=lambda: 1.82)
    idle = choose_threads(0, sample=lambda: next(samples), sleep=nap, loadavg=lambda: 0.0)
    assert busy.busy_cores == pytest.approx(1.0, abs=0.3) and busy.load1 == 1.82
    assert busy.taken_cores == 1  # the wait policy still hears of it (simul.machine.openmp)
    assert idle.taken_cores == 0
    assert busy.threads == idle.threads == 2
    assert busy.source == idle.source == "auto"


def test_choose_threads_records_the_quota(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_machine(monkeypatch, tmp_path, cores=8, cpu_max="350000 100000\n")
    quiet = iter([{0: (0, 0)}, {0: (0, 100)}])
    choice = choose_threads(None, sample=lambda: next(quiet), sleep=lambda s: None, loadavg=lambda: 0.0)
    assert choice.threads == 3 and choice.physical_cores == 8 and choice.cpus == 8
    recorded = choice.to_json()
    assert recorded["cpu_quota"]["cpus"] == 3.5
    assert recorded["cpu_quota"]["file"].endswith("sys/fs/cgroup/cpu.max")
    assert fewer_threads_note(recorded) == (
        "3 threads on 8 physical cores: the cgroup CPU quota allows 3.5 CPUs"
    )


def test_choose_threads_records_how(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_machine(monkeypatch, tmp_path, cores=2)
    quiet = iter([{0: (0, 0), 1: (0, 0)}, {0: (0, 100), 1: (0, 100)}])
    given = choose_threads(3, sample=lambda: next(quiet), sleep=lambda s: None, loadavg=lambda: 0.1)
    # sampled with --threads too: the OpenMP wait policy is chosen from the same sample
    assert given.threads == 3 and given.source == "--threads" and given.busy_cores == 0.0
    assert given.taken_cores == 0
    samples = iter([{0: (0, 0), 1: (0, 0)}, {0: (100, 100), 1: (0, 100)}])
    auto = choose_threads(0, sample=lambda: next(samples), sleep=lambda s: None, loadavg=lambda: 1.25)
    assert auto.source == "auto" and auto.load1 == 1.25
    assert auto.to_json()["threads"] == auto.threads == 2
    assert auto.to_json()["cpu_quota"] is None
    with pytest.raises(ValueError, match="0 \\(automatic\\) or more"):
        choose_threads(-2)


def _record(**fields: Any) -> dict[str, Any]:
    base = {"threads": 2, "source": "auto", "cpus": 2, "physical_cores": 2, "machine_cpus": 2}
    return {**base, "cpu_quota": None, **fields}


@pytest.mark.parametrize(
    ("record", "note"),
    [
        (_record(), None),  # every core
        (_record(threads=4, source="--threads"), None),  # more threads than cores: not fewer
        (_record(threads=1, source="--threads"), "1 thread on 2 physical cores: --threads 1"),
        (
            _record(threads=8, cpus=32, physical_cores=16, machine_cpus=32),
            "8 threads on 16 physical cores: automatic threads stop at 8",
        ),
        (
            _record(threads=2, cpus=2, physical_cores=2, machine_cpus=16),
            "2 threads on 2 physical cores of 2 usable CPUs (the machine has 16): the affinity mask allows "
            "2 of the machine's 16 CPUs",
        ),
        (
            _record(threads=2, cpus=64, physical_cores=32, machine_cpus=64, cpu_quota={"cpus": 2.0}),
            "2 threads on 32 physical cores: the cgroup CPU quota allows 2 CPUs",
        ),
        (
            # written before issue 31: no cpu_quota field, and the sample took a core
            {"threads": 1, "source": "auto", "cpus": 2, "physical_cores": 2, "busy_cores": 1.0, "load1": 1.8},
            "1 thread on 2 physical cores: cores taken by other work at start "
            "(an older simul left them alone)",
        ),
        (None, None),
        ({"threads": "\x1f", "physical_cores": 2}, None),  # a hostile record shows nothing
        (_record(threads=1, physical_cores=True), None),
    ],
)
def test_fewer_threads_note(record: Any, note: str | None) -> None:
    assert fewer_threads_note(record) == note


def test_negative_threads_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "--threads", "-1", "--limit", "1"])
    assert result.exit_code == 2


def test_back_to_back_evals_choose_the_same_threads(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    tiny_backend: LlamaBackend,  # llama.cpp loaded, its wait policy chosen, before the fakes below
    tiny_model: Path,
    streams_file: Path,
) -> None:
    """Issue 31's "Done when": the first `simul eval` starts while a short CPU burst runs and the load
    average still counts a finished job, the identical second one on an idle machine; both choose the same
    (automatic) threads and decode the same outputs. (The tiny model's size would hold it to one thread:
    that rule is lifted here, so that the burst had a count to change.)"""
    _fake_machine(monkeypatch, tmp_path, cores=2)
    monkeypatch.setattr(threads_module, "BYTES_PER_THREAD", 1)
    samples = _burst_then_idle(2)
    monkeypatch.setattr(threads_module, "read_cpu_times", lambda: next(samples))
    loads = iter([1.82, 0.9])
    monkeypatch.setattr(threads_module, "load_average", lambda: next(loads))
    runs = []
    for name in ("first", "second"):
        out = tmp_path / name
        args = eval_args(tiny_model, streams_file, "--limit", "2", "--out", str(out))
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        runs.append(out)
    choices = [json.loads((out / "run.json").read_text())["environment"]["thread_choice"] for out in runs]
    assert choices[0]["busy_cores"] >= 0.5 and choices[0]["load1"] == 1.82  # the burst was seen
    assert choices[1]["busy_cores"] == 0.0
    assert choices[0]["threads"] == choices[1]["threads"] == 2
    configs = [json.loads((out / "run.json").read_text())["config"] for out in runs]
    assert configs[0]["threads"] == configs[1]["threads"] == 2
    assert (runs[0] / "steps.jsonl").read_bytes() == (runs[1] / "steps.jsonl").read_bytes()


def test_the_caption_says_why_fewer_threads_than_cores(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    tiny_backend: LlamaBackend,
    tiny_model: Path,
    streams_file: Path,
) -> None:
    """A container's CPU quota of 1.5 CPUs on 2 cores: 1 thread, recorded, and the table says why."""
    _fake_machine(monkeypatch, tmp_path, cores=2, cpu_max="150000 100000\n")
    out = tmp_path / "run"
    args = eval_args(tiny_model, streams_file, "--limit", "1", "--out", str(out))
    args.remove("--quiet")
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    choice = json.loads((out / "run.json").read_text())["environment"]["thread_choice"]
    assert choice["threads"] == 1 and choice["cpu_quota"]["cpus"] == 1.5
    assert "1 thread on 2 physical cores: the cgroup CPU quota allows 1.5 CPUs" in result.output
    scored = CliRunner().invoke(app, ["score", str(out)])
    assert "1 thread on 2 physical cores: the cgroup CPU quota allows 1.5 CPUs" in scored.output

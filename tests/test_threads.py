"""The automatic thread count: physical cores that other work is not using, at most 8."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.machine.threads import (
    MAX_AUTO_THREADS,
    auto_threads,
    busy_cores,
    choose_threads,
    physical_cores,
    read_cpu_times,
)


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


@pytest.mark.parametrize(
    ("physical", "busy", "load1", "threads"),
    [
        (2, 0.0, 0.1, 2),
        (2, 0.4, 3.0, 2),  # a browser tab: rounds to no core
        (2, 1.0, 1.0, 1),  # a job that has been competing for a while, on one core
        (2, 1.0, 0.1, 2),  # a burst, or a job that has only just started: not sustained
        (2, 0.0, 2.0, 2),  # the load of a run that has just finished (our own, say): not current
        (2, 7.0, 9.0, 1),  # at least one
        (2, None, 3.0, 2),  # not measured
        (2, 1.0, None, 2),
        (16, 0.0, 0.0, MAX_AUTO_THREADS),
        (16, 10.0, 12.0, 6),
        (1, 0.0, 0.0, 1),
    ],
)
def test_auto_rule(physical: int, busy: float | None, load1: float | None, threads: int) -> None:
    assert auto_threads(physical, busy, load1) == threads


def test_choose_threads_records_how() -> None:
    quiet = iter([{0: (0, 0), 1: (0, 0)}, {0: (0, 100), 1: (0, 100)}])
    given = choose_threads(3, sample=lambda: next(quiet), sleep=lambda s: None, loadavg=lambda: 0.1)
    # sampled with --threads too: the OpenMP wait policy is chosen from the same sample
    assert given.threads == 3 and given.source == "--threads" and given.busy_cores == 0.0
    assert given.taken_cores == 0
    samples = iter([{0: (0, 0), 1: (0, 0)}, {0: (100, 100), 1: (0, 100)}])
    auto = choose_threads(0, sample=lambda: next(samples), sleep=lambda s: None, loadavg=lambda: 1.25)
    assert auto.source == "auto" and auto.load1 == 1.25
    assert auto.to_json()["threads"] == auto.threads >= 1
    with pytest.raises(ValueError, match="0 \\(automatic\\) or more"):
        choose_threads(-2)


def test_negative_threads_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "--threads", "-1", "--limit", "1"])
    assert result.exit_code == 2

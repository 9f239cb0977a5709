"""tools/contention_check.py: its variants and how it reads runs (no timings)."""

from __future__ import annotations

from types import ModuleType

import pytest

from tests.helpers import load_tool


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    return load_tool("contention_check")


def test_variant_splits_environment_from_options(tool: ModuleType) -> None:
    variant = tool.parse_variant("active2=OMP_WAIT_POLICY=active GOMP_SPINCOUNT=10 --threads 2 --fuse")
    assert variant.name == "active2"
    assert variant.env == {"OMP_WAIT_POLICY": "active", "GOMP_SPINCOUNT": "10"}
    assert variant.args == ["--threads", "2", "--fuse"]
    assert tool.parse_variant("plain=").args == []
    with pytest.raises(SystemExit, match="NAME=SETTINGS"):
        tool.parse_variant("no settings")


def test_loaded_costs_compare_the_variants_next_to_the_competitor(tool: ModuleType) -> None:
    def run(variant: str, condition: str, wall: float, timed_out: bool = False) -> dict[str, object]:
        return {"variant": variant, "condition": condition, "wall_seconds": wall, "timed_out": timed_out}

    summaries = [
        run("default", "idle", 10.0),
        run("default", "loaded", 30.0),
        run("default", "loaded", 20.0),
        run("one-thread", "loaded", 16.0),
        run("one-thread", "loaded", 900.0, timed_out=True),  # a lower bound, left out
        run("idle-only", "idle", 9.0),
    ]
    assert tool.loaded_costs(summaries) == {"default": 25.0, "one-thread": 16.0}


def test_describe_run_reads_the_thread_record(tool: ModuleType) -> None:
    summary = {
        "openmp": {"wait_policy": "passive", "set_by": "simul", "runtimes": ["libgomp.so.1"]},
        "thread_choice": {
            "source": "auto",
            "physical_cores": 2,
            "cpus": 2,
            "machine_cpus": 2,
            "cpu_quota": {"cpus": 1.5},
            "busy_cores": 1.0,
            "load1": 1.82,
        },
        "threads": 1,
        "methods": {},
        "tps": {},
        "marked_unreliable": False,
    }
    lines = tool.describe_run(summary)
    assert "threads 1 (auto; 2 physical cores, 2 CPUs of 2, CPU quota 1.5 CPUs;" in lines[1]
    summary["thread_choice"] = {"source": "auto", "physical_cores": 2, "cpus": 2}  # written before issue 31
    assert "CPU quota none" in tool.describe_run(summary)[1]

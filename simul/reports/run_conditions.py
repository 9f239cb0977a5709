"""Where and how a run decoded, as its run.json recorded it: the devices, layers, threads and batching, and
how llama.cpp's CPU threads waited. `simul diff` notes when two runs differ in either, since their timing
metrics then say nothing about the code (simul.reports.compare)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def hardware_summary(run: Mapping[str, Any]) -> str:
    """Where a run decoded: its devices (as llama.cpp reports them), GPU layers, threads and parallelism."""
    # "environment" is a record of where the run was made, not checked when a run is read: take what has
    # the expected shape and ignore the rest.
    env = _mapping(run.get("environment"))
    config = _mapping(run.get("config"))
    hardware = _mapping(env.get("hardware"))
    listed = hardware.get("devices")
    devices = [d for d in listed if isinstance(d, dict)] if isinstance(listed, list) else []
    if devices:
        names = "; ".join(f"{d.get('name')} {d.get('description')}".strip() for d in devices)
    else:
        names = f"CPU {env.get('cpu', '?')}"
    layers = hardware.get("offloaded_layers", 0)
    return (
        f"{names}, {layers} layers offloaded, {env.get('threads', '?')} threads, "
        f"parallel {config.get('parallel', 1)}"
    )


def hardware_difference(base: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """A description of both sides when the hardware or the batching differ, else None."""
    b, n = hardware_summary(base), hardware_summary(new)
    return None if b == n else f"base: {b}; new: {n}"


def wait_policy_summary(run: Mapping[str, Any]) -> str:
    """How llama.cpp's CPU threads waited (simul.machine.openmp): OpenMP policy, spin count and runtime."""
    omp = _mapping(_mapping(run.get("environment")).get("openmp"))
    if not omp:
        return "not recorded"
    policy = omp.get("wait_policy", "?")
    spin = omp.get("gomp_spincount")
    runtimes = omp.get("runtimes")
    names = ", ".join(str(r) for r in runtimes) if isinstance(runtimes, list) and runtimes else "no OpenMP"
    return f"{policy}" + (f", GOMP_SPINCOUNT={spin}" if spin else "") + f" ({names})"


def wait_policy_difference(base: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """Both sides' wait policies when they differ, else None (speed figures depend on it: issue 23)."""
    b, n = wait_policy_summary(base), wait_policy_summary(new)
    return None if b == n else f"base: {b}; new: {n}"

"""Where and how a run decoded, as its run.json recorded it: the devices, layers, threads and batching, and
how llama.cpp's CPU threads waited. `simul diff` notes when two runs differ in either, since their timing
metrics then say nothing about the code (simul.reports.compare). Also the provenance that run.json records
beside the signatures: the package versions and the CPU's instruction sets
(simul.machine.environment), which `simul diff` notes naming both sides."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simul.machine.environment import PACKAGES, VERSION_KEYS, isa_difference
from simul.metrics.signatures import ProvenanceChange, short

_PACKAGE_NAMES = {"simul": "simul", **PACKAGES, "python": "Python"}


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
    """Both sides' wait policies when they differ, else None (speed figures depend on the policy)."""
    b, n = wait_policy_summary(base), wait_policy_summary(new)
    return None if b == n else f"base: {b}; new: {n}"


def _version(value: Any) -> str:
    return "not installed" if value is None else short(value)


def version_changes(base: Mapping[str, Any], new: Mapping[str, Any]) -> list[ProvenanceChange]:
    """The recorded package versions that differ, simul's own first. A package that one run does not
    record at all (run files written before simul recorded it) is not compared; one recorded as not
    installed is. simul's own version is never refused by ``--strict-versions``: it is the code under test."""
    eb, en = _mapping(base.get("environment")), _mapping(new.get("environment"))
    out = []
    for key in VERSION_KEYS:
        if key in eb and key in en and eb[key] != en[key]:
            out.append(
                ProvenanceChange(
                    _PACKAGE_NAMES[key], _version(eb[key]), _version(en[key]), strict=key != "simul"
                )
            )
    return out


def isa_change(base: Mapping[str, Any], new: Mapping[str, Any]) -> ProvenanceChange | None:
    """The CPU instruction sets when both runs recorded them and they differ (noted, never refused by diff:
    what a CI runner's CPU is cannot be pinned)."""
    eb, en = _mapping(base.get("environment")), _mapping(new.get("environment"))
    differs = isa_difference(eb.get("cpu_isa"), en.get("cpu_isa"))
    if differs is None:
        return None
    b_only, n_only = (short(x, limit=200) for x in differs)
    return ProvenanceChange("CPU instruction sets", b_only, n_only, strict=False)

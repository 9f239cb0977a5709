"""OpenMP's wait policy for llama.cpp's CPU threads, chosen before the library is loaded.

llama.cpp's CPU backend (ggml-cpu, built with ``GGML_OPENMP=ON``, the default, as ``make setup`` builds it)
runs each forward pass in an OpenMP parallel region and makes its threads meet at ``#pragma omp barrier``
after every operation of the graph: hundreds of barriers per token. How a thread waits at a barrier is
OpenMP's *wait policy*. GNU libgomp reads it from the environment once, when the library is loaded (that is,
when ``llama_cpp`` is imported); it cannot be changed afterwards:

    OMP_WAIT_POLICY=active    spin for up to 3e10 iterations (minutes), i.e. always spin
    (unset)                   spin 300000 iterations (about 3 ms), then sleep on a futex
    OMP_WAIT_POLICY=passive   sleep at once (spin count 0)
    GOMP_SPINCOUNT=N          spin N iterations whatever the policy says (libgomp's env.c)

On an idle machine spinning saves a futex wake-up per barrier (13% of a `simul eval` on 2 idle cores). On a
busy one it is ruinous: a spinning thread holds its core, so the scheduler cannot move the thread it waits
for (queued behind another job) onto it, and every one of the hundreds of barriers per token pays for that:
more than 4x slower next to one CPU-bound job on 2 cores, 5-10x under load 10-15 (docs/results.md, "Busy
machines"). simul therefore sets ``passive`` unless the user chose a policy (``OMP_WAIT_POLICY``) or a spin
count (``GOMP_SPINCOUNT``) themselves.

llama.cpp's own thread pool settings (``ggml_threadpool_params.poll``, the hybrid polling level) apply only
to builds without OpenMP; in an OpenMP build ggml uses the pool for priority and CPU masks only, and
llama_context_params exposes no waiting setting. ggml sets ``KMP_BLOCKTIME=200`` (ms) for LLVM/Intel OpenMP
runtimes, which libgomp does not read.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

POLICY_ENV = "OMP_WAIT_POLICY"
SPIN_ENV = "GOMP_SPINCOUNT"
CHOSEN_POLICY = "passive"
# Shared libraries of OpenMP runtimes, as they appear in /proc/self/maps.
RUNTIME_NAMES = ("libgomp", "libomp", "libiomp")


@dataclass(frozen=True)
class WaitPolicy:
    """The wait policy in force for llama.cpp's threads, and who chose it."""

    policy: str | None  # OMP_WAIT_POLICY as set; None: the runtime's default (spin a while, then sleep)
    set_by: str  # "simul", "user", or "nobody" (nothing set: the runtime's default)
    spin_count: str | None  # GOMP_SPINCOUNT when set (it overrides the policy's spin count in libgomp)
    in_time: bool  # False when llama_cpp was already imported: the setting came too late to matter

    def to_json(self) -> dict[str, Any]:
        return {
            "wait_policy": self.policy if self.policy is not None else "runtime default",
            "set_by": self.set_by,
            "gomp_spincount": self.spin_count,
            "in_time": self.in_time,
        }


_chosen: WaitPolicy | None = None


def choose_wait_policy(environ: MutableMapping[str, str] | None = None) -> WaitPolicy:
    """Set ``OMP_WAIT_POLICY=passive`` unless the user set it or ``GOMP_SPINCOUNT``; call before llama_cpp
    is imported. Idempotent: the first call decides."""
    global _chosen
    if environ is None:
        if _chosen is not None:
            return _chosen
        _chosen = decide(os.environ, in_time="llama_cpp" not in sys.modules)
        return _chosen
    return decide(environ, in_time=True)


def decide(environ: MutableMapping[str, str], in_time: bool) -> WaitPolicy:
    """The decision itself, on any environment mapping (tests pass a dict)."""
    policy = environ.get(POLICY_ENV, "").strip() or None
    spin = environ.get(SPIN_ENV, "").strip() or None
    if policy is not None or spin is not None:
        return WaitPolicy(policy=policy, set_by="user", spin_count=spin, in_time=in_time)
    environ[POLICY_ENV] = CHOSEN_POLICY
    return WaitPolicy(policy=CHOSEN_POLICY, set_by="simul", spin_count=None, in_time=in_time)


def loaded_runtimes(maps: Path = Path("/proc/self/maps")) -> list[str]:
    """File names of the OpenMP runtimes mapped into this process (Linux; empty elsewhere)."""
    try:
        text = maps.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    names = set()
    for line in text.splitlines():
        path = line.rsplit(" ", 1)[-1]
        name = path.rsplit("/", 1)[-1]
        if name.startswith(RUNTIME_NAMES) and ".so" in name:
            names.add(name)
    return sorted(names)


def record() -> dict[str, Any]:
    """What run.json's environment says about OpenMP: the policy, who set it, and the runtimes loaded."""
    chosen = _chosen if _chosen is not None else current()
    return {**chosen.to_json(), "runtimes": loaded_runtimes()}


def current() -> WaitPolicy:
    """The policy as the environment shows it, without changing anything."""
    policy = os.environ.get(POLICY_ENV, "").strip() or None
    spin = os.environ.get(SPIN_ENV, "").strip() or None
    return WaitPolicy(
        policy=policy,
        set_by="user" if policy is not None or spin is not None else "nobody",
        spin_count=spin,
        in_time="llama_cpp" not in sys.modules,
    )

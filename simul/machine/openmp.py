"""OpenMP's wait policy for llama.cpp's CPU threads, chosen before the library is loaded.

llama.cpp's CPU backend (ggml-cpu, built with ``GGML_OPENMP=ON``, the default, as ``make setup`` builds it)
runs each forward pass in an OpenMP parallel region and makes its threads meet at ``#pragma omp barrier``
after every operation of the graph: hundreds of barriers per token. How a thread waits at a barrier is
OpenMP's *wait policy*. GNU libgomp reads it from the environment once, when the library is loaded (that is,
when ``llama_cpp`` is imported); it cannot be changed afterwards:

    OMP_WAIT_POLICY=active    spin for up to 3e10 iterations (minutes), i.e. always spin
    (unset)                   spin 300000 iterations, then sleep on a futex
    OMP_WAIT_POLICY=passive   sleep at once (spin count 0)
    GOMP_SPINCOUNT=N          spin N iterations, then sleep, whatever the policy says (libgomp's env.c)

An iteration is one ``pause`` instruction and a load: from about 10 ns (libgomp's own estimate) to about
50 ns (recent Intel cores, where ``pause`` takes some 140 cycles).

What simul chooses, unless the user set ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` (the figures are in
docs/results.md, "OpenMP waiting"):

* **No core taken by other work** (simul.machine.threads' CPU sample before the model loads):
  ``GOMP_SPINCOUNT=IDLE_SPIN`` with ``OMP_WAIT_POLICY=active``, a bounded spin. (The spin count overrides the
  policy's; ``active`` matters only where the process has more OpenMP threads than CPUs, as in `simul bench
  --parallel`, whose two lanes each keep a team: libgomp then *throttles* the spin to 100 iterations, or to
  min(1000, GOMP_SPINCOUNT) under ``active``. With 100 the N = 1 lane waited almost as if passive: a
  one-token pass of 31.1 ms, 1.08x faster than one thread.)
  A barrier inside a pass is reached within microseconds by every thread, so a few thousand iterations
  catch nearly all of *those* without a futex wake-up: on 2 idle cores a one-token pass of the default
  model took 17.5 ms with any spin from 1000 iterations to ``active``, and 33 ms with ``passive`` (a
  sleeping thread's wake-up at every barrier; one thread alone: 32 ms). But a whole run also waits
  *between* passes, while Python picks the next token or prepares the next step, and a thread that slept
  there pays a wake-up at the next pass; on a KVM guest that wake-up is dear. On a 2-core Intel Xeon (KVM,
  2026-12-02, `tools/wait_policies.py`, 8-11 processes per variant) 3000 iterations ran `simul bench` at
  0.93 (RT) and 0.90 (SSBD) of ``active``'s tokens per second, 30000 at 0.95 / 0.97, and 3,000,000 at
  0.99 / 1.00 of ``active`` in the same cycles; on an AMD EPYC Zen 3, 3000 was already level with
  ``active``. So the bound is :data:`IDLE_SPIN` = 3,000,000 iterations: some 30-150 ms, which covers the
  gaps of a decoding loop, and still gives the core back soon after the last pass (before scoring, for
  instance), which ``active``'s 3e10 does not.
* **A core taken** (the same sample and the load average agree): ``passive``, so that a spinning thread
  never holds a core that the thread it waits for needs. The thread count does not follow the load
  (simul.machine.threads: outputs and speed figures must not depend on a passing burst), so next
  to a busy core one thread shares it, and sleeping at once is what costs the others least.

Why not always spin: next to a busy core 2 spinning threads made a one-token pass 1.2-3x slower than with
``passive`` (active 41 ms, libgomp's default 108 ms against 34 ms; one thread 32 ms), and on the earlier
AMD EPYC machine 10-40x. Why not always sleep: it made every run on an idle machine up to 1.8x slower, and
it inflated SSBD's speedup, since RT's one-token passes pay the wake-ups more than SSBD's wide ones.
llama.cpp built without OpenMP (``-DGGML_OPENMP=OFF``: ggml's own thread pool, which spins at barriers)
was as fast as the bounded spin on idle cores (17.6 ms) and slower next to a busy one (71 ms).

llama.cpp's own thread pool settings (``ggml_threadpool_params.poll``, the hybrid polling level) apply only
to builds without OpenMP; in an OpenMP build ggml uses the pool for priority and CPU masks only, and
llama_context_params exposes no waiting setting. ggml sets ``KMP_BLOCKTIME=200`` (ms) for LLVM/Intel OpenMP
runtimes, which libgomp does not read.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

POLICY_ENV = "OMP_WAIT_POLICY"
SPIN_ENV = "GOMP_SPINCOUNT"
IDLE_SPIN = "3000000"  # GOMP_SPINCOUNT when no core is taken by other work (see the module docstring)
IDLE_POLICY = "active"  # with IDLE_SPIN: a bounded spin (GOMP_SPINCOUNT overrides the policy's own count)
BUSY_POLICY = "passive"  # OMP_WAIT_POLICY when a core is taken
# Shared libraries of OpenMP runtimes, as they appear in /proc/self/maps.
RUNTIME_NAMES = ("libgomp", "libomp", "libiomp")


@dataclass(frozen=True)
class WaitPolicy:
    """The wait policy in force for llama.cpp's threads, and who chose it."""

    policy: str | None  # OMP_WAIT_POLICY as set; None: the runtime's default (spin a while, then sleep)
    set_by: str  # "simul", "user", or "nobody" (nothing set: the runtime's default)
    spin_count: str | None  # GOMP_SPINCOUNT when set (it overrides the policy's spin count in libgomp)
    in_time: bool  # False when llama_cpp was already imported: the setting came too late to matter
    reason: str = ""  # why simul chose it (empty when simul did not choose)

    def to_json(self) -> dict[str, Any]:
        return {
            "wait_policy": self.policy if self.policy is not None else "runtime default",
            "set_by": self.set_by,
            "gomp_spincount": self.spin_count,
            "in_time": self.in_time,
            "reason": self.reason,
        }


_chosen: WaitPolicy | None = None


def choose_wait_policy(
    taken_cores: int | None = None, environ: MutableMapping[str, str] | None = None, note: str = ""
) -> WaitPolicy:
    """Set the wait policy for the CPU sample's verdict (``taken_cores``: whole cores other work held when
    the threads were chosen, simul.machine.threads) unless the user set ``OMP_WAIT_POLICY`` or
    ``GOMP_SPINCOUNT``; call before llama_cpp is imported. In the process's environment the first call
    decides; None: not measured, taken as idle. ``note`` is added to the recorded reason."""
    global _chosen
    if environ is None:
        if _chosen is not None:
            return _chosen
        _chosen = decide(os.environ, in_time="llama_cpp" not in sys.modules, taken_cores=taken_cores)
        if note:
            _chosen = replace(_chosen, reason="; ".join(filter(None, (_chosen.reason, note))))
        return _chosen
    return decide(environ, in_time=True, taken_cores=taken_cores)


def wait_policy_chosen() -> bool:
    """Whether this process has chosen its wait policy (llama.cpp is loaded with it)."""
    return _chosen is not None


def decide(environ: MutableMapping[str, str], in_time: bool, taken_cores: int | None = None) -> WaitPolicy:
    """The decision itself, on any environment mapping (tests pass a dict)."""
    policy = environ.get(POLICY_ENV, "").strip() or None
    spin = environ.get(SPIN_ENV, "").strip() or None
    if policy is not None or spin is not None:
        return WaitPolicy(policy=policy, set_by="user", spin_count=spin, in_time=in_time)
    if taken_cores:
        environ[POLICY_ENV] = BUSY_POLICY
        why = (
            f"{taken_cores} core{'s' if taken_cores != 1 else ''} taken by other work at start: threads "
            "sleep at once at a barrier, leaving their core to the thread they wait for"
        )
        return WaitPolicy(BUSY_POLICY, "simul", None, in_time, why)
    # GOMP_SPINCOUNT bounds the spin; "active" only raises libgomp's *throttled* spin count (used when the
    # process has more OpenMP threads than CPUs, as when `simul bench --parallel` runs two contexts in two
    # threads) from 100 iterations to min(1000, GOMP_SPINCOUNT), which keeps such runs from waiting as if
    # passive.
    environ[POLICY_ENV] = IDLE_POLICY
    environ[SPIN_ENV] = IDLE_SPIN
    why = (
        "no core taken by other work at start"
        + (" (not measured)" if taken_cores is None else "")
        + f": threads spin {IDLE_SPIN} iterations at a barrier before they sleep"
    )
    return WaitPolicy(IDLE_POLICY, "simul", IDLE_SPIN, in_time, why)


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

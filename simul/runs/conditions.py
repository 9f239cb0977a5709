"""What must be equal for streams decoded by two processes to make one run (`simul merge`, `eval --resume`).

llama.cpp's CPU kernels split a matrix product across the threads and pick their code by the CPU's
instruction sets, and each llama-cpp-python release ships other kernels: a different thread count, instruction
set family or llama-cpp-python version sums in another order, the logits differ in the last bits, and a
near-tie can flip a greedy output (the Makefile's note on the tiny test model). A run whose streams were
decoded under different conditions would hold outputs no single process gives, so merge and resume refuse
it, naming what differs. A condition that one side did not record (run files written before simul recorded
``cpu_isa``) is not compared. In exact mode (both runs' ``config.exact``) a row's arithmetic does not
depend on how the threads share a product (simul.decoding.backend.exactness; tests/test_exact.py), so the
thread count is not a condition there; the instruction sets and the library still are (other kernels).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simul.machine.environment import isa_difference
from simul.metrics.signatures import short


@dataclass(frozen=True)
class ConditionChange:
    """A decoding condition that differs: its place in run.json, both values and what to do about it."""

    field: str  # e.g. "config.threads"
    first: str
    second: str
    fix: str


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def decoding_differences(first: Mapping[str, Any], second: Mapping[str, Any]) -> list[ConditionChange]:
    """The decoding conditions in which two runs' run.json differ: thread count, llama-cpp-python version and
    the CPU's instruction sets."""
    out = []
    ca, cb = _mapping(first.get("config")), _mapping(second.get("config"))
    ta, tb = ca.get("threads"), cb.get("threads")
    if ta != tb and not (ca.get("exact") is True and cb.get("exact") is True):
        out.append(ConditionChange("config.threads", short(ta), short(tb), "decode with the same --threads"))
    ea, eb = _mapping(first.get("environment")), _mapping(second.get("environment"))
    la, lb = ea.get("llama_cpp_python"), eb.get("llama_cpp_python")
    if la != lb:
        out.append(
            ConditionChange(
                "environment.llama_cpp_python", short(la), short(lb), "install the same llama-cpp-python"
            )
        )
    isa = isa_difference(ea.get("cpu_isa"), eb.get("cpu_isa"))
    if isa is not None:
        first_only, second_only = (short(x, limit=200) for x in isa)
        out.append(
            ConditionChange(
                "environment.cpu_isa",
                first_only,
                second_only,
                "decode on CPUs with the same instruction sets",
            )
        )
    return out

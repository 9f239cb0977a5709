"""What the CPU is: /proc/cpuinfo's instruction-set families, which select the kernels of llama.cpp,
OpenBLAS and CTranslate2 alike (a kernel of another family sums in another order). Run files
(simul.machine.environment) and streams from audio (simul.streams.asr.recognizer) record them."""

from __future__ import annotations

import platform
from pathlib import Path

# The instruction-set families that select llama.cpp's CPU kernels (ggml-cpu's feature checks), by their
# names in /proc/cpuinfo ("flags" on x86-64, "Features" on ARM). A kernel of another family sums in another
# order, so the logits differ in the last bits and a near-tie can flip a greedy choice.
ISA_FLAGS = frozenset(
    {
        # x86-64
        "ssse3",
        "sse4_1",
        "sse4_2",
        "avx",
        "avx2",
        "fma",
        "f16c",
        "bmi2",
        "avx_vnni",
        "avx512f",
        "avx512bw",
        "avx512cd",
        "avx512dq",
        "avx512vl",
        "avx512vbmi",
        "avx512_vnni",
        "avx512_bf16",
        "avx512_fp16",
        "amx_tile",
        "amx_int8",
        "amx_bf16",
        # ARM
        "asimd",
        "asimddp",
        "asimdhp",
        "fphp",
        "i8mm",
        "bf16",
        "sve",
        "sve2",
        "sme",
    }
)


def is_x86_64() -> bool:
    """Whether this is an x86-64 machine: the only one with llama.cpp's tile kernels and with MKL in
    CTranslate2's wheels."""
    return platform.machine().lower() in ("x86_64", "amd64")


def read_cpuinfo() -> str | None:
    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def cpu_isa(cpuinfo: str | None = None) -> list[str] | None:
    """The CPU's instruction-set families among :data:`ISA_FLAGS`, sorted (None when /proc/cpuinfo cannot
    be read, e.g. on macOS). The first processor's line stands for all: the cores of one machine share
    their vector units' instruction sets."""
    text = read_cpuinfo() if cpuinfo is None else cpuinfo
    if text is None:
        return None
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() in ("flags", "Features"):
            return sorted(set(value.split()) & ISA_FLAGS)
    return None

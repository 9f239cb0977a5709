"""Facts about the machine and software a run was made with.

``environment()`` records, in run.json, the version of every package that can move a score or an output
(:data:`PACKAGES`; ``None`` for one that is not installed) and the CPU's instruction-set families
(simul.common.cpu). They are provenance, not parameters: `simul diff` notes where two runs differ in them
(and refuses with ``--strict-versions``); `simul merge` and `simul eval --resume` refuse to join streams
decoded under different llama-cpp-python versions or instruction sets (simul.runs.conditions).
"""

from __future__ import annotations

import datetime as _dt
import platform
from importlib import metadata
from typing import Any

from simul import __version__
from simul.common.cpu import cpu_isa, read_cpuinfo

# run.json key -> distribution name, for every package whose version can move a figure: llama-cpp-python
# decodes (its kernels decide near-ties); sacrebleu, unbabel-comet with torch, OmniSTEval and mweralign
# (long-form re-segmentation), numpy and sentencepiece (flores101) compute the scores.
PACKAGES: dict[str, str] = {
    "llama_cpp_python": "llama-cpp-python",
    "sacrebleu": "sacrebleu",
    "unbabel_comet": "unbabel-comet",
    "torch": "torch",
    "omnisteval": "omnisteval",
    "mweralign": "mweralign",
    "numpy": "numpy",
    "sentencepiece": "sentencepiece",
}
# Every version run.json records, in the order notes list them.
VERSION_KEYS: tuple[str, ...] = ("simul", *PACKAGES, "python")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def package_versions() -> dict[str, str | None]:
    """The versions of simul, of every package in :data:`PACKAGES` (None: not installed) and of Python."""
    versions: dict[str, str | None] = {"simul": __version__}
    versions.update({key: _version(dist) for key, dist in PACKAGES.items()})
    versions["python"] = platform.python_version()
    return versions


def cpu_model(cpuinfo: str | None = None) -> str:
    text = read_cpuinfo() if cpuinfo is None else cpuinfo
    for line in (text or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def environment(threads: int) -> dict[str, Any]:
    cpuinfo = read_cpuinfo()
    return {
        **package_versions(),
        "platform": platform.platform(),
        "cpu": cpu_model(cpuinfo or ""),
        "cpu_isa": cpu_isa(cpuinfo) if cpuinfo is not None else None,
        "threads": threads,
    }


def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def isa_difference(a: Any, b: Any) -> tuple[str, str] | None:
    """How two recorded ``cpu_isa`` lists differ: the instruction sets only the first has and those only
    the second has, e.g. ``("+avx512bw +avx512f", "none of those")``; None when they are the same or either
    is not a recorded list (a run written before simul recorded it, or a machine without /proc/cpuinfo)."""
    if not isinstance(a, list) or not isinstance(b, list):
        return None
    sa, sb = {str(x) for x in a}, {str(x) for x in b}
    if sa == sb:
        return None

    def only(flags: set[str]) -> str:
        return " ".join(f"+{flag}" for flag in sorted(flags)) if flags else "none of those"

    return only(sa - sb), only(sb - sa)

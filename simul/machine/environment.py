"""Facts about the machine and software a run was made with (recorded, never compared for equality)."""

from __future__ import annotations

import datetime as _dt
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from simul import __version__


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(threads: int) -> dict[str, Any]:
    return {
        "simul": __version__,
        "llama_cpp_python": _version("llama-cpp-python"),
        "sacrebleu": _version("sacrebleu"),
        "unbabel_comet": _version("unbabel-comet"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "threads": threads,
    }


def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")

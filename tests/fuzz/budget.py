"""How many examples each property runs, and the tally of inputs actually tried per reader."""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from pathlib import Path

TRIED: Counter[str] = Counter()
LONG_EXAMPLES = 10_000


def long_run() -> bool:
    return os.environ.get("SIMUL_FUZZ", "").lower() == "long"


def examples(ci: int) -> int:
    """``ci`` examples in CI; ``SIMUL_FUZZ_EXAMPLES`` (default 10,000) in a long run."""
    if long_run():
        return int(os.environ.get("SIMUL_FUZZ_EXAMPLES", LONG_EXAMPLES))
    return ci


def tried(reader: str) -> None:
    TRIED[reader] += 1
    if long_run() and sum(TRIED.values()) % 250 == 0:
        write_report()  # a long run that is stopped early still says how far it got


def write_report() -> None:
    """The counts so far, as JSON, to ``$SIMUL_FUZZ_REPORT`` when it is set."""
    report = os.environ.get("SIMUL_FUZZ_REPORT")
    if report:
        text = json.dumps(dict(sorted(TRIED.items())), indent=2) + "\n"
        Path(report).write_text(text, encoding="utf-8")


def _scratch_root() -> str | None:
    """A memory file system for the many small files of the suite when there is one (much faster than a
    disk on a loaded machine); the system's temporary folder otherwise."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def scratch() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="simul-fuzz-", dir=_scratch_root())

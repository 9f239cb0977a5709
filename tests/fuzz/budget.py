"""How many examples each property runs, and the tally of inputs actually tried per reader."""

from __future__ import annotations

import os
from collections import Counter

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

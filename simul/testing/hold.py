"""A test-only pause in `simul eval`'s decoding loop, so that a test can stop a run at a known point.

With ``SIMUL_TEST_HOLD_AFTER=N`` in its environment, `simul eval` waits after it has written its N-th stream
(the streams of an earlier run that ``--resume`` keeps count too), until a signal ends the wait: SIGTERM or
Ctrl-C then finds the run with exactly N streams done, on any machine, instead of wherever a race left it.
``SIMUL_TEST_HOLD_MARK=PATH`` names a file written when the wait begins, for the test to wait on. Unset (the
default), the loop reads nothing and never waits.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

HOLD_ENV = "SIMUL_TEST_HOLD_AFTER"
MARK_ENV = "SIMUL_TEST_HOLD_MARK"


def hold_after() -> int | None:
    """The stream count to wait after, from the environment (None: no waiting)."""
    value = os.environ.get(HOLD_ENV, "").strip()
    return int(value) if value.isdigit() else None


def hold(done: int) -> None:
    """Wait until a signal handler raises (SIGTERM, SIGINT); first write the mark file, if one is named."""
    mark = os.environ.get(MARK_ENV)
    if mark:
        Path(mark).write_text(f"{done}\n", encoding="utf-8")
    while True:
        time.sleep(3600)

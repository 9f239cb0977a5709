"""A test-only fake out-of-memory kill in the XCOMET child process (simul.metrics.xcomet_worker).

With ``SIMUL_TEST_KILL_AT=load`` (or ``score``) in its environment, the child sends itself SIGKILL when it
reaches that point, exactly as the kernel's out-of-memory killer ends a process: no handler runs, no answer is
written, and its parent sees the pipe close and the exit status -9. Unset (the default), nothing happens.
"""

from __future__ import annotations

import os
import signal

KILL_ENV = "SIMUL_TEST_KILL_AT"


def kill_point(stage: str) -> None:
    """SIGKILL this process when ``SIMUL_TEST_KILL_AT`` names ``stage``."""
    if os.environ.get(KILL_ENV, "").strip() == stage:
        os.kill(os.getpid(), signal.SIGKILL)

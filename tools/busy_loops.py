"""Busy loops that load the machine for a measurement (tools/free_cores.py, contention_check.py,
pass_costs.py): ``python -c 'while True: pass'`` processes, pinned or not, always stopped when the block ends,
on an interrupt too."""

from __future__ import annotations

import os
import subprocess
import sys
import time

LOOP = [sys.executable, "-c", "while True: pass"]
SETTLE_SECONDS = 1.0  # let the loops take their cores before simul samples the machine


class Loops:
    """``k`` busy loops for the duration of a ``with`` block."""

    def __init__(self, k: int, cores: list[int] | None) -> None:
        """``cores``: the CPUs to pin the loops to, round robin, each pinned before it runs a single loop;
        None: not pinned (the kernel balances them with simul's threads, as it does ordinary busy
        processes)."""
        if k and cores is not None and not cores:
            raise ValueError("no cores to pin the loops to")
        self.k, self.cores = k, cores
        self.processes: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Loops:
        try:
            for i in range(self.k):
                if self.cores is None:
                    self.processes.append(subprocess.Popen(LOOP))
                    continue
                core = self.cores[i % len(self.cores)]
                pin = lambda core=core: os.sched_setaffinity(0, {core})  # noqa: E731
                self.processes.append(subprocess.Popen(LOOP, preexec_fn=pin))
            if self.k:
                time.sleep(SETTLE_SECONDS)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait()

#!/usr/bin/env python3
"""Phases in which llama.cpp's threads run many times slower next to busy processes (issue 39's finding).

Decodes the same tiny-model work over and over (20 times: a prompt pass and 30 one-token passes) for
--seconds, and records for each iteration its wall time and what the kernel says about this process's
threads (/proc/self/task/*/schedstat: CPU time run, time waited in the run queue, times scheduled); prints a
summary: the median, and the share of the time spent in iterations slower than 3x the median. Run it beside
the load under study, e.g. two ``python3 -c 'while 1: pass'``; one process per setting (OpenMP reads its wait
policy once):

    python tools/wait_phases.py --threads 2 --policy passive     # what simul chooses when cores are taken
    python tools/wait_phases.py --threads 2 --policy spin        # its bounded spin (idle machine)
    python tools/wait_phases.py --threads 1

Beside two busy loops on 2 cores (issue 39's closing note), two passive threads spent 12-16% of the time in
such phases, the bounded spin none in one run and the whole run in the next (2.25 s an iteration against
0.053 s, burning the CPU), one thread none (0.023 s).
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from simul.decoding.backend import LlamaBackend  # noqa: E402
from simul.machine import openmp  # noqa: E402
from simul.testing.tiny_gguf import build_tiny_gguf  # noqa: E402


def schedstat() -> tuple[float, float, int]:
    """Seconds run, seconds waited on a run queue, and times scheduled, summed over this process's threads."""
    run = wait = slices = 0
    for path in glob.glob("/proc/self/task/*/schedstat"):
        try:
            fields = [int(x) for x in Path(path).read_text().split()]
        except (OSError, ValueError):  # a thread that ended meanwhile
            continue
        run, wait, slices = run + fields[0], wait + fields[1], slices + fields[2]
    return run / 1e9, wait / 1e9, slices


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=100.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--policy", choices=("passive", "spin"), default="passive")
    parser.add_argument("--json", type=Path, default=None, help="also write every iteration here")
    args = parser.parse_args()
    # simul's own choice for a machine with cores taken (passive) or idle (the bounded spin)
    openmp.choose_wait_policy(2 if args.policy == "passive" else 0)
    with tempfile.TemporaryDirectory() as tmp:
        model = build_tiny_gguf(Path(tmp) / "ties.gguf", seed=0, design="random")
        backend = LlamaBackend(model, n_ctx=2048, n_threads=args.threads, exact=True)
        prompt = backend.tokenize("hello world this is a test of the tiny model", add_special=True)
        rows = []
        end = time.time() + args.seconds
        while time.time() < end:
            run0, wait0, slices0 = schedstat()
            start = time.perf_counter()
            for _ in range(20):
                backend.reset()
                backend.eval(prompt, logits_from=len(prompt) - 1)
                for token in prompt[:30]:
                    backend.eval([token], logits_from=0)
            wall = time.perf_counter() - start
            run1, wait1, slices1 = schedstat()
            rows.append(
                {"wall": wall, "run": run1 - run0, "wait": wait1 - wait0, "scheduled": slices1 - slices0}
            )
        backend.close()
    walls = [r["wall"] for r in rows]
    median = statistics.median(walls)
    slow = [r for r in rows if r["wall"] > 3 * median]
    summary = {
        "threads": args.threads,
        "openmp": openmp.record()["wait_policy"],
        "iterations": len(rows),
        "median_s": round(median, 4),
        "mean_s": round(statistics.mean(walls), 4),
        "slow_iterations": len(slow),
        "slow_share_of_time": round(sum(r["wall"] for r in slow) / sum(walls), 3),
        "cpu_per_iteration_s": round(statistics.mean(r["run"] for r in rows), 4),
        "cpu_per_slow_iteration_s": round(statistics.mean(r["run"] for r in slow), 4) if slow else None,
        "load1": round(float(Path("/proc/loadavg").read_text().split()[0]), 2),
    }
    print(json.dumps(summary))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "iterations": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

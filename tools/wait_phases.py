#!/usr/bin/env python3
"""Phases in which llama.cpp's threads run many times slower next to busy processes (issue 39's finding).

Decodes the same tiny-model work over and over (20 times: a prompt pass and 30 one-token passes) for
--seconds, and records for each iteration its wall time, the CPU time of this process's threads and the time
they waited in the run queue (simul.machine.cpu_usage, the meter behind run.json's CPU figures); prints a
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
from simul.machine.cpu_usage import CpuMeter, Usage  # noqa: E402
from simul.testing.tiny_gguf import build_tiny_gguf  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=100.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--policy", choices=("passive", "spin"), default="passive")
    parser.add_argument("--json", type=Path, default=None, help="also write every iteration here")
    parser.add_argument(
        "--repeats", type=int, default=20, help="decodes per iteration (default 20; fewer for gemma)"
    )
    parser.add_argument(
        "--model",
        choices=("tiny", "gemma"),
        default="tiny",
        help="the tiny test model (default) or the embedded default model, gemma-3-270m",
    )
    args = parser.parse_args()
    if args.seconds <= 0 or args.threads < 1 or args.repeats < 1:
        parser.error("--seconds must be above 0, --threads and --repeats 1 or more")
    # simul's own choice for a machine with cores taken (passive) or idle (the bounded spin)
    openmp.choose_wait_policy(2 if args.policy == "passive" else 0)
    with tempfile.TemporaryDirectory() as tmp:
        if args.model == "gemma":
            from simul.request.default_model import default_model_path

            model = default_model_path()
        else:
            model = build_tiny_gguf(Path(tmp) / "ties.gguf", seed=0, design="random")
        meter = CpuMeter(args.threads)
        rows: list[Usage] = []  # one per iteration
        ends: list[float] = []  # time.monotonic() at the end of each (to line up with perf or a sampler)
        with LlamaBackend(model, n_ctx=2048, n_threads=args.threads, exact=True) as backend:
            prompt = backend.tokenize("hello world this is a test of the tiny model", add_special=True)
            end = time.monotonic() + args.seconds
            while time.monotonic() < end:
                start, usage = meter.snapshot(), Usage()
                for _ in range(args.repeats):
                    backend.reset()
                    backend.eval(prompt, logits_from=len(prompt) - 1)
                    for token in prompt[:30]:
                        backend.eval([token], logits_from=0)
                usage.add(start, meter.snapshot())
                rows.append(usage)
                ends.append(time.monotonic())
    walls = [r.wall for r in rows]
    median = statistics.median(walls)
    slow = [r for r in rows if r.wall > 3 * median]
    summary = {
        "model": args.model,
        "threads": args.threads,
        "openmp": openmp.record()["wait_policy"],
        "iterations": len(rows),
        "median_s": round(median, 4),
        "mean_s": round(statistics.mean(walls), 4),
        "slow_iterations": len(slow),
        "slow_share_of_time": round(sum(r.wall for r in slow) / sum(walls), 3),
        "cpu_per_iteration_s": round(statistics.mean(r.cpu for r in rows), 4),
        "cpu_per_slow_iteration_s": round(statistics.mean(r.cpu for r in slow), 4) if slow else None,
        "load1": round(float(Path("/proc/loadavg").read_text().split()[0]), 2),
    }
    print(json.dumps(summary))
    if args.json:
        iterations = [
            {"end": end, "wall": r.wall, "cpu": r.cpu, "runqueue": r.runqueue}
            for r, end in zip(rows, ends, strict=True)
        ]
        args.json.write_text(json.dumps({"summary": summary, "iterations": iterations}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

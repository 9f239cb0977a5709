#!/usr/bin/env python3
"""Loaded runs judged against the cores that are left: `simul eval` beside k busy loops against the idle run
on the cores the loops leave free.

Beside k busy processes on a machine of C physical cores, the fastest a run can hope for is the idle run on
the cores that are left: with k < C, the idle run on ``--threads C-k``; with k >= C every core is shared,
and the fair share of the C cores among the k loops and one thread is C / (k + 1) of a core, so the idle
one-thread run times (k + 1) / C. On 2 cores: beside one loop the idle one-thread run, beside two 1.5x it.
The goal is a loaded run (simul's defaults: its own thread count and wait policy) within ``--goal`` (1.15)
of that reference, with outputs identical to the idle run's (exact mode: the threads and the load change
no token).

Each busy loop is ``python -c 'while True: pass'``, unpinned (``--pin``: each pinned to a core of its own,
0, 1, ..., round robin), started before simul looks at the machine and killed after it, also on Ctrl-C.
Pinned loops change the reference: on 2 cores beside two pinned loops a single thread shares a core with
one of them and gets half a core, not 2/3 (measured: CPU/wall 0.497).
The runs take turns for ``--cycles`` cycles (the idle references, then every load), so that a drift of the
machine meets all of them; the figure compared is the decoding wall time that run.json records per method
(environment.cpu_usage), summed, and the whole command's wall time is printed beside it. Each run's load
average and CPU/wall are printed with it.

    python tools/free_cores.py [--limit 4] [--loads 1,2] [--cycles 2] [--json OUT.json] [-- EVAL ARGS]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from simul.machine.threads import physical_cores  # noqa: E402  (the repository, not an installed simul)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from busy_loops import Loops  # noqa: E402

GOAL = 1.15


def run_eval(out: Path, limit: int, threads: int | None, extra: list[str]) -> dict[str, Any]:
    """One `simul eval` run: its whole wall time, decoding wall and CPU time, load average and outputs."""
    cmd = [sys.executable, "-m", "simul", "eval", "--limit", str(limit), "--comet-model", "none"]
    cmd += ["--out", str(out), "--overwrite", "--quiet", *extra]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH")))),
    }
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode == 130:
        raise KeyboardInterrupt
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"simul eval failed with exit code {done.returncode}")
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    usage = run["environment"]["cpu_usage"]["methods"]
    decode = sum(m["wall_seconds"] for m in usage.values())
    cpu = sum(m["cpu_seconds"] for m in usage.values())
    outputs = [
        (r["stream"], r["method"], r["step"], r["output_ids"])
        for r in map(json.loads, (out / "steps.jsonl").read_text(encoding="utf-8").splitlines())
    ]
    return {
        "wall_seconds": round(wall, 2),
        "decode_seconds": round(decode, 3),
        "cpu_per_wall": round(cpu / decode, 3) if decode else None,
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "threads": run["environment"].get("threads"),
        "wait_policy": run["environment"].get("openmp", {}).get("wait_policy"),
        "outputs": sorted(outputs),
    }


def reference(k: int, cores: int) -> tuple[int, float]:
    """The idle run a run beside ``k`` loops is judged against: its thread count and the factor on its
    time (k < cores: the cores left, factor 1; else one thread, at its fair share of the cores)."""
    if k < cores:
        return cores - k, 1.0
    return 1, (k + 1) / cores


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limit", type=int, default=4, help="streams per run (default 4)")
    parser.add_argument(
        "--loads", default="1,2", help="busy loops beside simul, comma-separated (default 1,2)"
    )
    parser.add_argument("--cycles", type=int, default=2)
    parser.add_argument("--goal", type=float, default=GOAL)
    parser.add_argument(
        "--pin",
        action="store_true",
        help="pin each loop to a core of its own (then one thread of simul can get only half a core "
        "beside two loops on 2 cores, not the fair 2/3 the reference assumes)",
    )
    parser.add_argument(
        "--one-thread", action="store_true", help="also run `--threads 1` beside each load, for comparison"
    )
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("eval_args", nargs="*", help="more `simul eval` arguments, after --")
    args = parser.parse_args()
    loads = [int(x) for x in args.loads.split(",") if x.strip()]
    cores = physical_cores(os.sched_getaffinity(0))
    affinity = sorted(os.sched_getaffinity(0))
    references = sorted({reference(k, cores)[0] for k in loads})
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    root = Path(tempfile.mkdtemp(prefix="simul-free-cores-"))
    print(
        f"{cores} physical cores, CPUs {affinity}; load {os.getloadavg()[0]:.2f}; runs in {root}", flush=True
    )
    runs: list[dict[str, Any]] = []

    def keep() -> None:
        if args.json:
            args.json.write_text(json.dumps({"runs": runs}, indent=1) + "\n", encoding="utf-8")

    try:
        for cycle in range(args.cycles):
            plan = (
                [("idle", 0, t) for t in references]
                + [("idle", 0, None)]
                + [("loaded", k, None) for k in loads]
                + ([("loaded", k, 1) for k in loads] if args.one_thread else [])
            )
            for condition, k, threads in plan:
                name = f"{condition}-{k}-{threads or 'auto'}-{cycle}"
                with Loops(k, affinity if args.pin else None):
                    result = run_eval(root / name, args.limit, threads, args.eval_args)
                result.update(condition=condition, loops=k, threads_asked=threads, cycle=cycle + 1)
                runs.append(result)
                keep()
                print(
                    f"cycle {cycle + 1} {condition} beside {k} loops, threads {threads or 'auto'} "
                    f"(got {result['threads']}, {result['wait_policy']}): "
                    f"decode {result['decode_seconds']} s, "
                    f"whole {result['wall_seconds']} s, CPU/wall {result['cpu_per_wall']}, "
                    f"load {result['load_before']} -> {result['load_after']}",
                    flush=True,
                )
    except KeyboardInterrupt:
        print("interrupted; the loops are stopped", file=sys.stderr)
        return 130

    def median(figure: str, **match: Any) -> float:
        return float(
            statistics.median(r[figure] for r in runs if all(r[key] == v for key, v in match.items()))
        )

    first = runs[0]["outputs"]
    same = all(r["outputs"] == first for r in runs)
    print(f"\noutputs identical in all {len(runs)} runs: {same}")
    verdicts = []
    for k in loads:
        threads, factor = reference(k, cores)
        ref = median("decode_seconds", condition="idle", threads_asked=threads) * factor
        loaded = median("decode_seconds", condition="loaded", loops=k, threads_asked=None)
        ratio = loaded / ref
        verdicts.append(ratio <= args.goal)
        print(
            f"beside {k} loops: decode {loaded:.2f} s (median of {args.cycles}) against the idle "
            f"{threads}-thread run x {factor:g} = {ref:.2f} s: {ratio:.3f} (goal <= {args.goal}) "
            f"{'met' if ratio <= args.goal else 'NOT met'}"
        )
        if args.one_thread:
            one = median("decode_seconds", condition="loaded", loops=k, threads_asked=1)
            print(f"  (--threads 1 beside {k} loops: {one:.2f} s, {one / ref:.3f} of the reference)")
    idle = median("decode_seconds", condition="idle", threads_asked=None)
    print(f"idle with simul's defaults: decode {idle:.2f} s (median)")
    if args.json:
        summary = {"cores": cores, "goal": args.goal, "outputs_identical": same, "met": verdicts}
        for r in runs:
            r["outputs"] = len(r["outputs"])
        args.json.write_text(
            json.dumps({"summary": summary, "runs": runs}, indent=1) + "\n", encoding="utf-8"
        )
    return 0 if same and all(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The forward-pass costs of simul.machine.calibration under several OpenMP settings, idle and loaded.

Each variant runs in a process of its own (OpenMP reads its settings once, when llama.cpp loads) that loads
the model, calibrates (one-token pass on N threads and on one, a 32-row verification pass, c_min) and prints
the figures as JSON; with ``--loaded`` each variant also runs while ``python -c 'while True: pass'`` pinned to
one core competes with it. A few seconds per variant: the quick way to see how a wait policy behaves before
running whole evaluations (tools/contention_check.py).

    python tools/pass_costs.py                                  # the built-in candidates
    python tools/pass_costs.py --variant "spin20k=GOMP_SPINCOUNT=20000" --loaded --threads 2
    python tools/pass_costs.py --variant "noomp=PYTHONPATH=/tmp/noomp-site"   # another llama.cpp build

A variant is NAME=SETTINGS, words ``UPPER_CASE=value`` set in the child's environment (as in
tools/contention_check.py); "default" is simul's own choice.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from busy_loops import Loops
from contention_check import Variant, parse_variant

REPO = Path(__file__).resolve().parent.parent
CANDIDATES = [
    "default=",
    "passive=OMP_WAIT_POLICY=passive",
    "active=OMP_WAIT_POLICY=active",
    "libgomp=GOMP_SPINCOUNT=300000",
]
CHILD = """
import json, sys
from simul.decoding.backend import LlamaBackend
from simul.machine.calibration import calibrate
from simul.request.default_model import default_model_path
from simul.machine import openmp
path = sys.argv[1] or str(default_model_path())
backend = LlamaBackend(__import__('pathlib').Path(path), n_ctx=512, n_threads=int(sys.argv[2]))
backend.warm_up()
costs = calibrate(backend, repeats=int(sys.argv[3]))
print(json.dumps({**costs.to_json(), "openmp": openmp.record()}))
"""


def measure(variant: Variant, model: str, threads: int, repeats: int) -> dict[str, object]:
    path = os.pathsep.join(p for p in (variant.env.get("PYTHONPATH", ""), str(REPO)) if p)
    env = {**os.environ, **variant.env, "PYTHONPATH": path}
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        if name not in variant.env and name in os.environ and variant.name != "inherit":
            env.pop(name)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, model, str(threads), str(repeats)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(f"{variant.name}: the child failed:\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variant", action="append", default=[], help="NAME=SETTINGS (repeatable)")
    parser.add_argument("--no-candidates", action="store_true", help="only the --variant ones")
    parser.add_argument("--model", default="", help="GGUF model (default: the embedded one)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5, help="best of N (default 5)")
    parser.add_argument("--loaded", action="store_true", help="also next to a busy core")
    parser.add_argument("--core", type=int, default=0, help="the competitor's core")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    specs = ([] if args.no_candidates else CANDIDATES) + args.variant
    variants = [parse_variant(v) if not v.endswith("=") else Variant(v[:-1]) for v in specs]
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {args.threads} threads")
    print(
        f"{'variant':<12} {'condition':<7} {'1-token ms':>10} {'1-thread ms':>11} {'eff.':>5} "
        f"{'row ms':>7} {'c_min':>6} {'load':>5}"
    )
    rows = []
    for variant in variants:
        for condition in ("idle", "loaded") if args.loaded else ("idle",):
            load = os.getloadavg()[0]
            start = time.perf_counter()
            if condition == "loaded":
                with Loops(1, [args.core]):
                    figures = measure(variant, args.model, args.threads, args.repeats)
            else:
                figures = measure(variant, args.model, args.threads, args.repeats)
            figures.update(
                variant=variant.name,
                condition=condition,
                load1=load,
                seconds=round(time.perf_counter() - start, 1),
            )
            rows.append(figures)
            single = figures["one_token_single_ms"]
            eff = figures["efficiency"]
            print(
                f"{variant.name:<12} {condition:<7} {figures['one_token_ms']:>10.2f} "
                f"{single if single is None else format(single, '.2f'):>11} "
                f"{'-' if eff is None else format(eff, '.2f'):>5} {figures['row_ms']:>7.2f} "
                f"{figures['c_min']:>6.3f} {load:>5.2f}",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

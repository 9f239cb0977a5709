#!/usr/bin/env python3
"""OpenMP wait policies and one thread against simul's default, by the intervals of `simul bench --rounds`.

The wait policy is read once, when llama.cpp's OpenMP runtime loads, so each variant is a process of its
own: ``default`` (simul chooses: simul.machine.openmp), ``active`` and ``passive`` (OMP_WAIT_POLICY set by
the user, which simul respects) and ``1-thread`` (``--threads 1``). The variants take turns for ``--cycles``
cycles (A B C D A B C D ...) so that a drift of the machine meets all of them; each run is `simul bench
--rounds R --no-cd` on the same streams and prints its 95 % intervals (simul.metrics.intervals). The table
gives, per variant, RT's and SSBD's TPS pooled over its runs with the range of the runs' interval bounds, and
each TPS as a share of the fastest variant's; the load average before and after every run and its CPU/wall
(from the rounds' turns) are printed beside it.

    python tools/wait_policies.py --streams S.jsonl [--model M] [--rounds 2] [--cycles 2]
        [--variants default,active,passive,1-thread] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

VARIANTS: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {
    "default": ({}, ()),
    "active": ({"OMP_WAIT_POLICY": "active"}, ()),
    "passive": ({"OMP_WAIT_POLICY": "passive"}, ()),
    "1-thread": ({}, ("--threads", "1")),
    # bounded spins, set as the user would (each spin count overrides the policy's own)
    "spin-30000": ({"OMP_WAIT_POLICY": "active", "GOMP_SPINCOUNT": "30000"}, ()),
    "spin-300000": ({"OMP_WAIT_POLICY": "active", "GOMP_SPINCOUNT": "300000"}, ()),
    "spin-3000000": ({"OMP_WAIT_POLICY": "active", "GOMP_SPINCOUNT": "3000000"}, ()),
}


def bench(streams: Path, model: str | None, rounds: int, variant: str) -> dict[str, Any]:
    env_extra, args = VARIANTS[variant]
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(env_extra)
    command = [sys.executable, "-m", "simul", "bench", "--streams", str(streams), "--no-cd", "--json"]
    command += ["--rounds", str(rounds), "--quiet", *args]
    if model:
        command += ["--model", model]
    before = os.getloadavg()[0]
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    process_wall = time.perf_counter() - start
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    process_cpu = (now.ru_utime - used.ru_utime) + (now.ru_stime - used.ru_stime)
    after = os.getloadavg()[0]
    if done.returncode != 0:
        raise SystemExit(f"{variant}: simul bench failed ({done.returncode}): {done.stderr[-2000:]}")
    doc = json.loads(done.stdout)
    record = doc["speed_intervals"]
    lanes = record.get("lanes", [])
    cpu = sum(lane["cpu_seconds"] for lane in lanes)
    wall = sum(lane["wall_seconds"] for lane in lanes)
    return {
        "variant": variant,
        "load_before": before,
        "load_after": after,
        "cpu_per_wall": round(cpu / wall, 3) if wall else None,  # of the rounds' turns (--rounds >= 2)
        # of the whole process (start-up, calibration and decoding), for every --rounds
        "process_cpu_per_wall": round(process_cpu / process_wall, 3) if process_wall else None,
        "threads": doc["threads"],
        "cpu": doc["cpu"],
        "methods": record["methods"],
    }


def summarize(runs: list[dict[str, Any]], variants: list[str]) -> list[dict[str, Any]]:
    rows = []
    for variant in variants:
        mine = [r for r in runs if r["variant"] == variant]
        row: dict[str, Any] = {"variant": variant, "runs": len(mine)}
        for key in mine[0]["methods"]:
            for name in ("tps", "speedup"):
                figures = [r["methods"][key][name] for r in mine]
                values = [v for f in figures for v in f["rounds"] if v is not None]
                points = [f["value"] for f in figures if f.get("value") is not None]
                row[f"{key} {name}"] = {
                    "mean": round(sum(values) / len(values), 3) if values else None,
                    # the processes' own figures: between-process scatter, which no one process's
                    # rounds can show (on the 2-core Zen 3 it was larger than the variants' differences)
                    "processes": [min(points), max(points)] if points else None,
                    "low": min(f["low"] for f in figures if f["low"] is not None),
                    "high": max(f["high"] for f in figures if f["high"] is not None),
                }
        row["load"] = [
            round(min(r["load_before"] for r in mine), 2),
            round(max(r["load_after"] for r in mine), 2),
        ]
        row["cpu_per_wall"] = [r["cpu_per_wall"] for r in mine]
        row["process_cpu_per_wall"] = [r.get("process_cpu_per_wall") for r in mine]
        rows.append(row)
    for column in [c for c in rows[0] if c.endswith(" tps")]:
        best = max(r[column]["mean"] for r in rows if r[column]["mean"] is not None)
        for r in rows:
            mean = r[column]["mean"]
            r[column]["of_fastest"] = round(mean / best, 3) if mean is not None and best else None
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=Path, required=True)
    parser.add_argument("--model")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cycles", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    variants = options.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {', '.join(unknown)}: use {', '.join(VARIANTS)}")
    runs = []
    for cycle in range(options.cycles):
        for variant in variants if cycle % 2 == 0 else reversed(variants):
            run = bench(options.streams, options.model, options.rounds, variant)
            print(
                f"cycle {cycle + 1} {variant}: load {run['load_before']:.2f} -> {run['load_after']:.2f}, "
                f"CPU/wall {run['cpu_per_wall']} (turns), {run['process_cpu_per_wall']} (process)",
                file=sys.stderr,
                flush=True,
            )
            runs.append(run)
            if options.json:  # every finished run kept, should a later one be stopped
                options.json.write_text(json.dumps({"runs": runs}, indent=1) + "\n", encoding="utf-8")
    rows = summarize(runs, variants)
    print(f"CPU: {runs[0]['cpu']}; {options.cycles} cycles of {options.rounds} rounds per variant")
    for row in rows:
        cells = [f"{row['variant']:>9}"]
        for column, figure in row.items():
            if isinstance(figure, dict):
                share = f" ({figure['of_fastest']:.3f} of fastest)" if "of_fastest" in figure else ""
                spread = figure.get("processes")
                between = f" processes {spread[0]}-{spread[1]}" if spread else ""
                cells.append(f"{column} {figure['mean']} [{figure['low']}, {figure['high']}]{between}{share}")
        cells.append(
            f"load {row['load'][0]}-{row['load'][1]}, CPU/wall {row['cpu_per_wall']} (turns), "
            f"{row['process_cpu_per_wall']} (process)"
        )
        print("  ".join(cells))
    if options.json:
        options.json.write_text(json.dumps({"runs": runs, "rows": rows}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Does `simul eval` stay fast while another job competes for the CPU? (issue 13, "Done when")

For each variant (by default simul's own defaults), runs

    simul eval --limit 10 --comet-model none --out DIR

once on the machine as it is ("idle") and once while a CPU-bound process started by this tool,
``python -c 'while True: pass'`` pinned to one core, competes with it ("loaded"); the competitor is killed
afterwards, also on Ctrl-C. It prints both wall times and their ratio (the goal: loaded at most 1.5x idle),
and what each run recorded in run.json: the OpenMP wait policy and who set it, the threads and how they were
chosen, and per method the CPU/wall ratio, the share of the CPU time asked for that the process got, the
load average, and whether the table marked the speed figures as unreliable.

    python tools/contention_check.py                      # simul's defaults
    python tools/contention_check.py --before             # also as before issue 13: libgomp's default
                                                          # spinning and min(8, CPUs) threads
    python tools/contention_check.py --variant "active2=OMP_WAIT_POLICY=active --threads 2" --repeat 3
    python tools/contention_check.py --one-thread --repeat 3   # what the automatic count costs next to
                                                              # a busy core against 1 thread (issue 31)

Since issue 31 the automatic thread count ignores the load (simul.machine.threads): next to the competitor
it still uses every core, one thread sharing the competitor's, where the rule before took 1 thread on
2 cores. ``--one-thread`` adds that variant (``--threads 1``), and the summary then gives each variant's
loaded time against the fastest loaded one: the cost of the rule next to a busy core.

A variant is ``NAME=SETTINGS``: words of the form ``UPPER_CASE=value`` are set in simul's environment, the
rest are passed to `simul eval`. ``GOMP_SPINCOUNT=300000`` reproduces libgomp's built-in behaviour when no
policy is set (spin about 3 ms, then sleep), which is what ran before simul chose a policy. A run that takes
longer than --max-seconds (900) is stopped and its time reported as a lower bound. Run it on an otherwise
quiet machine: the idle runs are the reference (a warning says when they were not quiet).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from busy_loops import Loops  # noqa: E402

GOAL = 1.5  # loaded wall time at most this many times the idle one
LIBGOMP_DEFAULT_SPIN = "300000"  # libgomp's spin count when OMP_WAIT_POLICY is not set (env.c)


@dataclass
class Variant:
    name: str
    env: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)


def parse_variant(text: str) -> Variant:
    name, sep, rest = text.partition("=")
    if not sep or not name.strip():
        raise SystemExit(
            f"--variant takes NAME=SETTINGS, e.g. 'active2=OMP_WAIT_POLICY=active --threads 2'; got {text!r}"
        )
    variant = Variant(name.strip())
    for word in shlex.split(rest):
        key, eq, value = word.partition("=")
        if eq and key.isupper() and not key.startswith("-"):
            variant.env[key] = value
        else:
            variant.args.append(word)
    return variant


def old_default_threads() -> int:
    """simul's thread default before issue 13: CPUs in the affinity mask, at most 8."""
    return max(1, min(len(os.sched_getaffinity(0)), 8))


@dataclass
class Result:
    variant: str
    condition: str  # "idle" or "loaded"
    wall: float
    load_before: float
    run: dict[str, Any]
    table: str
    timed_out: bool = False  # stopped at --max-seconds: the wall time is a lower bound
    bench: dict[str, Any] | None = None  # figures of `simul bench` under the same variant and condition

    def summary(self) -> dict[str, Any]:
        env = self.run.get("environment", {})
        usage = env.get("cpu_usage", {})
        methods = usage.get("methods", {})
        return {
            "variant": self.variant,
            "condition": self.condition,
            "wall_seconds": round(self.wall, 2),
            "timed_out": self.timed_out,
            "decode_seconds": (
                None
                if self.timed_out
                else round(sum(m.get("wall_seconds", 0.0) for m in methods.values()), 2)
            ),
            "load1_before": round(self.load_before, 2),
            "threads": env.get("threads"),
            "thread_choice": env.get("thread_choice"),
            "openmp": env.get("openmp"),
            "methods": {
                key: {
                    k: m.get(k)
                    for k in (
                        "cpu_per_wall",
                        "cpu_share",
                        "runqueue_seconds",
                        "load1_mean",
                        "reliable",
                        "basis",
                    )
                }
                for key, m in methods.items()
            },
            "marked_unreliable": "speed figures unreliable" in self.table,
            "tps": {m["key"]: m["metrics"].get("tps") for m in self.run.get("methods", [])},
            "bench": self.bench,
        }


def run_simul(
    variant: Variant, args: list[str], max_seconds: float, what: str
) -> tuple[subprocess.CompletedProcess[str], float] | None:
    """``simul ARGS`` in a child with the variant's environment and options: its completed process and wall
    seconds, or None when it ran past ``max_seconds`` (the child is killed). A failure stops the tool, an
    interrupted child interrupts it."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, **variant.env}
    cmd = [sys.executable, "-m", "simul", *args, *variant.args]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=max_seconds
        )
    except subprocess.TimeoutExpired:
        return None
    wall = time.perf_counter() - start
    if done.returncode == 130:  # simul was interrupted too
        raise KeyboardInterrupt
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"simul {args[0]} failed ({variant.name}, {what}) with exit code {done.returncode}")
    return done, wall


def run_eval(
    variant: Variant, condition: str, limit: int, out: Path, extra: list[str], max_seconds: float
) -> Result:
    args = ["eval", "--limit", str(limit), "--comet-model", "none", "--out", str(out), "--overwrite", *extra]
    load = os.getloadavg()[0]
    ran = run_simul(variant, args, max_seconds, condition)
    if ran is None:
        return Result(variant.name, condition, max_seconds, load, {}, "", timed_out=True)
    done, wall = ran
    run = json.loads((out / "run.json").read_text())
    return Result(variant.name, condition, wall, load, run, done.stderr)


def run_bench(
    variant: Variant, streams: Path, limit: int, extra: list[str], max_seconds: float
) -> dict[str, Any]:
    """`simul bench --no-cd --json` (RT and SSBD) under the variant: TPS, speedup, c, c_min and the bound."""
    args = ["bench", "--streams", str(streams), "--limit", str(limit), "--no-cd", "--json", "--quiet", *extra]
    ran = run_simul(variant, args, max_seconds, "bench")
    if ran is None:
        return {"timed_out": True, "wall_seconds": max_seconds}
    done, wall = ran
    return bench_figures(json.loads(done.stdout), wall)


def bench_figures(doc: dict[str, Any], wall: float) -> dict[str, Any]:
    """The figures of one `simul bench --json` document that the comparison reports."""
    rows = {row["key"]: row for row in doc["methods"]}
    rt = next((r for k, r in rows.items() if k.startswith("rt")), None)
    ssbd = next((r for k, r in rows.items() if k.startswith("ssbd")), None)
    costs = doc.get("pass_costs") or {}
    return {
        "timed_out": False,
        "wall_seconds": round(wall, 1),
        "threads": doc.get("threads"),
        "rt_tps": rt["metrics"].get("tps") if rt else None,
        "ssbd_tps": ssbd["metrics"].get("tps") if ssbd else None,
        "speedup": ssbd["metrics"].get("speedup") if ssbd else None,
        "c": ssbd["metrics"].get("row_cost") if ssbd else None,
        "ad": ssbd["metrics"].get("ad") if ssbd else None,
        "ao": ssbd["metrics"].get("ao") if ssbd else None,
        "bound": ssbd.get("bound") if ssbd else None,
        "of_bound": ssbd.get("of_bound") if ssbd else None,
        "c_min": costs.get("c_min"),
        "one_token_ms": costs.get("one_token_ms"),
        "efficiency": costs.get("efficiency"),
        "unreliable": sorted(doc.get("timing_unreliable") or {}),
    }


def describe_bench(bench: dict[str, Any]) -> str:
    if bench.get("timed_out"):
        return f"    bench: stopped after {bench['wall_seconds']} s (--max-seconds)"

    def f(key: str, spec: str) -> str:
        value = bench.get(key)
        return "n/a" if value is None else format(value, spec)

    return (
        f"    bench ({f('wall_seconds', '.0f')} s, {bench.get('threads')} threads): "
        f"RT TPS {f('rt_tps', '.1f')}, "
        f"SSBD TPS {f('ssbd_tps', '.1f')}, speedup {f('speedup', '.3f')}, c {f('c', '.3f')}, "
        f"c_min {f('c_min', '.3f')}, bound {f('bound', '.3f')} (speedup/bound {f('of_bound', '.3f')}), "
        f"one-token pass {f('one_token_ms', '.2f')} ms, thread efficiency {f('efficiency', '.2f')}"
        + (f", unreliable: {', '.join(bench['unreliable'])}" if bench.get("unreliable") else "")
    )


def describe_run(summary: dict[str, Any]) -> list[str]:
    omp = summary["openmp"] or {}
    choice = summary["thread_choice"] or {}
    quota = choice.get("cpu_quota")
    quota_text = f"{quota.get('cpus')} CPUs" if isinstance(quota, dict) else "none"
    lines = [
        f"    OpenMP wait policy {omp.get('wait_policy')} (set by {omp.get('set_by')}"
        + (f", GOMP_SPINCOUNT={omp['gomp_spincount']}" if omp.get("gomp_spincount") else "")
        + f"; runtime {', '.join(omp.get('runtimes') or []) or '?'})",
        f"    threads {summary['threads']} ({choice.get('source')}; {choice.get('physical_cores')} physical "
        f"cores, {choice.get('cpus')} CPUs of {choice.get('machine_cpus', '?')}, CPU quota {quota_text}; "
        f"for the wait policy: busy cores at start {choice.get('busy_cores')}, "
        f"load average {choice.get('load1')})",
    ]
    for key, m in summary["methods"].items():
        share = m.get("cpu_share")
        shown = "n/a" if share is None else f"{share:.0%}"
        lines.append(
            f"    {key:<16} CPU/wall {m.get('cpu_per_wall')}  CPU share {shown}"
            f"  run-queue wait {m.get('runqueue_seconds')} s  load {m.get('load1_mean')}  "
            f"{'reliable' if m.get('reliable') else 'UNRELIABLE'}  TPS {summary['tps'].get(key)}"
        )
    lines.append(
        f"    table marks speed figures unreliable: {'yes' if summary['marked_unreliable'] else 'no'}"
    )
    if summary.get("bench"):
        lines.append(describe_bench(summary["bench"]))
    return lines


def loaded_costs(summaries: list[dict[str, Any]]) -> dict[str, float]:
    """Per variant, the median wall seconds of its loaded runs that finished (variants without one are
    left out): beside each other, what each setting costs next to the competitor."""
    walls: dict[str, list[float]] = {}
    for s in summaries:
        if s["condition"] == "loaded" and not s["timed_out"]:
            walls.setdefault(s["variant"], []).append(float(s["wall_seconds"]))
    return {name: statistics.median(values) for name, values in walls.items()}


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limit", type=int, default=10, help="streams per run (default 10)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per variant and condition; medians shown")
    parser.add_argument("--core", type=int, default=0, help="the core the competitor is pinned to")
    parser.add_argument("--before", action="store_true", help="also run the settings from before issue 13")
    parser.add_argument("--variant", action="append", default=[], help="NAME=SETTINGS (repeatable)")
    parser.add_argument(
        "--one-thread",
        action="store_true",
        help="also run with --threads 1, what the thread rule before issue 31 chose next to a busy core",
    )
    parser.add_argument("--no-default", action="store_true", help="skip the run with simul's defaults")
    parser.add_argument("--out", type=Path, default=None, help="keep the run directories here")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    parser.add_argument("--show-table", action="store_true", help="print simul's table of every run")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=900.0,
        help="stop a run after this long and report the time as a lower bound (default 900)",
    )
    parser.add_argument(
        "--bench-streams",
        type=Path,
        default=None,
        help="also run `simul bench --no-cd` on this stream file under each variant and condition",
    )
    parser.add_argument("--bench-limit", type=int, default=40, help="streams of the bench runs (40)")
    parser.add_argument(
        "--conditions",
        default="idle,loaded",
        help="which conditions to run, comma-separated: idle, loaded (default both)",
    )
    parser.add_argument("simul_args", nargs="*", help="more `simul eval` arguments, after --")
    args = parser.parse_args()
    if args.repeat < 1 or args.limit < 1 or args.bench_limit < 1:
        parser.error("--repeat, --limit and --bench-limit must be at least 1")
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    if not conditions or any(c not in ("idle", "loaded") for c in conditions):
        parser.error(f"--conditions takes idle, loaded or both; got {args.conditions!r}")

    variants = [] if args.no_default else [Variant("default")]
    if args.before:
        variants.append(
            Variant(
                "before", {"GOMP_SPINCOUNT": LIBGOMP_DEFAULT_SPIN}, ["--threads", str(old_default_threads())]
            )
        )
    if args.one_thread:
        variants.append(Variant("one-thread", {}, ["--threads", "1"]))
    variants += [parse_variant(v) for v in args.variant]
    if not variants:
        parser.error("nothing to run")
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        if name in os.environ:
            print(f"note: {name}={os.environ[name]} is set in this shell and applies to every variant")

    # Ctrl-C reaches simul and this process alike (even when started in the background, where SIGINT comes
    # in ignored); SIGTERM is turned into the same clean exit. Either way the competitor is killed.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    root = args.out or Path(tempfile.mkdtemp(prefix="simul-contention-"))
    print(
        f"machine: {os.cpu_count()} CPUs, affinity {sorted(os.sched_getaffinity(0))}, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; runs in {root}"
    )
    results: list[Result] = []
    try:
        for variant in variants:
            for i in range(args.repeat):
                for condition in conditions:
                    out = root / f"{variant.name}-{condition}-{i + 1}"
                    run = (variant, condition, args.limit, out, args.simul_args, args.max_seconds)
                    bench = (variant, args.bench_streams, args.bench_limit, args.simul_args, args.max_seconds)
                    with Loops(1, [args.core]) if condition == "loaded" else contextlib.nullcontext():
                        result = run_eval(*run)
                        if args.bench_streams is not None:
                            result.bench = run_bench(*bench)
                    results.append(result)
                    load = f"load {result.load_before:.2f}"
                    more = "more than " if result.timed_out else ""
                    print(
                        f"{variant.name} {condition} #{i + 1}: {more}{result.wall:.1f} s ({load})", flush=True
                    )
                    if result.bench is not None:
                        print(describe_bench(result.bench), flush=True)
                    if args.show_table or (condition == "loaded" and i == 0):
                        print(result.table.rstrip())
    except KeyboardInterrupt:
        print("interrupted; the competitor is stopped", file=sys.stderr)
        return 130

    summaries = [r.summary() for r in results]
    print()
    print(
        f"wall seconds of the whole command (decoding only in brackets), median of {args.repeat}; "
        f"competitor: python -c 'while True: pass' pinned to core {args.core}"
    )
    verdicts = []
    idle_walls = [
        float(s["wall_seconds"])
        for s in summaries
        if s["condition"] == "idle" and not s["timed_out"] and s["wall_seconds"] is not None
    ]
    best_idle = min(idle_walls) if idle_walls else float("nan")
    best_name = next(
        (s["variant"] for s in summaries if s["condition"] == "idle" and s["wall_seconds"] == best_idle), "?"
    )
    print(f"  the fastest idle run: {best_name}, {best_idle:.1f} s (each ratio below is against it)")
    for variant in variants:

        def median(condition: str, figure: str, name: str = variant.name) -> float:
            values = [
                float(s[figure])
                for s in summaries
                if s["variant"] == name and s["condition"] == condition and s[figure] is not None
            ]
            return statistics.median(values) if values else float("nan")

        walls = {c: median(c, "wall_seconds") for c in ("idle", "loaded")}
        decode = {c: median(c, "decode_seconds") for c in ("idle", "loaded")}
        ratio = walls["loaded"] / best_idle  # against the fastest setting the machine allows, not its own
        own_ratio = walls["loaded"] / walls["idle"]
        stopped = {s["condition"] for s in summaries if s["variant"] == variant.name and s["timed_out"]}
        bound = bool(stopped)
        if math.isnan(ratio):
            verdict: bool | None = None  # no loaded run (--conditions idle), or no idle one to compare with
        elif not stopped:
            verdict = ratio <= GOAL
        elif stopped == {"loaded"} and ratio > GOAL:
            verdict = False  # already over with a lower bound on the loaded time
        else:
            verdict = None  # an idle run was stopped, or the bound is not enough to decide
        command = " ".join(
            [
                *(f"{k}={v}" for k, v in variant.env.items()),
                f"simul eval --limit {args.limit} --comet-model none",
                *args.simul_args,
                *variant.args,
            ]
        )
        print(
            f"  {variant.name}: {command}\n"
            f"    idle {walls['idle']:.1f} ({decode['idle']:.1f})  loaded {walls['loaded']:.1f} "
            f"({decode['loaded']:.1f})  loaded/fastest idle {'at least ' if stopped == {'loaded'} else ''}"
            f"{ratio:.2f} (loaded/own idle {own_ratio:.2f})  "
            + {True: "ok", False: f"over {GOAL}x", None: "undecided"}[verdict]
            + ("  (a run reached --max-seconds: its time is a lower bound)" if bound else "")
        )
        verdicts.append(
            {
                "variant": variant.name,
                "command": command,
                "wall": walls,
                "decode": decode,
                "ratio": round(ratio, 3),
                "ratio_own_idle": round(own_ratio, 3),
                "fastest_idle": {"variant": best_name, "wall": round(best_idle, 2)},
                "goal_met": verdict,
                "lower_bound": bound,
            }
        )
    costs = loaded_costs(summaries)
    if len(costs) > 1:
        fastest = min(costs, key=lambda name: costs[name])
        print(
            f"  loaded, median wall time against the fastest loaded variant ({fastest}): "
            + ", ".join(f"{name} {costs[name] / costs[fastest]:.2f}" for name in costs)
        )
    busy_idle = [s for s in summaries if s["condition"] == "idle" and s["marked_unreliable"]]
    if busy_idle:
        print(
            f"  warning: {len(busy_idle)} idle run(s) got less CPU than they asked for (load average "
            f"{max(s['load1_before'] for s in busy_idle):.1f}): the machine was not quiet, so the reference "
            "itself is slowed and the ratios mean little"
        )
    print()
    for s in summaries:
        if s["timed_out"]:
            print(f"  {s['variant']} {s['condition']}: stopped after {s['wall_seconds']} s (--max-seconds)")
            continue
        print(
            f"  {s['variant']} {s['condition']}: wall {s['wall_seconds']} s, decoding {s['decode_seconds']} s"
        )
        for line in describe_run(s):
            print(line)
    if args.json is not None:
        args.json.write_text(
            json.dumps({"verdicts": verdicts, "runs": summaries}, indent=2, sort_keys=True) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

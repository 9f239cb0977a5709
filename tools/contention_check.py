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

A variant is ``NAME=SETTINGS``: words of the form ``UPPER_CASE=value`` are set in simul's environment, the
rest are passed to `simul eval`. ``GOMP_SPINCOUNT=300000`` reproduces libgomp's built-in behaviour when no
policy is set (spin about 3 ms, then sleep), which is what ran before simul chose a policy. A run that takes
longer than --max-seconds (900) is stopped and its time reported as a lower bound. Run it on an otherwise
quiet machine: the idle runs are the reference (a warning says when they were not quiet).
"""

from __future__ import annotations

import argparse
import json
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
        }


class Competitor:
    """``python -c 'while True: pass'`` pinned to one core, for the duration of a ``with`` block."""

    def __init__(self, core: int) -> None:
        self.core = core
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Competitor:
        core = self.core
        self.process = subprocess.Popen(
            [sys.executable, "-c", "while True: pass"],
            preexec_fn=lambda: os.sched_setaffinity(0, {core}),  # pinned before it runs a single loop
        )
        time.sleep(0.5)  # let it take its core before simul looks at the machine
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def run_eval(
    variant: Variant, condition: str, limit: int, out: Path, extra: list[str], max_seconds: float
) -> Result:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, **variant.env}
    cmd = [
        sys.executable, "-m", "simul", "eval", "--limit", str(limit), "--comet-model", "none",
        "--out", str(out), "--overwrite", *extra, *variant.args,
    ]  # fmt: skip
    load = os.getloadavg()[0]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=max_seconds
        )
    except subprocess.TimeoutExpired:  # the child has been killed
        return Result(variant.name, condition, max_seconds, load, {}, "", timed_out=True)
    wall = time.perf_counter() - start
    if done.returncode == 130:  # simul was interrupted too
        raise KeyboardInterrupt
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"simul eval failed ({variant.name}, {condition}) with exit code {done.returncode}")
    run = json.loads((out / "run.json").read_text())
    return Result(variant.name, condition, wall, load, run, done.stderr)


def describe_run(summary: dict[str, Any]) -> list[str]:
    omp = summary["openmp"] or {}
    choice = summary["thread_choice"] or {}
    lines = [
        f"    OpenMP wait policy {omp.get('wait_policy')} (set by {omp.get('set_by')}"
        + (f", GOMP_SPINCOUNT={omp['gomp_spincount']}" if omp.get("gomp_spincount") else "")
        + f"; runtime {', '.join(omp.get('runtimes') or []) or '?'})",
        f"    threads {summary['threads']} ({choice.get('source')}; {choice.get('physical_cores')} physical "
        f"cores, {choice.get('cpus')} CPUs, busy cores at start {choice.get('busy_cores')}, "
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
    return lines


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
    parser.add_argument("simul_args", nargs="*", help="more `simul eval` arguments, after --")
    args = parser.parse_args()
    if args.repeat < 1 or args.limit < 1:
        parser.error("--repeat and --limit must be at least 1")

    variants = [] if args.no_default else [Variant("default")]
    if args.before:
        variants.append(
            Variant(
                "before", {"GOMP_SPINCOUNT": LIBGOMP_DEFAULT_SPIN}, ["--threads", str(old_default_threads())]
            )
        )
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
                for condition in ("idle", "loaded"):
                    out = root / f"{variant.name}-{condition}-{i + 1}"
                    run = (variant, condition, args.limit, out, args.simul_args, args.max_seconds)
                    if condition == "idle":
                        result = run_eval(*run)
                    else:
                        with Competitor(args.core):
                            result = run_eval(*run)
                    results.append(result)
                    load = f"load {result.load_before:.2f}"
                    more = "more than " if result.timed_out else ""
                    print(f"{variant.name} {condition} #{i + 1}: {more}{result.wall:.1f} s ({load})")
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
        ratio = walls["loaded"] / walls["idle"]
        stopped = {s["condition"] for s in summaries if s["variant"] == variant.name and s["timed_out"]}
        bound = bool(stopped)
        if not stopped:
            verdict: bool | None = ratio <= GOAL
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
            f"({decode['loaded']:.1f})  ratio {'at least ' if stopped == {'loaded'} else ''}{ratio:.2f}  "
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
                "goal_met": verdict,
                "lower_bound": bound,
            }
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

"""Run the property-based suite's long profile: each property in its own low-priority process, a few at once.

One pytest process for the whole suite runs the 14 readers one after the other on one core; this runs them
side by side (``--jobs``, default: the number of CPUs), each with its own count file, and then prints and
writes the inputs tried per reader, how each process ended (passed, failed, or killed by a signal), the load
average before and after, and the commit:

    python tools/fuzz.py [--examples 10000] [--jobs N] [--report FILE] [--logs DIR] [-k EXPR]

Exit status 0 only when every property passed. A property that fails stops at its first failing input
(Hypothesis shrinks it and prints it in that property's log). ``make fuzz`` calls this.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = "tests/fuzz"


@dataclass
class Outcome:
    test: str
    status: str  # passed, failed, or "signal N"
    returncode: int
    seconds: float
    tried: dict[str, int]
    log: str


def collect(expr: str | None) -> list[str]:
    """The node ids of the suite's tests, as pytest collects them."""
    args = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", SUITE]
    if expr:
        args += ["-k", expr]
    listing = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
    ids = [line for line in listing.stdout.splitlines() if "::" in line]
    if listing.returncode not in (0, 5) or not ids:
        sys.exit(f"could not collect {SUITE}:\n{listing.stdout}{listing.stderr}")
    return ids


def slug(node_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", node_id.split("::", 1)[1])


def run_one(node_id: str, examples: int, logs: Path) -> Outcome:
    counts = logs / f"{slug(node_id)}.json"
    log = logs / f"{slug(node_id)}.log"
    counts.unlink(missing_ok=True)
    env = dict(os.environ, SIMUL_FUZZ="long", SIMUL_FUZZ_EXAMPLES=str(examples))
    env["SIMUL_FUZZ_REPORT"] = str(counts)
    start = time.monotonic()
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.run(
            ["nice", "-n", "10", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node_id],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    seconds = time.monotonic() - start
    code = proc.returncode
    status = "passed" if code == 0 else (f"signal {-code}" if code < 0 else "failed")
    tried = json.loads(counts.read_text(encoding="utf-8")) if counts.is_file() else {}
    return Outcome(node_id, status, code, round(seconds, 1), tried, str(log))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=10_000, help="inputs per property (default 10,000)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="properties run at once")
    parser.add_argument("--report", type=Path, default=ROOT / ".venv" / "fuzz-report.json")
    parser.add_argument("--logs", type=Path, default=ROOT / ".venv" / "fuzz-logs")
    parser.add_argument("-k", dest="expr", help="only the tests pytest -k selects")
    args = parser.parse_args()
    if args.examples < 1 or args.jobs < 1:
        parser.error("--examples and --jobs must be 1 or more")
    args.logs.mkdir(parents=True, exist_ok=True)
    # The run-directory properties are the slowest (each input is a whole run directory): start them first.
    ids = sorted(collect(args.expr), key=lambda node: ("rundirs" not in node, "streams" not in node))
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    print(f"{len(ids)} properties, {args.examples} inputs each, {args.jobs} at a time; logs in {args.logs}")
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        outcomes = []
        for outcome in pool.map(lambda node: run_one(node, args.examples, args.logs), ids):
            outcomes.append(outcome)
            tried = ", ".join(f"{k} {v}" for k, v in sorted(outcome.tried.items())) or "-"
            print(f"{outcome.status:<9} {outcome.seconds:>8.1f} s  {outcome.test}  [{tried}]", flush=True)
    totals: dict[str, int] = {}
    for outcome in outcomes:
        for reader, count in outcome.tried.items():
            totals[reader] = totals.get(reader, 0) + count
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    record = {
        "commit": commit,
        "started": started,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "examples_per_property": args.examples,
        "jobs": args.jobs,
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "tried_per_reader": dict(sorted(totals.items())),
        "total": sum(totals.values()),
        "properties": [asdict(o) for o in outcomes],
    }
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print("\ninputs tried per reader:")
    for reader, count in sorted(totals.items()):
        print(f"  {reader:<28} {count:>8}")
    bad = [o for o in outcomes if o.status != "passed"]
    print(f"  {'total':<28} {record['total']:>8}")
    print(f"{len(outcomes) - len(bad)} of {len(outcomes)} properties passed; report: {args.report}")
    for outcome in bad:
        print(f"{outcome.status}: {outcome.test} (see {outcome.log})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Run the property-based suite's long profile through pytest-xdist, and report what was tried.

pytest-xdist runs the properties of tests/fuzz side by side in ``--jobs`` worker processes (default: the
number of CPUs; ``--dist worksteal``, so a worker that runs out of properties takes pending ones from
another), at low priority (nice 10, which the workers inherit; ``--nice`` changes it). A plugin of this
tool collects pytest's report of each property; the suite's own counter (tests/fuzz/budget.py) says how
many inputs reached each reader. It then prints and writes the inputs tried per reader, how each property
ended (passed, failed, skipped, or crashed: a worker that died, e.g. on a signal, which xdist reports and
replaces), the load average before and after, and the commit:

    python tools/fuzz.py [--examples 10000] [--jobs N] [--nice 10] [--report FILE] [--logs DIR] [-k EXPR]

Exit status 0 only when every property passed. A property that fails stops at its first failing input
(Hypothesis shrinks it; the shrunk input is in that property's log, ``LOGS/<test>.log``). Hypothesis's own
statistics of every property (``--hypothesis-show-statistics``) close pytest's output. ``make fuzz`` calls
this.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SUITE = "tests/fuzz"


@dataclass
class Outcome:
    test: str
    status: str = "passed"  # passed, failed, skipped, or crashed
    seconds: float = 0.0
    tried: dict[str, int] = field(default_factory=dict)
    log: str = ""


def slug(node_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", node_id.split("::", 1)[-1])


class Recorder:
    """A pytest plugin (in the controller): each property's outcome, time and counts, and its log file."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.outcomes: dict[str, Outcome] = {}

    def pytest_runtest_logreport(self, report: Any) -> None:
        outcome = self.outcomes.setdefault(report.nodeid, Outcome(report.nodeid))
        outcome.seconds = round(outcome.seconds + report.duration, 1)
        if report.failed:
            crashed = "crashed while running" in report.longreprtext
            outcome.status = "crashed" if crashed else "failed"
        elif report.skipped and outcome.status == "passed":
            outcome.status = "skipped"
        for name, value in report.user_properties:
            if name == "tried":  # recorded by tests/fuzz/conftest.py
                outcome.tried = {str(k): int(v) for k, v in dict(value).items()}
        log = self.logs / f"{slug(report.nodeid)}.log"
        outcome.log = str(log)
        with log.open("a", encoding="utf-8") as out:
            out.write(f"== {report.when}: {report.outcome} ({report.duration:.1f} s)\n")
            for title, text in report.sections:
                out.write(f"-- {title}\n{text}\n")
            if report.longreprtext:
                out.write(report.longreprtext + "\n")


def test_files(suite: Path) -> list[str]:
    """The suite's files, the slowest (each input a whole run directory, then stream files) first."""
    files = sorted(suite.glob("test_*.py"))
    files.sort(key=lambda path: ("rundirs" not in path.name, "streams" not in path.name))
    return [str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path) for path in files]


def run_suite(args: argparse.Namespace) -> tuple[int, Recorder]:
    import pytest

    os.environ.update(SIMUL_FUZZ="long", SIMUL_FUZZ_EXAMPLES=str(args.examples))
    os.environ.pop("SIMUL_FUZZ_REPORT", None)  # the counts come back in pytest's reports
    recorder = Recorder(args.logs)
    options = ["-n", str(args.jobs), "--dist", "worksteal", "-v", "-p", "no:cacheprovider"]
    options += ["--hypothesis-show-statistics", *test_files(args.suite)]
    if args.expr:
        options += ["-k", args.expr]
    code = pytest.main(options, plugins=[recorder])
    return int(code), recorder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=10_000, help="inputs per property (default 10,000)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument("--report", type=Path, default=ROOT / ".venv" / "fuzz-report.json")
    parser.add_argument("--logs", type=Path, default=ROOT / ".venv" / "fuzz-logs")
    parser.add_argument("-k", dest="expr", help="only the tests pytest -k selects")
    parser.add_argument(
        "--nice", type=int, default=10, help="added to the tool's niceness, the workers' too (default 10)"
    )
    parser.add_argument("--suite", type=Path, default=ROOT / SUITE, help=argparse.SUPPRESS)  # for its tests
    args = parser.parse_args()
    if args.examples < 1 or args.jobs < 1 or args.nice < 0:
        parser.error("--examples and --jobs must be 1 or more, --nice 0 or more")
    args.report, args.logs, args.suite = args.report.resolve(), args.logs.resolve(), args.suite.resolve()
    args.logs.mkdir(parents=True, exist_ok=True)
    for old in args.logs.glob("*.log"):
        old.unlink()
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    if args.nice:
        os.nice(args.nice)
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    print(f"{args.examples} inputs per property, {args.jobs} workers; logs in {args.logs}", flush=True)
    code, recorder = run_suite(args)
    outcomes = sorted(recorder.outcomes.values(), key=lambda outcome: outcome.test)
    if not outcomes:
        sys.exit(f"could not collect {SUITE} (pytest exit status {code}; no property selected or ran)")
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
        "pytest_exit_status": code,
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
    print(f"  {'total':<28} {record['total']:>8}")
    passed = sum(o.status == "passed" for o in outcomes)
    bad = [o for o in outcomes if o.status not in ("passed", "skipped")]
    print(f"{passed} of {len(outcomes)} properties passed; report: {args.report}")
    for outcome in bad:
        print(f"{outcome.status}: {outcome.test} (see {outcome.log})")
    return 1 if bad or code != 0 else 0


if __name__ == "__main__":
    sys.exit(main())

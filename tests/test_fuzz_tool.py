"""tools/fuzz.py (what `make fuzz` runs): the suite through pytest-xdist, and one report of what was tried."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parent.parent / "tools" / "fuzz.py"


def run_tool(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    report = tmp_path / "report.json"
    done = subprocess.run(
        # at the test's own priority: at nice 10 beside two busy loops the workers' start-up took 11x its
        # idle time (issue 53); what these tests check is the report, not the priority
        [
            sys.executable,
            str(TOOL),
            "--nice",
            "0",
            "--report",
            str(report),
            "--logs",
            str(tmp_path / "logs"),
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    return done, report


def test_the_tool_runs_the_properties_in_worker_processes_and_reports_the_counts(tmp_path: Path) -> None:
    done, report = run_tool(tmp_path, "--examples", "3", "--jobs", "2", "-k", "flores_line_files or sltev")
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads(report.read_text(encoding="utf-8"))
    assert record["tried_per_reader"] == {"FLORES line files": 3, "partials: sltev": 3}
    assert record["total"] == 6 and record["examples_per_property"] == 3
    # the properties in the order of their test ids
    assert [p["status"] for p in record["properties"]] == ["passed", "passed"]
    assert all(Path(p["log"]).is_file() for p in record["properties"])
    assert [p["tried"] for p in record["properties"]] == [{"FLORES line files": 3}, {"partials: sltev": 3}]
    assert "2 of 2 properties passed" in done.stdout
    assert "created: 2/2 workers" in done.stdout  # pytest-xdist ran them
    assert "Hypothesis Statistics" in done.stdout


def test_a_selection_that_matches_nothing_is_an_error(tmp_path: Path) -> None:
    done, report = run_tool(tmp_path, "--examples", "1", "-k", "no_such_property")
    assert done.returncode == 1
    assert "could not collect tests/fuzz" in done.stderr
    assert not report.exists()


PLANTED = """
import os
import signal

from hypothesis import given, settings, strategies as st


@settings(max_examples=5, database=None)
@given(n=st.integers())
def test_passes(n):
    pass


@settings(max_examples=50, database=None)
@given(n=st.integers())
def test_fails(n):
    assert n < 1000


def test_kills_its_worker():
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_failing_property_and_a_dead_worker_are_reported(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_planted.py").write_text(PLANTED, encoding="utf-8")
    done, report = run_tool(tmp_path, "--suite", str(suite), "--examples", "3", "--jobs", "2")
    assert done.returncode == 1, done.stdout + done.stderr
    record = json.loads(report.read_text(encoding="utf-8"))
    status = {p["test"].split("::")[1]: p["status"] for p in record["properties"]}
    assert status == {"test_passes": "passed", "test_fails": "failed", "test_kills_its_worker": "crashed"}
    logs = {
        p["test"].split("::")[1]: Path(p["log"]).read_text(encoding="utf-8") for p in record["properties"]
    }
    assert "n=1000" in logs["test_fails"]  # Hypothesis's shrunk failing input
    assert "crashed while running" in logs["test_kills_its_worker"]
    assert "1 of 3 properties passed" in done.stdout
    assert "crashed: " in done.stdout and "failed: " in done.stdout

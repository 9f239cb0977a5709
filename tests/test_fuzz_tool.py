"""tools/fuzz.py (what `make fuzz` runs): one process per property, and one report of what was tried."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parent.parent / "tools" / "fuzz.py"


def run_tool(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, str(TOOL), "--report", str(report), "--logs", str(tmp_path / "logs"), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    return done, report


def test_the_tool_runs_each_property_in_its_own_process_and_reports_the_counts(tmp_path: Path) -> None:
    done, report = run_tool(tmp_path, "--examples", "3", "--jobs", "2", "-k", "flores_line_files or sltev")
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads(report.read_text(encoding="utf-8"))
    assert record["tried_per_reader"] == {"FLORES line files": 3, "partials: sltev": 3}
    assert record["total"] == 6 and record["examples_per_property"] == 3
    assert [p["status"] for p in record["properties"]] == ["passed", "passed"]
    assert all(Path(p["log"]).is_file() for p in record["properties"])
    assert "2 of 2 properties passed" in done.stdout


def test_a_selection_that_matches_nothing_is_an_error(tmp_path: Path) -> None:
    done, report = run_tool(tmp_path, "--examples", "1", "-k", "no_such_property")
    assert done.returncode == 1
    assert "could not collect tests/fuzz" in done.stderr
    assert not report.exists()

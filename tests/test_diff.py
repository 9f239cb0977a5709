"""`simul diff` exit codes and reports on crafted runs (real run directories, edited and rescored)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.streams.format import write_streams
from tests.helpers import eval_args, make_streams

runner = CliRunner()
NO_NE = ("--max-increase", "ne=none", "--max-increase", "ne_display=none")


@pytest.fixture(scope="module")
def base_run(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("diff")
    streams = root / "streams.jsonl"
    write_streams(streams, make_streams())
    out = root / "base"
    result = runner.invoke(
        app,
        eval_args(tiny_model, streams, "--threads", "2", "--out", str(out)),
    )
    assert result.exit_code == 0, result.output
    return out


def variant(base: Path, target: Path, edit: Callable[[str, str], str | None]) -> Path:
    """Copy a run, replace final outputs where ``edit(stream, output)`` returns text, and rescore it."""
    shutil.copytree(base, target)
    references = {
        json.loads(line)["id"]: json.loads(line)["reference"]
        for line in (target / "streams.jsonl").read_text().splitlines()
    }
    lines = []
    for line in (target / "steps.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["final"] and record["method"] != "rt":
            replaced = edit(record["stream"], references[record["stream"]])
            if replaced is not None:
                record["output"] = record["display"] = replaced
        lines.append(json.dumps(record, ensure_ascii=False, sort_keys=True))
    (target / "steps.jsonl").write_text("\n".join(lines) + "\n")
    rescored = runner.invoke(app, ["score", str(target), "--update", "--quiet"])
    assert rescored.exit_code == 0, rescored.output
    return target


def diff(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["diff", *args])
    return result.exit_code, result.stdout, result.stderr


def test_identical_runs_pass(base_run: Path) -> None:
    code, _, err = diff(str(base_run), str(base_run))
    assert code == 0 and "no regression" in err


def test_improvement_passes(base_run: Path, tmp_path: Path) -> None:
    better = variant(base_run, tmp_path / "better", lambda sid, ref: ref)
    # replacing only the final outputs also erases more at the last step: NE is not what this test is about
    code, out, _ = diff(str(base_run), str(better), "--json", *NO_NE)
    assert code == 0
    doc = json.loads(out)
    ssbd = next(m for m in doc["methods"] if m["new"] != "rt")
    chrf = next(r for r in ssbd["metrics"] if r["name"] == "chrf")
    assert chrf["direction"] == "better" and chrf["delta"] > 0 and chrf["verdict"] == "better"
    assert doc["regressions"] == [] and doc["exit_code"] == 0


def test_regression_exits_3(base_run: Path, tmp_path: Path) -> None:
    worse = variant(base_run, tmp_path / "worse", lambda sid, ref: "zzz qqq")
    better = variant(base_run, tmp_path / "better", lambda sid, ref: ref)
    code, out, err = diff(str(better), str(worse), "--json")
    assert code == 3, err
    doc = json.loads(out)
    label = next(m["label"] for m in doc["methods"] if m["new"] != "rt")
    assert {"method": label, "metric": "chrf", "within_noise": False} in doc["regressions"]
    chrf = next(r for m in doc["methods"] if m["new"] != "rt" for r in m["metrics"] if r["name"] == "chrf")
    assert chrf["bootstrap"]["p"] < 0.05 and chrf["crossed"]
    ssbd = next(m for m in doc["methods"] if m["new"] != "rt")
    assert ssbd["streams"]["worse"] == len(make_streams()) and ssbd["streams"]["worst"]
    # a looser threshold lets the same change through
    code, _, _ = diff(str(better), str(worse), "--max-drop", "chrf=100", "--max-drop", "bleu=100", *NO_NE)
    assert code == 0


def test_change_within_noise_is_reported_as_such(base_run: Path, tmp_path: Path) -> None:
    better = variant(base_run, tmp_path / "better", lambda sid, ref: ref)
    one_worse = variant(
        better, tmp_path / "one", lambda sid, ref: ref[: len(ref) // 2] if sid == "s0" else None
    )
    args = (
        str(better),
        str(one_worse),
        "--max-drop",
        "chrf=0",
        "--max-drop",
        "bleu=0",
        "--json",
        *NO_NE,
    )
    # the threshold decides the exit code ...
    code, out, _ = diff(*args)
    assert code == 3
    doc = json.loads(out)
    chrf = next(r for m in doc["methods"] if m["new"] != "rt" for r in m["metrics"] if r["name"] == "chrf")
    assert chrf["crossed"] and chrf["verdict"] == "within noise" and chrf["bootstrap"]["p"] >= 0.05
    assert {"chrf"} <= {r["metric"] for r in doc["regressions"] if r["within_noise"]}
    # ... unless changes within noise are allowed to pass
    code, out, err = diff(*args, "--allow-noise")
    assert code == 0 and "within noise allowed" in err
    assert json.loads(out)["regressions"] == []


def test_mismatched_streams_are_refused(base_run: Path, tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "two.jsonl"
    write_streams(streams, make_streams()[:2])
    other = tmp_path / "other"
    made = runner.invoke(
        app,
        eval_args(tiny_model, streams, "--threads", "2", "--out", str(other)),
    )
    assert made.exit_code == 0, made.output
    code, _, err = diff(str(base_run), str(other))
    assert code == 2 and "different streams" in err
    code, out, _ = diff(str(base_run), str(other), "--force", "--json")
    # forced, the runs are compared: RT's NE on the first two streams is higher than on all four
    assert code == 3 and {r["metric"] for r in json.loads(out)["regressions"]} == {"ne", "ne_display"}


def test_markdown_report(base_run: Path, tmp_path: Path) -> None:
    worse = variant(base_run, tmp_path / "worse", lambda sid, ref: "zzz")
    code, out, _ = diff(str(base_run / "run.json"), str(worse), "--markdown")
    assert code == 3  # outputs replaced by "zzz": a regression
    assert out.startswith("## simul diff")
    assert "| metric | base | new | delta | limit | paired bootstrap | verdict |" in out
    assert "| chrF |" in out


def test_bad_thresholds_and_inputs(base_run: Path, tmp_path: Path) -> None:
    assert diff(str(base_run), str(base_run), "--max-drop", "ne=0.1")[0] == 2
    assert diff(str(base_run), str(base_run), "--max-drop", "chrf")[0] == 2
    # an unknown metric is a usage error
    assert diff(str(base_run), str(base_run), "--max-drop", "meteor=1")[0] == 2
    assert diff(str(base_run), str(tmp_path / "missing"))[0] == 1
    assert diff(str(base_run), str(base_run), "--json", "--markdown")[0] == 2


def test_speed_changes_are_judged_by_the_runs_intervals(base_run: Path, tmp_path: Path) -> None:
    slower = tmp_path / "slower"
    shutil.copytree(base_run, slower)
    run = json.loads((slower / "run.json").read_text())
    ssbd = next(m for m in run["methods"] if m["key"] != "rt")
    speedup = ssbd["metrics"]["speedup"]
    base_interval = dict(run["speed_intervals"]["methods"][ssbd["key"]]["speedup"])
    assert base_interval["low"] <= base_interval["high"]
    ssbd["metrics"]["speedup"] = speedup - 0.5
    figure = run["speed_intervals"]["methods"][ssbd["key"]]["speedup"]
    args = (str(base_run), str(slower), "--max-drop", "speedup=0.1", "--json", *NO_NE)

    def judged(low: float, high: float) -> dict[str, Any]:
        figure.update(value=speedup - 0.5, low=low, high=high)
        (slower / "run.json").write_text(json.dumps(run))
        code, out, _ = diff(*args)
        assert code == 3
        doc = json.loads(out)
        return next(
            r for m in doc["methods"] if m["new"] != "rt" for r in m["metrics"] if r["name"] == "speedup"
        )

    # the new run's spread reaches the base run's: the drop is within noise (the threshold still decides)
    row = judged(speedup - 0.9, base_interval["high"])
    assert row["crossed"] and row["within_intervals"] and row["verdict"] == "within noise"
    assert row["intervals"]["base"] == [base_interval["low"], base_interval["high"]]
    # apart: a regression
    row = judged(speedup - 0.9, base_interval["low"] - 0.01)
    assert row["crossed"] and not row["within_intervals"] and row["verdict"] == "REGRESSION"
    # a hand-edited interval that is not two ordered numbers is ignored, not trusted
    row = judged(2.0, 1.0)
    assert row["intervals"] is None and row["verdict"] == "REGRESSION"

"""`simul bench` on the tiny model: the methods, the figures and the split of update time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.streams.format import write_streams
from tests.helpers import make_streams

runner = CliRunner()


@pytest.mark.parametrize("extra", [[], ["--fuse", "--verify-chunk", "4", "--ending", "reopen", "--options"]])
def test_bench_reports_speed_and_where_time_goes(tiny_model: Path, tmp_path: Path, extra: list[str]) -> None:
    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams())
    result = runner.invoke(
        app, ["bench", "--model", str(tiny_model), "--streams", str(streams), "--json", *extra]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    keys = [m["key"] for m in doc["methods"]]
    if extra:
        assert keys == ["rt", "ssbd-b0.2", "ssbd-b0.2-reopen-ending", "cd"]
    else:
        assert keys == ["rt", "ssbd-b0.2", "cd"]
    for method in doc["methods"]:
        split = method["time_split"]
        assert sum(split.values()) == pytest.approx(100.0, abs=0.3)
        assert all(v >= 0 for v in split.values())
        metrics = method["metrics"]
        assert (
            metrics["tps"] > 0
            and metrics["tps_e2e"] > 0
            and metrics["p95_update_ms"] >= metrics["p50_update_ms"]
        )
        if method["key"] == "rt":
            assert split["verify"] == 0.0 and metrics["speedup"] == 1.0
            assert metrics["row_cost"] is None and method["verify_rows"] == 0
        else:
            assert metrics["ideal_speedup"] >= 1.0 and metrics["efficiency"] is not None
            # c from the same run's counts and seconds
            seconds = method["seconds"]
            c = (seconds["verify_seconds"] / method["verify_rows"]) / (
                seconds["decode_seconds"] / method["decode_passes"]
            )
            assert metrics["row_cost"] == pytest.approx(c, rel=0.05)  # the seconds are rounded to 0.1 ms
    assert "simul bench" in result.stderr and "verify%" in result.stderr


def test_bench_rounds_give_each_speed_figure_its_interval(tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams())
    out = tmp_path / "run"
    args = ["bench", "--model", str(tiny_model), "--streams", str(streams), "--no-cd", "--json"]
    result = runner.invoke(app, [*args, "--rounds", "3", "-o", str(out)])
    assert result.exit_code == 0, result.output
    record = json.loads((out / "run.json").read_text())["speed_intervals"]
    assert json.loads(result.stdout)["speed_intervals"] == record
    assert record["rounds"] == 3 and record["streams"] == len(make_streams()) and len(record["lanes"]) == 3
    assert set(record["methods"]) == {"rt", "ssbd-b0.2"}
    for key, figures in record["methods"].items():
        for name in ("tps", "tps_e2e", "speedup", "speedup_e2e"):
            figure = figures[name]
            assert len(figure["rounds"]) == 3 and figure["low"] <= figure["high"], (key, name)
            assert min(figure["rounds"]) <= figure["value"] <= max(figure["rounds"]), (key, name)
    assert record["methods"]["rt"]["speedup"]["value"] == 1.0
    assert "another output than in round 1" not in result.stderr  # the rounds' outputs are the same
    # one round: the interval over streams alone, in every complete run (eval's too)
    single = runner.invoke(app, [*args, "-o", str(tmp_path / "one")])
    assert single.exit_code == 0, single.output
    one = json.loads((tmp_path / "one" / "run.json").read_text())["speed_intervals"]
    assert one["rounds"] == 1 and all(len(f["tps"]["rounds"]) == 1 for f in one["methods"].values())
    refused = runner.invoke(app, [*args, "--rounds", "2", "--parallel", "2"])
    assert refused.exit_code == 2 and "--rounds" in refused.output

"""`simul sweep` on the tiny model: both tables, the run directory and the plots."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from simul.cli import app
from simul.request.sweep import sweep_methods
from simul.streams.format import write_streams
from tests.helpers import make_streams

runner = CliRunner()


def test_sweep_methods_cover_both_tables() -> None:
    keys = [
        m.key for m in sweep_methods([0.0, 0.2, 1.0], [0, 3], ["display", "output"], cd=True, mask_beta=0.2)
    ]
    assert keys == ["rt", "ssbd-b0", "ssbd-b0.2", "ssbd-b1", "cd", "ssbd-b0.2-display3", "ssbd-b0.2-output3"]


def test_sweep_on_the_tiny_model(tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams())
    out = tmp_path / "sweep"
    result = runner.invoke(
        app,
        [
            "sweep",
            "--model",
            str(tiny_model),
            "--streams",
            str(streams),
            "--beta",
            "0,0.2,0.5",
            "--mask-k",
            "0,2",
            "--comet-model",
            "none",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [r["label"] for r in doc["table3"]] == ["RT", "beta 0", "beta 0.2", "beta 0.5", "CD"]
    assert [r["label"] for r in doc["table4"]] == ["-", "+mask-k 2", "+display-only mask-k 2"]
    rows = {r["label"]: r["metrics"] for r in doc["table3"]}
    assert rows["beta 0.5"]["ad"] == 100.0 and rows["CD"]["ad"] == 100.0
    # a bias of 0.5 never revises model tokens; NE, on words, only sees words completed by later tokens
    assert rows["beta 0.5"]["ne"] < rows["beta 0"]["ne"]
    t4 = {r["label"]: r["metrics"] for r in doc["table4"]}
    # display-only masking leaves acceptance untouched; output masking shortens the drafts
    assert (t4["+display-only mask-k 2"]["ad"], t4["+display-only mask-k 2"]["ao"]) == (
        t4["-"]["ad"],
        t4["-"]["ao"],
    )
    for suffix in (".png", ".svg"):
        assert (out / f"sweep-beta{suffix}").stat().st_size > 1000
    assert json.loads((out / "run.json").read_text())["status"] == "complete"
    assert "Table 3" in result.stderr and "Table 4" in result.stderr


def test_sweep_rejects_bad_lists() -> None:
    assert runner.invoke(app, ["sweep", "--beta", "0,x"]).exit_code == 2
    assert runner.invoke(app, ["sweep", "--beta", "1.5"]).exit_code == 2
    assert runner.invoke(app, ["sweep", "--mask", "screen"]).exit_code == 2

"""Options that the chosen method ignores are refused with exit 2 and the fix, before any work; none is
silently dropped (issue 31, simul.cli.ignored)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from tests.helpers import eval_args

runner = CliRunner()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--method", "rt", "--beta", "0.3"],
            "--beta is SSBD's bias toward its draft, and --method rt has no draft",
        ),
        (["--method", "cd", "--beta", "0.2"], "--method cd keeps its draft unverified: drop --beta"),
        (["--agreement", "3"], "--agreement is the n of --display local-agreement, and the display is mask"),
        (["--mask", "output"], "--mask output says where --mask-k's tokens are hidden, and --mask-k is 0"),
        (
            ["--method", "rt", "--fuse"],
            "--fuse evaluates the prompt and the draft in one pass, and --method rt",
        ),
        (
            ["--method", "cd", "--verify-chunk", "4"],
            "--verify-chunk cuts SSBD's verification, and --method cd",
        ),
    ],
)
def test_eval_refuses_an_option_the_method_ignores(
    tiny_model: Path, streams_file: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, eval_args(tiny_model, streams_file, "--out", str(out), *extra))
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert not out.exists()


def test_every_ignored_option_is_named_at_once(tiny_model: Path, streams_file: Path) -> None:
    args = eval_args(
        tiny_model, streams_file, "--method", "rt", "--beta", "0.2", "--agreement", "2", "--fuse"
    )
    result = runner.invoke(app, args)
    text = " ".join(result.output.split())
    assert result.exit_code == 2 and "--beta" in text and "--agreement" in text and "--fuse" in text


def test_options_the_method_uses_are_taken(tiny_model: Path, streams_file: Path, tmp_path: Path) -> None:
    """The same options where the method uses them run, and leaving them out keeps the defaults."""
    out = tmp_path / "run"
    args = ["--method", "ssbd", "--beta", "0.3", "--mask", "output", "--mask-k", "2", "--verify-chunk", "4"]
    result = runner.invoke(app, eval_args(tiny_model, streams_file, "--limit", "1", "--out", str(out), *args))
    assert result.exit_code == 0, result.output
    methods = json.loads((out / "run.json").read_text())["config"]["methods"]
    assert [(m["name"], m["beta"], m["mask"], m["mask_k"]) for m in methods] == [
        ("rt", None, "display", 0),
        ("ssbd", 0.3, "output", 2),
    ]
    plain = tmp_path / "plain"
    result = runner.invoke(app, eval_args(tiny_model, streams_file, "--limit", "1", "--out", str(plain)))
    assert result.exit_code == 0, result.output
    run = json.loads((plain / "run.json").read_text())
    assert run["config"]["methods"][1]["beta"] == 0.2 and run["config"]["comet_batch_size"] == 16
    rt_only = runner.invoke(app, eval_args(tiny_model, streams_file, "--limit", "1", "--method", "rt"))
    assert rt_only.exit_code == 0, rt_only.output


def test_a_comet_batch_size_without_comet_is_warned_about(tiny_model: Path, streams_file: Path) -> None:
    result = runner.invoke(
        app, eval_args(tiny_model, streams_file, "--limit", "1", "--comet-batch-size", "8")
    )
    assert result.exit_code == 0, result.output
    assert "warning: --comet-batch-size does nothing with --comet-model none" in " ".join(
        result.output.split()
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--mask-k", "0", "--mask", "output"],
            "--mask sets the modes of --mask-k, and --mask-k has no value above 0",
        ),
        (["--mask-k", "0", "--mask-beta", "0.3"], "--mask-beta is the bias of the mask-k table (Table 4)"),
    ],
)
def test_sweep_refuses_mask_options_without_a_mask_table(
    tiny_model: Path, streams_file: Path, extra: list[str], message: str
) -> None:
    args = [
        "sweep",
        "--model",
        str(tiny_model),
        "--streams",
        str(streams_file),
        "--comet-model",
        "none",
        *extra,
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())

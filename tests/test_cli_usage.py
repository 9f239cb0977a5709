"""Bad options are usage errors (exit 2), refused before any model is loaded; none crashes llama.cpp."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from tests.helpers import eval_args

REPO = Path(__file__).resolve().parent.parent
runner = CliRunner()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--template", "bogus"], "Invalid value for '--template'"),
        (["--ne-tokenizer", "bogus"], "Invalid value for '--ne-tokenizer'"),
        (["--limit", "0"], "--limit must be at least 1"),
        (["--resume"], "--resume needs --out"),
        (["--verify-chunk", "-1"], "--verify-chunk must be 0"),
        (["--threads", "-1"], "--threads must be 0 (auto)"),
        (["--n-ctx", "0"], "--n-ctx must be a positive number"),
        (["--n-ctx", "-4"], "--n-ctx must be a positive number"),
        (["--max-len-ratio", "-1"], "--max-len-ratio must be 0 or more"),
        (["--max-len-ratio", "nan"], "--max-len-ratio must be 0 or more"),
        (["--max-len-slack", "-1"], "--max-len-slack must be 0 or more"),
        (["--max-len-ratio", "0", "--max-len-slack", "0"], "caps every update at 0 tokens"),
    ],
)
def test_eval_usage_errors_exit_2(
    streams_file: Path, tmp_path: Path, options: list[str], message: str
) -> None:
    # a model that does not exist: a check made after loading it would fail differently (exit 1)
    result = runner.invoke(app, eval_args(tmp_path / "absent.gguf", streams_file, *options))
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())


@pytest.mark.parametrize("command", ["sweep", "bench"])
def test_sweep_and_bench_check_the_same_options(command: str, streams_file: Path, tmp_path: Path) -> None:
    for options in (
        ["--threads", "-2"],
        ["--verify-chunk", "-1"],
        ["--n-ctx", "0"],
        ["--template", "x"],
        ["--max-len-slack", "-1"],
    ):
        result = runner.invoke(
            app, [command, "--model", str(tmp_path / "absent.gguf"), "--streams", str(streams_file), *options]
        )
        assert result.exit_code == 2, (options, result.output)


def test_diff_and_score_option_errors_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["diff", str(tmp_path), str(tmp_path), "--max-drop", "foo=1"])
    assert result.exit_code == 2 and "unknown metric 'foo'" in result.output
    result = runner.invoke(app, ["score", str(tmp_path), "--update", "--allow-incomplete"])
    assert result.exit_code == 2


def test_threads_0_is_documented_as_auto() -> None:
    result = runner.invoke(app, ["eval", "--help"], env={"COLUMNS": "200"})
    assert "0 or unset: auto" in " ".join(result.output.split())


def test_n_ctx_0_does_not_crash_the_process(tiny_model: Path, streams_file: Path) -> None:
    """llama.cpp segfaulted on a context of 0 tokens (exit 139): the option is refused before it sees it."""
    result = subprocess.run(
        [sys.executable, "-m", "simul", *eval_args(tiny_model, streams_file, "--n-ctx", "0")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    assert "--n-ctx must be a positive number of tokens" in result.stderr

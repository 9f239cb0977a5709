"""Commands that read a run directory load neither the decoder nor llama.cpp: `simul score`, `diff`, `show`,
`export` and `rank`, run as `python -X importtime -m simul ...` on a run of the tiny model, import none of
simul.decoding.stream, simul.decoding.backend, llama_cpp, torch or Ray (COMET scoring and --ray, which need
them, are not asked for). The command line imports a command's module only when that command runs
(simul.cli.LazyGroup), and `simul --help` lists every command with its one-line help all the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import COMMANDS, app, load_command
from tests.helpers import eval_args

REPO = Path(__file__).resolve().parent.parent
FORBIDDEN = ("simul.decoding.stream", "simul.decoding.backend", "llama_cpp", "torch", "ray")

runner = CliRunner()


def run_importtime(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``python -X importtime -m simul ARGS`` in a fresh process: its result and every module it imported."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "120"}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "simul", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
        check=False,
    )
    modules = {
        line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")
    }
    modules.discard("package")  # the header line: "import time: self [us] | cumulative | imported package"
    return done, modules


def forbidden(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))


@pytest.fixture(scope="module")
def run_dir(tiny_model: Path, streams_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("light") / "run"
    result = runner.invoke(
        app, eval_args(tiny_model, streams_file, "--limit", "2", "--threads", "2", "--out", str(out))
    )
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("command", ["score", "diff", "show", "export", "rank"])
def test_reading_a_run_loads_neither_the_decoder_nor_llama_cpp(
    command: str, run_dir: Path, tmp_path: Path
) -> None:
    stream = json.loads((run_dir / "streams.jsonl").read_text(encoding="utf-8").splitlines()[0])["id"]
    args = {
        "score": [str(run_dir)],
        "diff": [str(run_dir), str(run_dir)],
        "show": [str(run_dir), "--stream", stream],
        "export": [str(run_dir), "-o", str(tmp_path / "instances.log")],
        "rank": [str(run_dir)],
    }[command]
    done, modules = run_importtime(command, *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    # the command ran and read the run (the import list is not empty by mistake)
    assert {"simul.runs.directory", f"simul.cli.{command}_cmd"} <= modules
    assert forbidden(modules) == []


def test_help_imports_no_command_and_lists_every_one(tmp_path: Path) -> None:
    done, modules = run_importtime("--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert {"simul.cli"} <= modules
    assert sorted(m for m in modules if m.startswith("simul.cli.")) == []
    assert forbidden(modules) == [] and "numpy" not in modules
    listed = [line.split()[0] for line in done.stdout.split("Commands:")[1].splitlines() if line.strip()]
    assert listed == [command.name for command in COMMANDS]


def test_the_listing_repeats_each_commands_own_help() -> None:
    # COMMANDS holds the first paragraph of each command's help, so that `simul --help` needs no import
    for command in COMMANDS:
        loaded = load_command(command.name)
        first = " ".join(loaded.help.split("\n\n")[0].split())
        assert command.help == first, f"simul.cli.COMMANDS: update the help of {command.name!r} to {first!r}"


@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_each_command_loads_for_its_help(command: str) -> None:
    result = runner.invoke(app, [command, "--help"], terminal_width=120)
    assert result.exit_code == 0, result.output
    assert f"simul {command}" in result.output or command in result.output.splitlines()[0]


def test_a_typo_is_matched_against_every_command() -> None:
    result = runner.invoke(app, ["evl"])
    assert result.exit_code == 2
    assert "No such command 'evl'. Did you mean 'eval'?" in result.output


def test_the_records_load_nothing_else_of_decoding() -> None:
    code = "import sys, simul.decoding.records\nprint('\\n'.join(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    modules = set(done.stdout.split())
    assert "simul.decoding.records" in modules
    assert sorted(m for m in modules if m.startswith("simul.decoding")) == [
        "simul.decoding",
        "simul.decoding.records",
    ]
    assert not {"numpy", "llama_cpp"} & modules

"""`simul export RUN_DIR --format simuleval`: the displayed stream in another toolkit's format."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simul.cli.common import err_console, handle_errors
from simul.errors import SimulError, UsageError
from simul.export import simuleval_lines
from simul.rundir import load_run, write_atomic
from simul.safe_text import excerpt, visible

FORMATS = ("simuleval",)


def register(app: typer.Typer) -> None:
    @app.command("export")
    @handle_errors
    def export_command(
        run_dir: Annotated[Path, typer.Argument(help="A complete run directory.")],
        format: Annotated[str, typer.Option("--format", help="Output format: simuleval.")] = "simuleval",
        method: Annotated[
            str | None, typer.Option(help="Method key to export (see run.json). Default: the last method.")
        ] = None,
        output: Annotated[
            Path | None,
            typer.Option(
                "--output", "-o", help="Output file. Default: RUN_DIR/simuleval/<method>/instances.log."
            ),
        ] = None,
    ) -> None:
        """Write a SimulEval-style instances.log of what was displayed, to rescore a run elsewhere."""
        if format not in FORMATS:
            raise UsageError(f"unknown --format {format!r}; choose one of: {', '.join(FORMATS)}")
        loaded = load_run(run_dir)
        keys = [m.key for m in loaded.methods]
        key = method or keys[-1]
        if key not in loaded.results:
            raise SimulError(f"{run_dir} has no method {excerpt(key)}; it has: {', '.join(keys)}")
        target = output or run_dir / "simuleval" / key / "instances.log"
        target.parent.mkdir(parents=True, exist_ok=True)
        lines = list(simuleval_lines(loaded.results[key], loaded.streams))
        write_atomic(target, "".join(line + "\n" for line in lines))
        err_console.print(visible(f"wrote {len(lines)} instances of {key} to {target}"), markup=False)

"""Running an evaluation from a command: the progress bar, and what Ctrl-C leaves behind."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from simul.cli.common import err_console, show_progress
from simul.engine import EngineSettings
from simul.evaluation import EvalOutcome, EvalRequest, Interrupted, run_evaluation

EXIT_INTERRUPTED = 130


def progress_bar(enabled: bool) -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[rate]}"),
        console=err_console,
        disable=not enabled,
        transient=False,
    )


def engine_settings(
    model: Path | None,
    template: str,
    n_ctx: int,
    threads: int | None,
    fuse: bool,
    verify_chunk: int,
    n_gpu_layers: int | None = None,
    parallel: int = 1,
) -> EngineSettings:
    return EngineSettings(
        model=model,
        template=template,
        n_ctx=n_ctx,
        threads=threads,
        fuse=fuse,
        verify_chunk=verify_chunk,
        n_gpu_layers=n_gpu_layers,
        parallel=parallel,
    )


def run_with_progress(
    request: EvalRequest,
    quiet: bool,
    label: str,
    on_interrupt: Callable[[EvalOutcome], None] | None = None,
) -> EvalOutcome:
    """Run the evaluation under a progress bar over streams.

    On Ctrl-C the finished streams are kept (in the run directory when there is one), ``on_interrupt``
    reports what was done, and the command exits 130.
    """
    with progress_bar(show_progress(quiet)) as bar:
        task = bar.add_task(label, total=None, rate="")
        try:
            return run_evaluation(
                request,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
                on_comet_loading=lambda: bar.update(task, description="scoring"),
                on_throughput=lambda meter: bar.update(
                    task, rate=f"{meter.updates_per_second:.1f} updates/s"
                ),
            )
        except Interrupted as stop:
            bar.stop()
            if on_interrupt is not None:
                on_interrupt(stop.outcome)
            hint = f"; continue with --resume --out {request.out}" if request.out else ""
            err_console.print(
                f"[yellow]interrupted[/] after {stop.outcome.streams_done} of {stop.outcome.streams_total} "
                f"streams: finished streams are kept{hint}"
            )
            raise typer.Exit(code=EXIT_INTERRUPTED) from None

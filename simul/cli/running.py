"""Running an evaluation from a command: checked engine options, progress, and what Ctrl-C leaves behind."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
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

from simul.cli.common import err_console, interrupt_exit, show_progress
from simul.common.errors import UsageError
from simul.common.safe_text import markup
from simul.decoding.draft_model import DraftSettings
from simul.decoding.engine import EngineSettings
from simul.decoding.longform import WindowPolicy
from simul.decoding.stream import MAX_LEN_RATIO, MAX_LEN_SLACK
from simul.request.templates import TEMPLATE_NAMES
from simul.runs.evaluation import EvalOutcome, EvalRequest, Interrupted, run_evaluation
from simul.runs.side_by_side import LaneRecord, run_side_by_side

PLAIN_PROGRESS_EVERY = 10.0  # seconds between plain progress lines (stderr not a terminal)


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


def _clock(seconds: float) -> str:
    whole = max(0, round(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


class PlainProgress:
    """Progress for logs (stderr not a terminal): a plain line at most every ``every`` seconds, and one when
    the last stream is done: streams done, elapsed time and the estimated time left.

    The estimate is (time so far / streams decoded in this process) x streams left; streams resumed from a
    run directory are not counted as decoded, so they do not shorten it.
    """

    def __init__(
        self,
        label: str,
        every: float = PLAIN_PROGRESS_EVERY,
        clock: Callable[[], float] = time.monotonic,
        write: Callable[[str], None] | None = None,
    ) -> None:
        self.label = label
        self.every = every
        self.clock = clock
        self.write = write or (lambda line: err_console.print(line, markup=False, highlight=False))
        self.start: float | None = None
        self.first_done = 0
        self.last: float | None = None

    def update(self, done: int, total: int) -> None:
        now = self.clock()
        if self.start is None:
            self.start, self.first_done = now, done
            self.write(f"{self.label}: {done}/{total} streams to start with")
            self.last = now
            return
        assert self.last is not None
        if done < total and now - self.last < self.every:
            return
        self.last = now
        elapsed = now - self.start
        decoded = done - self.first_done
        eta = _clock(elapsed / decoded * (total - done)) if decoded > 0 else "unknown"
        percent = 100 * done // total if total else 100
        self.write(f"{self.label}: {done}/{total} streams ({percent}%), {_clock(elapsed)} elapsed, ETA {eta}")

    def stage(self, description: str) -> None:
        self.write(f"{self.label}: {description}")


def check_engine_options(
    n_ctx: int,
    threads: int | None,
    verify_chunk: int,
    template: str,
    parallel: int = 1,
    max_len: tuple[float, int] = (MAX_LEN_RATIO, MAX_LEN_SLACK),
) -> None:
    """The engine options of eval, sweep and bench, checked before anything is loaded (usage errors).
    llama.cpp itself crashed on a context of 0 tokens, so nothing out of range may reach it."""
    if parallel < 1:
        raise UsageError(f"--parallel must be 1 or more, got {parallel}")
    if n_ctx < 1:
        raise UsageError(f"--n-ctx must be a positive number of tokens (e.g. 2048), got {n_ctx}")
    if threads is not None and threads < 0:
        raise UsageError(f"--threads must be 0 (auto) or a positive number of threads, got {threads}")
    if verify_chunk < 0:
        raise UsageError(
            f"--verify-chunk must be 0 (whole drafts) or a positive chunk size, got {verify_chunk}"
        )
    if template not in TEMPLATE_NAMES:
        raise UsageError(f"unknown --template {template!r}; choose one of: {', '.join(TEMPLATE_NAMES)}")
    check_length_cap(*max_len)


def check_length_cap(ratio: float, slack: int) -> None:
    """The output length cap of an update, ``int(ratio x source tokens) + slack``, must let every update say
    something: neither part negative, and not both 0 (a cap of 0 tokens)."""
    if not math.isfinite(ratio) or ratio < 0:
        raise UsageError(f"--max-len-ratio must be 0 or more tokens per source token (e.g. 2), got {ratio:g}")
    if slack < 0:
        raise UsageError(f"--max-len-slack must be 0 or more tokens (e.g. 10), got {slack}")
    if ratio == 0 and slack == 0:
        raise UsageError(
            "--max-len-ratio 0 with --max-len-slack 0 caps every update at 0 tokens: give one of them a "
            "positive value (e.g. --max-len-slack 64 for 64 tokens an update)"
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
    window: WindowPolicy | None = None,
    draft: DraftSettings | None = None,
    exact: bool | None = None,
    max_len: tuple[float, int] = (MAX_LEN_RATIO, MAX_LEN_SLACK),
) -> EngineSettings:
    check_engine_options(n_ctx, threads, verify_chunk, template, parallel, max_len)
    window = window or WindowPolicy()
    window.check()
    return EngineSettings(
        model=model,
        template=template,
        n_ctx=n_ctx,
        threads=threads,
        fuse=fuse,
        verify_chunk=verify_chunk,
        n_gpu_layers=n_gpu_layers,
        parallel=parallel,
        window=window,
        draft=draft,
        exact=exact,
        max_len_ratio=max_len[0],
        max_len_slack=max_len[1],
    )


def run_with_progress(
    request: EvalRequest,
    quiet: bool,
    label: str,
    on_interrupt: Callable[[EvalOutcome], None] | None = None,
) -> EvalOutcome:
    """Run the evaluation under a progress bar over streams (plain lines when stderr is not a terminal).

    On Ctrl-C or SIGTERM the finished streams are kept (in the run directory when there is one),
    ``on_interrupt`` reports what was done, and the command exits 130 (143 for SIGTERM).
    """
    plain = None if quiet or show_progress(quiet) else PlainProgress(label)
    with progress_bar(show_progress(quiet)) as bar:
        task = bar.add_task(label, total=None, rate="")

        def on_progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)
            if plain is not None:
                plain.update(done, total)

        def on_scoring() -> None:
            bar.update(task, description="scoring")
            if plain is not None:
                plain.stage("scoring")

        try:
            return run_evaluation(
                request,
                progress=on_progress,
                on_comet_loading=on_scoring,
                on_throughput=lambda meter: bar.update(
                    task, rate=f"{meter.updates_per_second:.1f} updates/s"
                ),
            )
        except Interrupted as stop:
            bar.stop()
            if on_interrupt is not None and stop.outcome.stage == "decoding":
                on_interrupt(stop.outcome)
            raise typer.Exit(code=report_interrupted(stop, request.out)) from None


def report_interrupted(stop: Interrupted, out: Path | None, what_run: str = "") -> int:
    """Say what an interrupted evaluation kept (``what_run`` names it, when there are several); returns the
    exit code."""
    outcome = stop.outcome
    what, code = interrupt_exit(stop.cause)
    if outcome.stage == "scoring":
        hint = f"; score them with `simul eval --resume --out {markup(out)}` (same options)" if out else ""
        err_console.print(
            f"[yellow]{what}[/]{what_run} while scoring: all {outcome.streams_done} streams were decoded"
            f"{' and are kept' if out else ''}{hint}"
        )
    else:
        hint = f"; continue with --resume --out {markup(out)}" if out else ""
        err_console.print(
            f"[yellow]{what}[/]{what_run} after {outcome.streams_done} of {outcome.streams_total} "
            f"streams: finished streams are kept{hint}"
        )
    return code


def run_side_by_side_with_progress(
    requests: Sequence[EvalRequest], names: Sequence[str], quiet: bool, label: str
) -> tuple[list[EvalOutcome], list[LaneRecord]]:
    """Run the evaluations in turns (simul.runs.side_by_side) under one progress bar per evaluation.

    On Ctrl-C or SIGTERM every evaluation keeps its finished streams (in its run directory when it has one),
    each says what it kept, and the command exits 130 (143 for SIGTERM)."""
    plain = [None if quiet or show_progress(quiet) else PlainProgress(f"{label} {n}") for n in names]
    with progress_bar(show_progress(quiet)) as bar:
        tasks = [bar.add_task(f"{label} {name}", total=None, rate="") for name in names]

        def on_progress(lane: int, done: int, total: int) -> None:
            bar.update(tasks[lane], completed=done, total=total)
            shown = plain[lane]
            if shown is not None:
                shown.update(done, total)

        try:
            return run_side_by_side(requests, names, progress=on_progress)
        except Interrupted as stop:
            bar.stop()
            code = report_interrupted(stop, requests[0].out, f" ({names[0]})")
            raise typer.Exit(code=code) from None

"""`simul show RUN_DIR --stream ID`: one stream's updates, per step and method (the paper's Table 7)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from simul.cli.aliases import command_class
from simul.cli.common import err_console, handle_errors, warn_being_written
from simul.common.errors import SimulError, UsageError
from simul.common.files import check_writable_file
from simul.common.safe_text import excerpt, markup, visible
from simul.machine.load_following import changes_note
from simul.reports.error_spans import spans_html, spans_table
from simul.reports.show import html_page, rich_text, stream_view, talk_view
from simul.reports.talk_plot import draw_talk_cost
from simul.runs.directory import LoadedRun, load_run, read_error_spans, write_atomic
from simul.streams.references import reference_lines

if TYPE_CHECKING:
    from simul.decoding.records import StreamResult


def register(app: typer.Typer) -> None:
    @app.command("show", cls=command_class())
    @handle_errors
    def show_command(
        run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
        stream: Annotated[
            str | None, typer.Option("--stream", help="The stream (or talk) id to show.")
        ] = None,
        method: Annotated[
            list[str] | None, typer.Option("--method", help="Method keys to show (repeatable). Default: all.")
        ] = None,
        html_file: Annotated[
            Path | None, typer.Option("--html", help="Also write a self-contained HTML page.")
        ] = None,
        steps: Annotated[
            str | None,
            typer.Option(
                "--steps",
                help="Long-form streams: the updates to show, FIRST:LAST (1-based, inclusive; either may be "
                "left out). Default: the last 30 in the terminal, all of them in --html.",
            ),
        ] = None,
        plot: Annotated[
            Path | None,
            typer.Option(
                "--plot",
                help="Long-form runs: write the cost per update against the position in the talk (.png or "
                ".svg), every method beside RT; for one talk with --stream, else all talks pooled.",
            ),
        ] = None,
    ) -> None:
        """Show how a stream's translation evolved: reused, new, erased and masked text per step.

        For a long-form stream (a whole talk) each update shows the talk scrolled to its open window:
        committed text, the window boundary, and the open window marked as for a sentence. A run scored
        with XCOMET also shows the stream's error spans (per re-segmented segment for a talk)."""
        for path in (html_file, plot):
            if path is not None:
                check_writable_file(path)  # before the work, not after it
        if plot is not None and plot.suffix.lower() not in (".png", ".svg"):
            raise UsageError(f"--plot {plot}: give a .png or .svg file name")
        loaded = load_run(run_dir, allow_incomplete=True)
        warn_being_written(run_dir, loaded.being_written, "showing")
        if stream is None:
            if plot is None:
                raise UsageError("give --stream ID (or --plot FILE for all talks of a long-form run)")
            _plot_run(run_dir, loaded, method, plot)
            return
        if stream not in loaded.streams:
            some = ", ".join(excerpt(s) for s in list(loaded.streams)[:5])
            raise SimulError(f"{run_dir} has no stream {excerpt(stream)}; it has e.g. {some}")
        keys = method or [m.key for m in loaded.methods]
        unknown = [k for k in keys if k not in loaded.results]
        if unknown:
            raise SimulError(
                f"{run_dir} has no method {excerpt(unknown[0])}; it has {', '.join(loaded.results)}"
            )
        results = []
        for key in keys:
            found = next((r for r in loaded.results[key] if r.stream_id == stream), None)
            if found is None:
                raise SimulError(f"stream {excerpt(stream)} was not finished in {run_dir}")
            results.append(found)
        source = loaded.streams[stream]
        first, last = _step_range(steps, source.longform, len(results[0].steps))
        views = talk_view(source, results, first, last) if source.longform else stream_view(source, results)
        table = Table(
            title=markup(f"{stream} ({source.src}->{source.tgt})", newlines=False),
            caption="[bold cyan]new source[/]  [underline]accepted draft[/]  "
            + ("[underline italic]accepted from a later drafter[/]  " if _names_drafters(results) else "")
            + "[bold]newly decoded[/]  [strike red]erased[/]  [dim]hidden by mask-k[/]"
            + ("  [green]committed[/]  [bold magenta]┃[/] window boundary" if source.longform else ""),
            caption_justify="left",
            show_lines=True,
            header_style="bold",
        )
        table.add_column("step", justify="right", no_wrap=True)
        table.add_column("source")
        for result in results:
            table.add_column(markup(result.method.label))
        for view in views:
            when = str(view.index + 1) + (f"\n{view.time_ms / 1000:.1f}s" if view.time_ms is not None else "")
            table.add_row(when, rich_text(view.source), *(rich_text(o) for o in view.outputs))  # type: ignore[arg-type]
        err_console.print(table)
        environment = loaded.run.get("environment")
        changed = changes_note(environment.get("thread_changes") if isinstance(environment, dict) else None)
        if changed:  # exact mode's threads followed the load during the run
            err_console.print(visible(changed), markup=False, highlight=False)
        if not source.longform:
            for line in reference_lines(source):
                err_console.print(visible(line), markup=False, highlight=False)
        labels = {r.method.key: r.method.label for r in results}
        span_lines = [
            line
            for line in read_error_spans(run_dir)
            if line["stream"] == stream and line["method"] in labels
        ]
        if span_lines:
            err_console.print(spans_table(stream, span_lines, labels))
        svg = ""
        if source.longform and (plot is not None or html_file is not None):
            labelled = {r.method.label: [r.steps] for r in results}
            svg = draw_talk_cost(labelled, f"{stream}: cost per update", plot)
            if plot is not None:
                err_console.print(f"wrote {visible(plot)}", markup=False)
        if html_file is not None:
            page_first, page_last = _step_range(steps, False, len(results[0].steps))
            page_views = talk_view(source, results, page_first, page_last) if source.longform else None
            extra = spans_html(span_lines, labels, source.tgt) if span_lines else ""
            write_atomic(html_file, html_page(source, results, f"simul: {stream}", page_views, svg, extra))
            err_console.print(f"wrote {visible(html_file)}", markup=False)


def _names_drafters(results: list[StreamResult]) -> bool:
    """Whether a method's steps name the drafter of each token (simul show then marks a later drafter's)."""
    return any(step.drafters_written for result in results for step in result.steps)


def _step_range(text: str | None, longform: bool, n_steps: int) -> tuple[int, int | None]:
    """0-based first and last update from ``--steps FIRST:LAST`` (1-based); by default a talk shows its last
    30 updates in the terminal, a sentence all of its steps."""
    if text is None:
        return (max(0, n_steps - 30), None) if longform else (0, None)
    head, sep, tail = text.partition(":")
    try:
        first = int(head) - 1 if head.strip() else 0
        last = int(tail) - 1 if tail.strip() else None
        if not sep:
            last = first
    except ValueError:
        raise UsageError(f"--steps {text!r}: give FIRST:LAST, e.g. 1:40 or 200: (1-based)") from None
    if first < 0 or (last is not None and last < first):
        raise UsageError(f"--steps {text!r}: FIRST must be 1 or more and LAST not before FIRST")
    return first, last


def _plot_run(run_dir: Path, loaded: LoadedRun, keys: list[str] | None, plot: Path) -> None:
    talks = [sid for sid, s in loaded.streams.items() if s.longform]
    if not talks:
        raise SimulError(f"{run_dir} has no long-form streams; --plot draws the cost along whole talks")
    chosen = keys or [m.key for m in loaded.methods]
    labelled = {}
    for key in chosen:
        if key not in loaded.results:
            raise SimulError(f"{run_dir} has no method {excerpt(key)}; it has {', '.join(loaded.results)}")
        results = [r for r in loaded.results[key] if r.stream_id in talks]
        if results:
            labelled[results[0].method.label] = [r.steps for r in results]
    draw_talk_cost(labelled, f"{len(talks)} talks: cost per update along the talk", plot)
    err_console.print(f"wrote {visible(plot)}", markup=False)

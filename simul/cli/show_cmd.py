"""`simul show RUN_DIR --stream ID`: one stream's updates, per step and method (the paper's Table 7)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from simul.cli.common import err_console, handle_errors, warn_being_written
from simul.common.errors import SimulError
from simul.common.files import check_writable_file
from simul.common.safe_text import excerpt, markup, visible
from simul.reports.show import html_page, rich_text, stream_view
from simul.runs.directory import load_run, write_atomic
from simul.streams.references import reference_lines


def register(app: typer.Typer) -> None:
    @app.command("show")
    @handle_errors
    def show_command(
        run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
        stream: Annotated[str, typer.Option("--stream", help="The stream id to show.")],
        method: Annotated[
            list[str] | None, typer.Option("--method", help="Method keys to show (repeatable). Default: all.")
        ] = None,
        html_file: Annotated[
            Path | None, typer.Option("--html", help="Also write a self-contained HTML page.")
        ] = None,
    ) -> None:
        """Show how a stream's translation evolved: reused, new, erased and masked text per step."""
        if html_file is not None:
            check_writable_file(html_file)  # before the work, not after it
        loaded = load_run(run_dir, allow_incomplete=True)
        warn_being_written(run_dir, loaded.being_written, "showing")
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
        table = Table(
            title=markup(f"{stream} ({source.src}->{source.tgt})", newlines=False),
            caption="[bold cyan]new source[/]  [underline]accepted draft[/]  [bold]newly decoded[/]  "
            "[strike red]erased[/]  [dim]hidden by mask-k[/]",
            caption_justify="left",
            show_lines=True,
            header_style="bold",
        )
        table.add_column("step", justify="right", no_wrap=True)
        table.add_column("source")
        for result in results:
            table.add_column(markup(result.method.label))
        for view in stream_view(source, results):
            when = str(view.index + 1) + (f"\n{view.time_ms / 1000:.1f}s" if view.time_ms is not None else "")
            table.add_row(when, rich_text(view.source), *(rich_text(o) for o in view.outputs))  # type: ignore[arg-type]
        err_console.print(table)
        for line in reference_lines(source):
            err_console.print(visible(line), markup=False, highlight=False)
        if html_file is not None:
            write_atomic(html_file, html_page(source, results, f"simul: {stream}"))
            err_console.print(f"wrote {visible(html_file)}", markup=False)

"""`simul streams stats`, `show` and `export`: look inside a stream file, or write it for another tool."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from simul.cli.common import err_console, handle_errors, print_json
from simul.cli.streams_cmd.common import (
    LimitOption,
    OutputOption,
)
from simul.common.errors import SimulError, UsageError
from simul.common.safe_text import excerpt, markup, plain
from simul.streams.format import Stream, read_streams
from simul.streams.references import reference_lines
from simul.streams.stats import step_changes, stream_stats


def _stats_table(path: Path, stats: dict[str, Any]) -> Table:
    table = Table(title=markup(f"simul streams stats: {path.name}", newlines=False), show_header=True)
    table.add_column("", style="bold")
    table.add_column("value", justify="right")

    def spread(key: str) -> str:
        s = stats[key]
        return f"mean {s['mean']:g}, median {s['median']:g}, max {s['max']:g}"

    unit = stats["unit"] + "s"
    table.add_row("streams", str(stats["streams"]))
    table.add_row("languages", markup(", ".join(f"{k} ({v})" for k, v in stats["languages"].items())))
    table.add_row("steps", str(stats["steps"]))
    table.add_row("steps per stream", spread("steps_per_stream"))
    table.add_row(f"{unit} added per step", spread("added_per_step"))
    table.add_row(f"final source {unit}", spread("final_length"))
    table.add_row("steps that revise", f"{stats['revise_share']:.1%} ({stats['revising_steps']})")
    table.add_row("... before the final step", f"{stats['revise_share_before_final']:.1%}")
    table.add_row("timed streams", f"{stats['timed_streams']} of {stats['streams']}")
    if "final_time_ms" in stats:
        table.add_row("final step time (ms)", spread("final_time_ms"))
    table.add_row("simulated streams", str(stats["simulated_streams"]))
    table.add_row("with reference", str(stats["with_reference"]))
    per_stream = stats["references_per_stream"]
    if set(per_stream) - {"0", "1"}:
        shown = ", ".join(f"{count} with {n}" for n, count in per_stream.items())
        table.add_row("references per stream", shown)
    if "partials" in stats:
        table.add_row("partials (files)", f"{stats['partials']} ({stats['partials_files']})")
        table.add_row("unaligned partials", str(stats["unaligned_partials"]))
        table.add_row("unaligned words", str(stats["unaligned_words"]))
    return table


@handle_errors
def stats_command(
    path: Annotated[Path, typer.Argument(help="Stream file (JSONL).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON on stdout.")] = False,
) -> None:
    """Streams, steps per stream, units added per step, share of revising steps, timing."""
    stats = {"file": str(path), **stream_stats(read_streams(path))}
    err_console.print(_stats_table(path, stats))
    if as_json:
        print_json(stats)


def _find_stream(path: Path, stream_id: str) -> Stream:
    streams = read_streams(path)
    for stream in streams:
        if stream.id == stream_id:
            return stream
    close = difflib.get_close_matches(stream_id, [s.id for s in streams], n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; ids look like {excerpt(streams[0].id)}"
    raise SimulError(f"no stream {excerpt(stream_id)} in {path}{hint}")


@handle_errors
def show_command(
    path: Annotated[Path, typer.Argument(help="Stream file (JSONL).")],
    stream_id: Annotated[str, typer.Option("--id", help="Id of the stream to show.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the stream record as JSON on stdout.")
    ] = False,
) -> None:
    """The steps of one stream, with their times and how each changes the previous one."""
    stream = _find_stream(path, stream_id)
    table = Table(
        title=markup(f"{stream.id} ({stream.src}->{stream.tgt}, {len(stream.steps)} steps)", newlines=False),
        caption="\n".join(markup(line) for line in reference_lines(stream)) or "no reference",
    )
    table.add_column("#", justify="right")
    table.add_column("time ms", justify="right")
    table.add_column("change")
    table.add_column("+/-", justify="right")
    table.add_column("source", overflow="fold")
    for index, (step, change) in enumerate(zip(stream.steps, step_changes(stream), strict=True)):
        time = "-" if step.time_ms is None else f"{step.time_ms:.0f}"
        kind = change.kind + (" (final)" if step.final else "")
        table.add_row(str(index), time, kind, f"+{change.added} -{change.removed}", plain(step.source))
    err_console.print(table)
    if as_json:
        print_json(stream.to_json())


@handle_errors
def export_command(
    path: Annotated[Path, typer.Argument(help="Stream file (JSONL).")],
    output: OutputOption,
    format: Annotated[
        str, typer.Option("--format", help="ssbd-ref: the SSBD reference's stream.jsonl.")
    ] = "ssbd-ref",
    limit: LimitOption = None,
) -> None:
    """Write streams in another tool's input format (the SSBD reference: `llama-self-spec-bias -f FILE`)."""
    from simul.runs.directory import write_atomic
    from simul.runs.ingest.ssbd_ref import stream_lines

    if format != "ssbd-ref":
        raise UsageError(f"unknown --format {format!r}; choose one of: ssbd-ref")
    streams = read_streams(path, limit)
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(output, stream_lines(streams))
    err_console.print(f"wrote {len(streams)} streams to {output} (the SSBD reference's stream.jsonl)")

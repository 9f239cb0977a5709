"""`simul streams stats`, `show` and `export`: look inside a stream file, or write it for another tool."""

from __future__ import annotations

import difflib
import shlex
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.table import Table

from simul.cli.common import err_console, handle_errors, print_json
from simul.cli.streams_cmd.common import LimitOption, OutOption
from simul.common.errors import SimulError, UsageError
from simul.common.languages import get_language
from simul.common.safe_text import excerpt, markup, plain
from simul.streams.format import Stream, read_streams
from simul.streams.references import reference_lines
from simul.streams.stats import step_changes, stream_stats, talk_seconds


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


# More talks than this are summed up in one row (the JSON lists them all).
_TALK_ROWS = 50


def _talks_table(talks: list[dict[str, Any]], unit: str) -> Table:
    table = Table(title=f"long-form streams ({len(talks)})", show_header=True)
    table.add_column("talk", overflow="fold")
    for name in (f"{unit}s", "seconds", "segments", "steps"):
        table.add_column(name, justify="right")
    for talk in talks[:_TALK_ROWS]:
        seconds = "-" if talk["seconds"] is None else f"{talk['seconds']:.1f}"
        table.add_row(
            plain(talk["id"]), str(talk["words"]), seconds, str(talk["segments"]), str(talk["steps"])
        )
    if len(talks) > _TALK_ROWS:
        table.add_row(f"... {len(talks) - _TALK_ROWS} more (--json lists all)", "", "", "", "")
    return table


@handle_errors
def stats_command(
    path: Annotated[Path, typer.Argument(help="Stream file (JSONL).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON on stdout.")] = False,
) -> None:
    """Streams, steps per stream, units added per step, share of revising steps, timing."""
    stats = {"file": str(path), **stream_stats(read_streams(path))}
    err_console.print(_stats_table(path, stats))
    if "talks" in stats:
        err_console.print(_talks_table(stats["talks"], stats["unit"]))
    if as_json:
        print_json(stats)


def _find_stream(path: Path, stream_id: str | None) -> Stream:
    streams = read_streams(path)
    if stream_id is None:
        if len(streams) == 1:
            return streams[0]
        raise UsageError(
            f"{path} holds {len(streams)} streams: pick one with --id (ids look like "
            f"{excerpt(streams[0].id)})"
        )
    for stream in streams:
        if stream.id == stream_id:
            return stream
    close = difflib.get_close_matches(stream_id, [s.id for s in streams], n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; ids look like {excerpt(streams[0].id)}"
    raise SimulError(f"no stream {excerpt(stream_id)} in {path}{hint}")


@handle_errors
def show_command(
    path: Annotated[Path, typer.Argument(help="Stream file (JSONL).")],
    stream_id: Annotated[
        str | None, typer.Option("--id", help="Id of the stream to show (may be left out if there is one).")
    ] = None,
    first: Annotated[
        int | None, typer.Option("--from", help="Long-form: the first step to show (0-based).")
    ] = None,
    last: Annotated[int | None, typer.Option("--to", help="Long-form: the last step to show.")] = None,
    words: Annotated[
        int, typer.Option(help="Long-form: show the last N words (characters for zh/ja) of each step.")
    ] = 12,
    segments: Annotated[
        bool, typer.Option("--segments", help="Long-form: list the reference segments instead of the steps.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the stream record as JSON on stdout.")
    ] = False,
) -> None:
    """The steps of one stream, with their times and how each changes the previous one.

    A long-form stream (a whole talk) is shown scrolled: each step as the last --words words of the
    transcript so far, steps --from..--to; --segments lists its reference segments."""
    stream = _find_stream(path, stream_id)
    if not stream.longform and (first is not None or last is not None or segments or words != 12):
        raise UsageError("--from, --to, --words and --segments apply to long-form streams only")
    if stream.longform:
        err_console.print(_segments_table(stream) if segments else _talk_table(stream, first, last, words))
    else:
        err_console.print(_steps_table(stream))
    if as_json:
        print_json(stream.to_json())


def _steps_table(stream: Stream) -> Table:
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
    return table


def _talk_title(stream: Stream) -> str:
    seconds = talk_seconds(stream)
    length = "" if seconds is None else f", {seconds:.1f} s"
    return (
        f"{stream.id} ({stream.src}->{stream.tgt}, long-form{length}, {len(stream.segments)} segments, "
        f"{len(stream.steps)} steps)"
    )


def _step_range(stream: Stream, first: int | None, last: int | None) -> range:
    n = len(stream.steps)
    lo = 0 if first is None else first
    hi = n - 1 if last is None else last
    if not 0 <= lo < n or not 0 <= hi < n or hi < lo:
        raise UsageError(f"--from/--to must pick steps within 0..{n - 1}, --from not after --to")
    return range(lo, hi + 1)


def _tail(text: str, count: int, unspaced: bool) -> str:
    """The last ``count`` units of ``text``, with an ellipsis when it is cut."""
    if unspaced:
        return text if len(text) <= count else "…" + text[-count:]
    parts = text.split()
    return text if len(parts) <= count else "… " + " ".join(parts[-count:])


def _talk_table(stream: Stream, first: int | None, last: int | None, words: int) -> Table:
    if words < 1:
        raise UsageError(f"--words must be at least 1, got {words}")
    shown = _step_range(stream, first, last)
    unspaced = get_language(stream.src).unspaced
    table = Table(
        title=markup(_talk_title(stream), newlines=False),
        caption=f"steps {shown.start}..{shown.stop - 1} of {len(stream.steps)}; each step: the last {words} "
        f"{'characters' if unspaced else 'words'} of the transcript so far (--words, --from, --to)",
    )
    table.add_column("#", justify="right")
    table.add_column("time ms", justify="right")
    table.add_column("change")
    table.add_column("+/-", justify="right")
    table.add_column("total", justify="right")
    table.add_column("transcript so far", overflow="fold")
    changes = step_changes(stream)
    for index in shown:
        step, change = stream.steps[index], changes[index]
        time = "-" if step.time_ms is None else f"{step.time_ms:.0f}"
        kind = change.kind + (" (final)" if step.final else "")
        table.add_row(
            str(index),
            time,
            kind,
            f"+{change.added} -{change.removed}",
            str(change.length),
            plain(_tail(step.source, words, unspaced)),
        )
    return table


def _segments_table(stream: Stream) -> Table:
    table = Table(title=markup(_talk_title(stream), newlines=False), caption="reference segments")
    table.add_column("#", justify="right")
    table.add_column("start s", justify="right")
    table.add_column("end s", justify="right")
    table.add_column("source", overflow="fold")
    table.add_column("reference", overflow="fold")
    for number, seg in enumerate(stream.segments, start=1):
        start = "-" if seg.offset_ms is None else f"{seg.offset_ms / 1000.0:.2f}"
        end = "-" if seg.end_ms is None else f"{seg.end_ms / 1000.0:.2f}"
        refs = " | ".join(seg.references) if seg.references else "-"
        table.add_row(str(number), start, end, plain(seg.source or "-"), plain(refs))
    return table


@handle_errors
def export_command(
    path: Annotated[Path, typer.Argument(help="Stream file (JSONL).")],
    out: OutOption,
    format: Annotated[
        Literal["ssbd-ref"],
        typer.Option("--format", help="The format to write (ssbd-ref: the SSBD reference's stream.jsonl)."),
    ] = "ssbd-ref",
    limit: LimitOption = None,
    prompt_of: Annotated[
        Path | None,
        typer.Option(
            "--prompt-of",
            help="Also write this run directory's prompt as the reference's --in-prefix and --in-suffix "
            "texts, OUT's name with .prefix.txt and .suffix.txt, so that both tools decode from the same "
            "prompt (the run's streams and these must be of one language pair).",
        ),
    ] = None,
) -> None:
    """Write streams in another tool's input format (the SSBD reference: `llama-self-spec-bias -f FILE`)."""
    from simul.common.files import write_atomic
    from simul.runs.ingest.ssbd_ref import stream_lines

    if format != "ssbd-ref":
        raise UsageError(f"unknown --format {format!r}; choose one of: ssbd-ref")
    streams = read_streams(path, limit)
    halves = _run_prompt_halves(prompt_of, streams, path) if prompt_of is not None else None
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, stream_lines(streams))
    err_console.print(f"wrote {len(streams)} streams to {out} (the SSBD reference's stream.jsonl)")
    if halves is None:
        return
    prefix_file, suffix_file = (out.with_name(f"{out.stem}.{half}.txt") for half in ("prefix", "suffix"))
    write_atomic(prefix_file, halves[0])
    write_atomic(suffix_file, halves[1])
    # $(cat FILE) would drop a trailing newline (a chat prompt's suffix ends with one), and the reference
    # processes escapes in --in-prefix/--in-suffix unless told not to: hence the `x` and --no-escape. The
    # paths are quoted for the shell, so that the lines run as printed.
    pre, suf, stream = (shlex.quote(str(name)) for name in (prefix_file, suffix_file, out))
    err_console.print(
        f"wrote the prompt of {prompt_of} to {prefix_file} and {suffix_file}; pass them as they are:\n"
        f'  P="$(cat {pre}; echo x)"; P="${{P%x}}"; S="$(cat {suf}; echo x)"; S="${{S%x}}"\n'
        f'  llama-self-spec-bias -m MODEL -f {stream} --in-prefix "$P" --in-suffix "$S" --no-escape '
        "--temp 0 ...",
        markup=False,
        highlight=False,
        soft_wrap=True,  # lines to copy, not to be broken at the terminal's width
    )


def _run_prompt_halves(run_dir: Path, streams: list[Stream], path: Path) -> tuple[str, str]:
    """The run's prompt split at the source, after checking that it was rendered for these streams' pair."""
    from simul.runs.directory import RUN_FILE, load_run
    from simul.runs.ingest.ssbd_ref import prompt_halves

    run = load_run(run_dir, can_allow=False)
    model = run.run.get("config", {}).get("model", {})
    prompt = model.get("prompt") if isinstance(model, dict) else None
    if not isinstance(prompt, str) or not run.streams:
        raise SimulError(
            f"{run_dir / RUN_FILE} records no prompt (config.model.prompt); "
            "export the prompt of a run of simul eval or bench"
        )
    first = next(iter(run.streams.values()))
    pairs = sorted({(s.src, s.tgt) for s in streams})
    if pairs != [(first.src, first.tgt)]:
        named = ", ".join(f"{src}->{tgt}" for src, tgt in pairs)
        raise SimulError(
            f"{path} holds {named} but the prompt of {run_dir} is for {first.src}->{first.tgt}; the "
            "reference takes one prompt for every stream: export the streams of that pair, or the prompt of "
            "a run made on these"
        )
    return prompt_halves(prompt, str(run_dir / RUN_FILE))

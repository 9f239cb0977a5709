"""The options and output helpers the `simul streams` commands share."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simul.cli.common import err_console
from simul.common.errors import SimulError
from simul.common.safe_text import markup, visible
from simul.streams.asr.partials import STABLE_POLICIES
from simul.streams.asr.recognizer import VADS, WINDOWS
from simul.streams.format import Stream, write_streams
from simul.streams.partials import ALIGN_MODES, FORMATS, TIME_UNITS

OutputOption = Annotated[
    Path, typer.Option("--output", "-o", help="Stream file to write (JSONL, atomically).")
]
StartOption = Annotated[int, typer.Option(help="First segment/sentence to use (1-based line number).")]
LimitOption = Annotated[int | None, typer.Option(help="Use at most N segments/sentences from --start.")]
LongformOption = Annotated[
    bool,
    typer.Option(
        "--longform",
        help="One long-form stream per talk (the growing talk transcript, with its reference segments).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print a JSON summary on stdout.")]
PartialsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--partials",
        help="Recognizer output, FILE or TALK=FILE (repeatable; a talk id in the file name also works).",
    ),
]
FormatOption = Annotated[
    str | None,
    typer.Option(help=f"Format of --partials: {', '.join(FORMATS)} (default: from the file suffix)."),
]
TimeUnitOption = Annotated[
    str | None,
    typer.Option(
        help=f"Unit of the times in --partials: {', '.join(TIME_UNITS)} (default: sltev cs, else ms)."
    ),
]
AlignOption = Annotated[
    str, typer.Option(help=f"Assign recognized words to segments by {' or '.join(ALIGN_MODES)}.")
]
MaxGapOption = Annotated[
    float, typer.Option(help="Words up to this far (ms) outside every segment go to the nearest one.")
]
SegmentsOption = Annotated[
    Path | None,
    typer.Option(help="Segment YAML ({offset, duration, wav} per segment). Default: found next to the text."),
]
AsrModelOption = Annotated[
    Path | None,
    typer.Option(
        help="faster-whisper (CTranslate2) model folder. Default: Whisper base from the simul[asr] packages."
    ),
]
StableOption = Annotated[
    str,
    typer.Option(
        help=f"Partials shown: {' or '.join(STABLE_POLICIES)} (LocalAgreement-2: what the last two agree on)."
    ),
]
AsrWindowOption = Annotated[
    str, typer.Option(help=f"Encoder input: {' or '.join(WINDOWS)} (audio so far + 3 s, or 30 s windows).")
]
VadOption = Annotated[str, typer.Option(help=f"Speech gate before Whisper: {', '.join(VADS)}.")]
AsrComputeOption = Annotated[str, typer.Option(help="CTranslate2 compute type (int8, float32, ...).")]
AsrBeamOption = Annotated[int, typer.Option(help="Whisper beam size (1: greedy).")]
AsrThreadsOption = Annotated[int, typer.Option(help="CPU threads for Whisper (0: min(4, cores)).")]


def summary_line(count: int, output: Path, unaligned: int, what: str) -> None:
    err_console.print(
        visible(f"wrote {count} streams to {output}; {unaligned} partials unaligned ({what})"),
        soft_wrap=True,
        highlight=False,
        markup=False,
    )


def write_output(output: Path, streams: list[Stream], partials: list[str] | None = None) -> int:
    if not streams:
        if partials:
            raise SimulError(
                f"no streams to write: the partials in {', '.join(partials)} reach none of the selected "
                "segments (see the warnings above)"
            )
        raise SimulError(
            "no streams to write: nothing was selected or the partials reach none of the segments"
        )
    return write_streams(output, streams)


def warn(message: str, label: str = "warning") -> None:
    err_console.print(f"[yellow]{label}:[/] {markup(message)}", soft_wrap=True)

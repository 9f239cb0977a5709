"""The options and output helpers the `simul streams` commands share.

Languages and files are spelled apart, the same in every command: --src-lang and --tgt-lang name languages,
--source a file of source segments and --ref a file of references (repeatable: several references). The
stream file written is -o/--out. The old spellings (--output, --src and --tgt for languages, --src for a
file, --reference) still work, with a warning (simul.cli.aliases).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from simul.cli.aliases import Alias
from simul.cli.common import err_console, one_of, out_option
from simul.common.errors import SimulError
from simul.common.safe_text import markup, visible
from simul.streams.asr.partials import STABLE_POLICIES
from simul.streams.asr.recognizer import VADS, WINDOWS
from simul.streams.format import Stream, write_streams
from simul.streams.partials import ALIGN_MODES, FORMATS, TIME_UNITS

if TYPE_CHECKING:
    PartialsFormat = str
    TimeUnit = str
    AlignMode = str
    StablePolicy = str
    AsrWindow = str
    Vad = str
else:
    PartialsFormat = one_of(FORMATS)
    TimeUnit = one_of(TIME_UNITS)
    AlignMode = one_of(ALIGN_MODES)
    StablePolicy = one_of(STABLE_POLICIES)
    AsrWindow = one_of(WINDOWS)
    Vad = one_of(VADS)

# The old spellings, for the commands' aliases.
OLD_OUTPUT = Alias("--output", "--out")
OLD_SRC_LANG = Alias("--src", "--src-lang")
OLD_TGT_LANG = Alias("--tgt", "--tgt-lang")
OLD_SOURCE_FILE = Alias("--src", "--source")
OLD_REFERENCE = Alias("--reference", "--ref")

OutOption = Annotated[Path, out_option("Stream file to write (JSONL, atomically).")]


def src_lang_option(help: str = "Source language (FLORES code or short code).") -> Any:
    return typer.Option("--src-lang", help=help)


def tgt_lang_option(help: str = "Target language (FLORES code or short code).") -> Any:
    return typer.Option("--tgt-lang", help=help)


RefFilesOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--ref",
        metavar="<path>",
        help="Reference file, line-aligned with --source (repeatable: several references, the first one "
        "first).",
    ),
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
        metavar="<file>",
        help="Recognizer output, FILE or TALK=FILE (repeatable; a talk id in the file name also works).",
    ),
]
FormatOption = Annotated[
    PartialsFormat | None,
    typer.Option("--partials-format", help="Format of --partials (default: from the file suffix)."),
]
TimeUnitOption = Annotated[
    TimeUnit | None,
    typer.Option("--time-unit", help="Unit of the times in --partials (default: sltev cs, else ms)."),
]
AlignOption = Annotated[
    AlignMode, typer.Option("--align", help="Assign recognized words to segments by text or by time.")
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
    StablePolicy,
    typer.Option(
        "--stable",
        help="Partials shown: all, or what the last two agree on (local-agreement: LocalAgreement-2).",
    ),
]
AsrWindowOption = Annotated[
    AsrWindow,
    typer.Option(
        "--asr-window", help="Encoder input: the audio so far + 3 s (trimmed) or 30 s windows (padded)."
    ),
]
VadOption = Annotated[Vad, typer.Option("--vad", help="Speech gate before Whisper.")]
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

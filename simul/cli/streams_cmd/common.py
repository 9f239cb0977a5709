"""The options and output helpers the `simul streams` commands share.

Languages and files are spelled apart, the same in every command: --src-lang and --tgt-lang name languages,
--source a file of source segments and --ref a file of references (repeatable: several references). The
stream file written is -o/--out. The old spellings (--output, --src and --tgt for languages, --src for a
file, --reference) still work, with a warning (simul.cli.aliases).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from simul.cli.aliases import Alias
from simul.cli.common import err_console, out_option
from simul.common.errors import SimulError
from simul.common.safe_text import markup, visible
from simul.streams.format import Stream, write_streams

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
SegmentsOption = Annotated[
    Path | None,
    typer.Option(help="Segment YAML ({offset, duration, wav} per segment). Default: found next to the text."),
]


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

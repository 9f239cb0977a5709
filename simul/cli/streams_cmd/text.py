"""`simul streams flores` and `simul streams text`: fixed-lag streams from written text."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simul.cli.common import err_console, handle_errors, print_json
from simul.cli.streams_cmd.common import (
    JsonOption,
    LimitOption,
    OutOption,
    RefFilesOption,
    StartOption,
    src_lang_option,
    summary_line,
    tgt_lang_option,
    warn,
    write_output,
)
from simul.common.errors import UsageError
from simul.common.languages import get_language
from simul.streams.fixed_lag import LagUnit
from simul.streams.flores import flores_streams
from simul.streams.parallel_text import TextFormat
from simul.streams.text_streams import TextRequest, text_documents, text_streams


@handle_errors
def flores_command(
    out: OutOption,
    data_dir: Annotated[
        Path | None,
        typer.Option(help="FLORES-200 or FLORES+ folder. Default: the shipped 50-sentence devtest sample."),
    ] = None,
    split: Annotated[str, typer.Option(help="Split: devtest or dev (any split on disk).")] = "devtest",
    src_lang: Annotated[str, src_lang_option()] = "eng_Latn",
    tgt_lang: Annotated[str, tgt_lang_option()] = "deu_Latn",
    lag: Annotated[int, typer.Option(help="Words (characters for zh/ja) revealed per step.")] = 3,
    start: StartOption = 1,
    limit: LimitOption = None,
    as_json: JsonOption = False,
) -> None:
    """Fixed word-lag streams over FLORES: step t reveals the first t*lag words of each sentence."""
    streams = list(flores_streams(data_dir, split, src_lang, tgt_lang, lag, start=start, limit=limit))
    count = write_output(out, streams)
    pair = f"{get_language(src_lang).short}->{get_language(tgt_lang).short}"
    summary_line(count, out, 0, f"flores200 {split} {pair}, lag {lag}")
    if as_json:
        print_json({"output": str(out), "streams": count, "unaligned_partials": 0, "lag": lag})


@handle_errors
def text_command(
    out: OutOption,
    source: Annotated[
        Path | None,
        typer.Option(
            "--source",
            help="Source file: one segment per line, or a TSV/JSONL file holding references too (--format).",
        ),
    ] = None,
    ref: RefFilesOption = None,
    src_lang: Annotated[str | None, src_lang_option()] = None,
    tgt_lang: Annotated[str | None, tgt_lang_option()] = None,
    text_format: Annotated[
        TextFormat | None,
        typer.Option("--format", help="Format of --source (default: from its suffix; else lines)."),
    ] = None,
    testset: Annotated[
        str | None,
        typer.Option(help="A sacrebleu test set (e.g. wmt22), read through sacrebleu's cache ($SACREBLEU)."),
    ] = None,
    langpair: Annotated[str | None, typer.Option(help="Language pair of --testset, e.g. en-de.")] = None,
    lag: Annotated[int, typer.Option(help="Units revealed per step.")] = 3,
    unit: Annotated[
        LagUnit | None,
        typer.Option("--unit", help="Unit of --lag (default: char for zh/ja/th sources, else word)."),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option(
            help="Data set name for ids <name>-<line> (default: --source up to its first dot, or --testset)."
        ),
    ] = None,
    skip_empty: Annotated[
        bool,
        typer.Option(
            "--skip-empty",
            help="Leave out lines with an empty source or reference (counted) instead of failing.",
        ),
    ] = False,
    longform: Annotated[
        bool,
        typer.Option(
            "--longform",
            help="One long-form stream per document (--doc-ids): lag units per step across the document.",
        ),
    ] = False,
    doc_ids: Annotated[
        Path | None,
        typer.Option(
            "--doc-ids",
            help="With --longform: one document id per line of the text (WMT docids, ACL 60/60 talkids).",
        ),
    ] = None,
    start: StartOption = 1,
    limit: LimitOption = None,
    as_json: JsonOption = False,
) -> None:
    """Fixed-lag streams from parallel text (line-aligned files, TSV, JSONL) or a sacrebleu test set."""
    if longform != (doc_ids is not None):
        raise UsageError(
            "--longform needs --doc-ids FILE (the document of each line)"
            if longform
            else "--doc-ids only applies with --longform"
        )
    request = TextRequest(
        source=source,
        references=list(ref or []),
        text_format=text_format,
        src=src_lang,
        tgt=tgt_lang,
        testset=testset,
        langpair=langpair,
        lag=lag,
        unit=unit,
        name=name,
        start=start,
        limit=limit,
        skip_empty=skip_empty,
    )
    imported = text_documents(request, doc_ids) if doc_ids is not None else text_streams(request)
    for reason, lines in imported.built.skipped.items():
        shown = ", ".join(str(x) for x in lines[:20]) + (", ..." if len(lines) > 20 else "")
        warn(f"skipped {len(lines)} line(s) with an {reason} (--skip-empty): lines {shown}", label="note")
    count = write_output(out, imported.built.streams)
    refs = imported.references_per_stream
    kind, per = ("documents", "segment") if doc_ids is not None else ("streams", "stream")
    err_console.print(
        f"wrote {count} {kind} to {out} ({imported.name} {imported.src}->{imported.tgt}, "
        f"{refs} reference{'' if refs == 1 else 's'} per {per}, lag {lag} {imported.unit}s); "
        f"{imported.built.skipped_count} line{'' if imported.built.skipped_count == 1 else 's'} skipped",
        soft_wrap=True,
        highlight=False,
        markup=False,
    )
    if as_json:
        print_json({"output": str(out), **imported.summary(), "longform": doc_ids is not None})

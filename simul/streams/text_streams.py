"""`simul streams text`: fixed-lag streams from a user's parallel text or one of sacrebleu's test sets.

Same step rule as `simul streams flores` (both go through :mod:`simul.streams.fixed_lag`). Ids are
``<name>-<line>``; the provenance records ``dataset`` (the name), ``format``, ``source_file``,
``reference_files``, ``line``, ``lag``, ``unit`` and ``simulated``, and for a sacrebleu test set also
``testset``, ``langpair``, ``references`` (the translator labels) and ``sacrebleu`` (its version).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simul.common.errors import UsageError
from simul.common.languages import Language, get_language
from simul.streams.fixed_lag import (
    UNITS,
    AlignedLine,
    LagImport,
    check_selection,
    default_unit,
    lag_streams,
)
from simul.streams.longform import document_streams, read_doc_ids
from simul.streams.parallel_text import read_parallel_text
from simul.streams.testsets import testset_lines


@dataclass
class TextRequest:
    source: Path | None = None
    references: list[Path] = field(default_factory=list)
    text_format: str | None = None
    src: str | None = None
    tgt: str | None = None
    testset: str | None = None
    langpair: str | None = None
    lag: int = 3
    unit: str | None = None
    name: str | None = None
    start: int = 1
    limit: int | None = None
    skip_empty: bool = False


@dataclass
class TextImport:
    built: LagImport
    name: str
    src: str
    tgt: str
    references_per_stream: int
    unit: str

    def summary(self) -> dict[str, Any]:
        return {
            "streams": len(self.built.streams),
            "skipped": {reason: len(lines) for reason, lines in self.built.skipped.items()},
            "references_per_stream": self.references_per_stream,
            "unit": self.unit,
        }


def _check_request(request: TextRequest) -> None:
    if request.unit is not None and request.unit not in UNITS:
        raise UsageError(f"--unit must be one of {', '.join(UNITS)}, got {request.unit!r}")
    if request.testset is not None:
        if request.source is not None or request.references or request.text_format is not None:
            raise UsageError("--testset reads sacrebleu's files: leave out --source, --ref and --format")
        if request.langpair is None:
            raise UsageError("--testset needs --langpair, e.g. --testset wmt22 --langpair en-de")
        if request.src is not None or request.tgt is not None:
            raise UsageError("--testset takes its languages from --langpair; leave out --src-lang/--tgt-lang")
        return
    if request.langpair is not None:
        raise UsageError("--langpair only applies with --testset")
    if request.source is None:
        raise UsageError(
            "pass the source with --source FILE (with --ref FILE ...), or --testset NAME --langpair L1-L2"
        )
    if request.src is None or request.tgt is None:
        raise UsageError(
            "pass the languages with --src-lang and --tgt-lang (e.g. --src-lang en --tgt-lang de)"
        )


@dataclass
class _Lines:
    lines: list[AlignedLine]
    name: str
    src: Language
    tgt: Language
    provenance: dict[str, Any]
    references_per_line: int
    what: str


def _read_lines(request: TextRequest) -> _Lines:
    """The lines of the test set (a sacrebleu set or the user's files), with their provenance."""
    if request.testset is not None:
        assert request.langpair is not None
        testset = testset_lines(request.testset, request.langpair)
        provenance = {**testset.provenance, "format": "sacrebleu"}
        name = request.name or request.testset.replace("/", "_")
        provenance["dataset"] = name
        return _Lines(
            lines=testset.lines,
            name=name,
            src=get_language(testset.src),
            tgt=get_language(testset.tgt),
            provenance=provenance,
            references_per_line=len(testset.provenance["reference_files"]),
            what=f"sacrebleu's {request.testset} {request.langpair} source",
        )
    assert request.source is not None and request.src is not None and request.tgt is not None
    src_lang, tgt_lang = get_language(request.src), get_language(request.tgt)
    text = read_parallel_text(request.source, request.references, request.text_format)
    name = request.name or request.source.name.split(".")[0]
    return _Lines(
        lines=text.lines,
        name=name,
        src=src_lang,
        tgt=tgt_lang,
        provenance={
            "dataset": name,
            "format": text.format,
            "source_file": text.source_file.name,
            "reference_files": [p.name for p in text.reference_files],
        },
        references_per_line=text.references_per_line,
        what=str(request.source),
    )


def text_documents(request: TextRequest, doc_ids: Path) -> TextImport:
    """Long-form streams, one per document of ``doc_ids`` (see simul.streams.longform)."""
    _check_request(request)
    if request.start != 1 or request.limit is not None:
        raise UsageError("--start and --limit select lines, not documents: leave them out with --longform")
    check_selection(request.lag, 1, None)
    read = _read_lines(request)
    documents = read_doc_ids(doc_ids, read.lines, read.what)
    unit = request.unit or default_unit(read.src)
    provenance = {**read.provenance, "doc_ids_file": doc_ids.name}
    streams, skipped = document_streams(
        documents, read.name, read.src, read.tgt, request.lag, unit, provenance, request.skip_empty
    )
    built = LagImport(streams=streams, skipped=skipped)
    return TextImport(built, read.name, read.src.short, read.tgt.short, read.references_per_line, unit)


def text_streams(request: TextRequest) -> TextImport:
    """Read the test set and build its streams (nothing is written here)."""
    _check_request(request)
    check_selection(request.lag, request.start, request.limit)
    read = _read_lines(request)
    unit = request.unit or default_unit(read.src)
    built = lag_streams(
        read.lines,
        id_prefix=read.name,
        src=read.src,
        tgt=read.tgt,
        lag=request.lag,
        unit=unit,
        provenance=read.provenance,
        start=request.start,
        limit=request.limit,
        skip_empty=request.skip_empty,
        what=read.what,
    )
    return TextImport(built, read.name, read.src.short, read.tgt.short, read.references_per_line, unit)

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
from simul.common.languages import get_language
from simul.streams.fixed_lag import UNITS, LagImport, check_selection, default_unit, lag_streams
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
            raise UsageError("--testset reads sacrebleu's files: leave out --src, --ref and --format")
        if request.langpair is None:
            raise UsageError("--testset needs --langpair, e.g. --testset wmt22 --langpair en-de")
        if request.src is not None or request.tgt is not None:
            raise UsageError("--testset takes its languages from --langpair; leave out --src-lang/--tgt-lang")
        return
    if request.langpair is not None:
        raise UsageError("--langpair only applies with --testset")
    if request.source is None:
        raise UsageError(
            "pass the source with --src FILE (with --ref FILE ...), or --testset NAME --langpair L1-L2"
        )
    if request.src is None or request.tgt is None:
        raise UsageError(
            "pass the languages with --src-lang and --tgt-lang (e.g. --src-lang en --tgt-lang de)"
        )


def text_streams(request: TextRequest) -> TextImport:
    """Read the test set and build its streams (nothing is written here)."""
    _check_request(request)
    check_selection(request.lag, request.start, request.limit)
    if request.testset is not None:
        assert request.langpair is not None
        testset = testset_lines(request.testset, request.langpair)
        src_lang, tgt_lang = get_language(testset.src), get_language(testset.tgt)
        lines = testset.lines
        provenance = {**testset.provenance, "format": "sacrebleu"}
        name = request.name or request.testset.replace("/", "_")
        provenance["dataset"] = name
        per_stream = len(testset.provenance["reference_files"])
        what = f"sacrebleu's {request.testset} {request.langpair} source"
    else:
        assert request.source is not None and request.src is not None and request.tgt is not None
        src_lang, tgt_lang = get_language(request.src), get_language(request.tgt)
        text = read_parallel_text(request.source, request.references, request.text_format)
        lines = text.lines
        name = request.name or request.source.name.split(".")[0]
        provenance = {
            "dataset": name,
            "format": text.format,
            "source_file": text.source_file.name,
            "reference_files": [p.name for p in text.reference_files],
        }
        per_stream = text.references_per_line
        what = str(request.source)
    unit = request.unit or default_unit(src_lang)
    built = lag_streams(
        lines,
        id_prefix=name,
        src=src_lang,
        tgt=tgt_lang,
        lag=request.lag,
        unit=unit,
        provenance=provenance,
        start=request.start,
        limit=request.limit,
        skip_empty=request.skip_empty,
        what=what,
    )
    return TextImport(built, name, src_lang.short, tgt_lang.short, per_stream, unit)

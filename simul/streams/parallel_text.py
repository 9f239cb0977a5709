"""Reading a user's own parallel text for `simul streams text`: line-aligned files, TSV and JSONL.

Formats (``--format``, or from the suffix: ``.tsv`` is TSV, ``.jsonl``/``.json`` JSONL, anything else lines):

* ``lines``: the source file and one file per reference (``--ref``, repeatable), one segment per line, as
  WMT and NTREX distribute them. The files must have the same number of lines.
* ``tsv``: ``source<TAB>reference[<TAB>reference...]`` per line, no header, no quoting. Every row has as
  many fields as the first one; a row with only a source means the set has no references.
* ``jsonl``: one object per line with ``src`` (a string) and ``ref`` (a string) or ``refs`` (a list of
  strings), or neither; other keys are ignored. Every line has as many references as the first one.
  Blank lines are skipped (line numbers still count them).

Files are read strictly, so that simul and the ``sacrebleu`` command line see the same lines: UTF-8 only,
no byte order mark, LF line ends only (a carriage return is an error naming its line). Each error names the
file and line and says how to fix it.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from simul.common.errors import SimulError, UsageError
from simul.common.limits import check_text_lines
from simul.streams.fixed_lag import AlignedLine

TextFormat = Literal["lines", "tsv", "jsonl"]
TEXT_FORMATS: tuple[TextFormat, ...] = get_args(TextFormat)


@dataclass(frozen=True)
class ParallelText:
    """The lines of a test set and the files they came from."""

    lines: list[AlignedLine]
    format: str
    source_file: Path
    reference_files: list[Path]  # empty for TSV/JSONL (the references are in the source file)
    references_per_line: int


def guess_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".tsv":
        return "tsv"
    if suffix in (".jsonl", ".json"):
        return "jsonl"
    return "lines"


def read_text_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file, split at LF (the last line needs no LF)."""
    if not path.exists():
        raise SimulError(f"{path} does not exist")
    if path.is_dir():
        raise SimulError(f"{path} is a directory; pass a text file with one segment per line")
    data = path.read_bytes()
    if data.startswith(codecs.BOM_UTF8):
        raise SimulError(
            f"{path}:1: the file starts with a byte order mark (BOM), which would become part of the first "
            f"segment; remove it (e.g. sed -i '1s/^\\xEF\\xBB\\xBF//' {path})"
        )
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise SimulError(f"{path}:1: the file is UTF-16; convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SimulError(
            f"{path}:{line}: not valid UTF-8 ({exc.reason} at byte {exc.start}); convert the file to UTF-8 "
            "(e.g. iconv -f LATIN1 -t UTF-8)"
        ) from None
    carriage = text.find("\r")
    if carriage >= 0:
        line = text.count("\n", 0, carriage) + 1
        raise SimulError(
            f"{path}:{line}: carriage return (Windows CRLF or old Mac CR line ends); convert the file to LF "
            f"line ends (e.g. dos2unix {path}) so that every tool sees the same lines"
        )
    if not text:
        return []
    lines = text.split("\n")
    lines = lines[:-1] if text.endswith("\n") else lines
    check_text_lines(lines, path)
    return lines


def read_parallel_text(source: Path, references: list[Path], text_format: str | None) -> ParallelText:
    """Read a test set in any of the formats; ``references`` only for ``lines``."""
    chosen = text_format or guess_format(source)
    if chosen not in TEXT_FORMATS:
        raise UsageError(f"--format must be one of {', '.join(TEXT_FORMATS)}, got {chosen!r}")
    if chosen != "lines" and references:
        raise UsageError(
            f"--ref is for line-aligned files; a {chosen.upper()} file carries its references itself"
        )
    if chosen == "tsv":
        return _read_tsv(source)
    if chosen == "jsonl":
        return _read_jsonl(source)
    return _read_aligned(source, references)


def _read_aligned(source: Path, references: list[Path]) -> ParallelText:
    sources = read_text_lines(source)
    if not sources:
        raise SimulError(f"{source} is empty; it needs one source segment per line")
    advice = "source and reference files must be line-aligned: one segment per line, same order"
    lines = line_aligned(source, sources, references, advice, which=True)
    return ParallelText(lines, "lines", source, list(references), len(references))


def line_aligned(
    source: Path, sources: list[str], references: Sequence[Path], advice: str, which: bool = False
) -> list[AlignedLine]:
    """One segment per source line, with the same line of every reference file. A reference file with
    another number of lines is refused, with ``advice`` (and with ``which``: whether it has fewer or
    more)."""
    columns: list[list[str]] = []
    for ref in references:
        ref_lines = read_text_lines(ref)
        if len(ref_lines) != len(sources):
            more = "fewer" if len(ref_lines) < len(sources) else "more"
            detail = f" ({more} in the reference)" if which else ""
            raise SimulError(
                f"{ref} has {len(ref_lines)} lines but {source} has {len(sources)}{detail}; {advice}"
            )
        columns.append(ref_lines)
    return [
        AlignedLine(
            line=index + 1,
            source=text,
            references=tuple(col[index] for col in columns),
            where_source=f"{source}:{index + 1}",
            where_references=tuple(f"{ref}:{index + 1}" for ref in references),
        )
        for index, text in enumerate(sources)
    ]


def _read_tsv(path: Path) -> ParallelText:
    rows = read_text_lines(path)
    if not rows:
        raise SimulError(f"{path} is empty; it needs one source<TAB>reference row per line")
    expected = len(rows[0].split("\t"))
    lines: list[AlignedLine] = []
    for index, row in enumerate(rows):
        number = index + 1
        where = f"{path}:{number}"
        fields = row.split("\t") if row else [""] * expected  # an empty row: empty source (skippable)
        if len(fields) != expected:
            few = "too few" if len(fields) < expected else "too many"
            raise SimulError(
                f"{where}: {len(fields)} tab-separated field(s), {few}: line 1 has {expected} (source, then "
                f"{expected - 1} reference(s)); every row needs the same fields, and a tab inside a segment "
                "is not possible in TSV"
            )
        lines.append(
            AlignedLine(
                line=number,
                source=fields[0],
                references=tuple(fields[1:]),
                where_source=f"{where} (field 1)",
                where_references=tuple(f"{where} (field {k + 2})" for k in range(expected - 1)),
            )
        )
    return ParallelText(lines, "tsv", path, [], expected - 1)


def _jsonl_references(obj: dict[str, Any], where: str) -> list[str]:
    if "ref" in obj and "refs" in obj:
        raise SimulError(f"{where}: give either 'ref' (a string) or 'refs' (a list), not both")
    if "refs" in obj:
        refs = obj["refs"]
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            raise SimulError(f"{where}: 'refs' must be a list of strings")
        return refs
    if "ref" in obj:
        if not isinstance(obj["ref"], str):
            raise SimulError(f"{where}: 'ref' must be a string (use 'refs' for a list)")
        return [obj["ref"]]
    return []


def _read_jsonl(path: Path) -> ParallelText:
    rows = read_text_lines(path)
    lines: list[AlignedLine] = []
    expected: int | None = None
    for index, row in enumerate(rows):
        number = index + 1
        where = f"{path}:{number}"
        if not row.strip():
            continue
        try:
            obj = json.loads(row)
        except json.JSONDecodeError as exc:
            raise SimulError(f"{where}: malformed JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise SimulError(f"{where}: expected a JSON object with 'src' and 'ref' or 'refs'")
        source = obj.get("src")
        if not isinstance(source, str):
            raise SimulError(f"{where}: 'src' must be a string (the source segment)")
        refs = _jsonl_references(obj, where)
        if expected is None:
            expected = len(refs)
        elif len(refs) != expected:
            raise SimulError(
                f"{where}: {len(refs)} reference(s), but the first line has {expected}; every line needs the "
                "same number of references"
            )
        lines.append(
            AlignedLine(
                line=number,
                source=source,
                references=tuple(refs),
                where_source=f"{where} ('src')",
                where_references=tuple(f"{where} (reference {k + 1})" for k in range(len(refs))),
            )
        )
    if not lines:
        raise SimulError(
            f"{path} holds no JSON lines; it needs one {{'src': ..., 'ref': ...}} object per line"
        )
    return ParallelText(lines, "jsonl", path, [], expected or 0)

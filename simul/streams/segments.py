"""Segments of talks: one reference sentence each, with its translation and its place in the talk's audio.

A *segment* becomes one stream. This module reads what is common to every source of segments: UTF-8 text
files (:func:`read_utf8_lines`), the segment YAML with one ``{offset, duration, wav}`` row per segment
(seconds; ``wav`` names the talk's audio file, :func:`read_segment_yaml`), its alignment with the text
(:func:`attach_times`), any line-aligned source/reference pair such as an SLTev ``.OSt`` transcript and its
translation (:func:`line_segments`), and the selection of segments and per-talk files that the commands
take. ACL 60/60's own layouts are read in simul.streams.acl6060.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from simul.common.errors import SimulError
from simul.common.limits import MAX_AUDIO_SECONDS, as_float, check_source, check_text_lines
from simul.streams.format import Step, Stream

_AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg", ".opus")


@dataclass(frozen=True)
class Segment:
    """One reference sentence of a talk: what a stream is built for."""

    id: str
    line: int
    talk: str
    source: str
    reference: str | None
    offset_ms: float | None = None
    duration_ms: float | None = None
    provenance: dict[str, Any] = field(default_factory=dict, compare=False)
    more_references: tuple[str, ...] = ()  # the second, third, ... reference (several --ref files)

    @property
    def references(self) -> tuple[str, ...]:
        """Every reference, the first one first; empty when the segment has none."""
        return () if self.reference is None else (self.reference, *self.more_references)

    @property
    def timed(self) -> bool:
        return self.offset_ms is not None and self.duration_ms is not None

    @property
    def end_ms(self) -> float | None:
        if self.offset_ms is None or self.duration_ms is None:
            return None
        return self.offset_ms + self.duration_ms


def stream_from_segment(
    segment: Segment, src: str, tgt: str, steps: Iterable[Step], provenance: Mapping[str, Any]
) -> Stream:
    """The stream of ``steps`` for ``segment``: the segment's id and references, and the segment's
    provenance followed by ``provenance`` (how the steps were made: ASR, logged partials, simulation).

    One function for every builder, so a stream built from a segment carries the same fields whichever
    way its steps came.
    """
    return Stream(
        id=segment.id,
        src=src,
        tgt=tgt,
        steps=tuple(steps),
        reference=segment.reference,
        more_references=segment.more_references,
        provenance={**segment.provenance, **provenance},
    )


@dataclass(frozen=True)
class SegmentTime:
    """One YAML row: where a segment lies in its talk's audio."""

    talk: str
    offset_ms: float
    duration_ms: float
    line: int


def read_utf8_lines(path: Path, what: str) -> list[str]:
    """The lines of a UTF-8 text file (BOM and CRLF tolerated); errors name the file and line."""
    if not path.exists():
        raise SimulError(f"{what} {path} does not exist")
    if path.is_dir():
        raise SimulError(f"{what} {path} is a directory; pass a file")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SimulError(
            f"{path}:{line}: not valid UTF-8 ({exc.reason} at byte {exc.start}); save the file as UTF-8"
        ) from None
    text = text.removeprefix("\ufeff")
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    check_text_lines(lines, path)
    return lines


def talk_from_wav(wav: str) -> str:
    """The talk id of an audio file name: ``2022.acl-long.110.wav`` -> ``2022.acl-long.110``."""
    name = PurePosixPath(wav.replace("\\", "/")).name
    for suffix in _AUDIO_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def read_segment_yaml(path: Path) -> list[SegmentTime]:
    """Rows of a segment YAML (a list of ``{offset, duration, wav}`` mappings, seconds)."""
    lines = read_utf8_lines(path, "segment YAML")
    text = "\n".join(lines)
    try:
        loader = yaml.SafeLoader(text)
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (a control character)
        line = text[: exc.position].count("\n") + 1
        char = exc.character
        shown = f"U+{char:04X}" if isinstance(char, int) else repr(char)
        raise SimulError(f"{path}:{line}: malformed YAML ({exc.reason}: {shown}); fix the file") from None
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            raise SimulError(_yaml_error(path, exc)) from None
        except (yaml.YAMLError, RecursionError) as exc:
            raise SimulError(f"{path}: {_yaml_reason(exc)}; fix the file") from None
        if root is None or not isinstance(root, yaml.SequenceNode):
            raise SimulError(
                f"{path}:1: expected a YAML list with one {{offset, duration, wav}} row per segment"
            )
        rows: list[SegmentTime] = []
        for node in root.value:
            line = node.start_mark.line + 1
            try:
                row = loader.construct_object(node, deep=True)
            except yaml.MarkedYAMLError as exc:
                raise SimulError(_yaml_error(path, exc, line)) from None
            except (yaml.YAMLError, RecursionError, ValueError, TypeError) as exc:
                raise SimulError(f"{path}:{line}: {_yaml_reason(exc)}; fix the row") from None
            rows.append(_segment_time(row, f"{path}:{line}", line))
        return rows
    finally:
        loader.dispose()


def _yaml_reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "YAML nested too deeply"
    return f"unreadable YAML ({exc})"


def _yaml_error(path: Path, exc: yaml.MarkedYAMLError, line: int = 1) -> str:
    mark = exc.problem_mark or exc.context_mark
    if mark is not None:
        line = mark.line + 1
    return f"{path}:{line}: malformed YAML ({exc.problem or exc}); fix the file"


def _shown(value: Any) -> str:
    """A value for an error message: its repr, shortened (a YAML value may be any size)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
        return "a number too large for seconds"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _segment_time(row: Any, where: str, line: int) -> SegmentTime:
    if not isinstance(row, dict):
        raise SimulError(f"{where}: each row must be a mapping with offset, duration and wav")
    missing = [key for key in ("offset", "duration", "wav") if key not in row]
    if missing:
        raise SimulError(f"{where}: row lacks {', '.join(missing)}; every row needs offset, duration and wav")
    values: dict[str, float] = {}
    for key in ("offset", "duration"):
        value = row[key]
        seconds = as_float(value)
        if not (math.isfinite(seconds * 1000.0) and seconds >= 0):
            raise SimulError(f"{where}: {key} must be a non-negative number of seconds, got {_shown(value)}")
        if seconds > MAX_AUDIO_SECONDS:
            raise SimulError(
                f"{where}: {key} of {seconds:g} s is more than a day ({MAX_AUDIO_SECONDS:g} s); fix the row"
            )
        values[key] = seconds * 1000.0
    if not isinstance(row["wav"], str) or not row["wav"].strip():
        raise SimulError(f"{where}: wav must name the talk's audio file")
    return SegmentTime(talk_from_wav(row["wav"]), values["offset"], values["duration"], line)


@dataclass(frozen=True)
class SegmentTexts:
    """Line-aligned source, reference and talk of every segment, wherever they were read from."""

    sources: list[str]
    references: list[str]
    talks: list[str]
    where_source: list[str]
    where_reference: list[str]
    seg_ids: list[str] | None
    files: dict[str, str]
    source_path: Path


def line_texts(src_path: Path, ref_path: Path, talks_path: Path | None) -> SegmentTexts:
    sources = read_utf8_lines(src_path, "source file")
    if not sources:
        raise SimulError(f"source file {src_path} is empty; it needs one segment per line")
    references = read_utf8_lines(ref_path, "reference file")
    _same_count(src_path, len(sources), ref_path, len(references))
    talks: list[str] = []
    files = {"source_file": src_path.name, "reference_file": ref_path.name}
    if talks_path is not None:
        talks = [t.strip() for t in read_utf8_lines(talks_path, "talk id file")]
        _same_count(src_path, len(sources), talks_path, len(talks))
        for number, talk in enumerate(talks, start=1):
            if not talk:
                raise SimulError(f"{talks_path}:{number}: empty talk id")
        files["talkids_file"] = talks_path.name
    return SegmentTexts(
        sources=sources,
        references=references,
        talks=talks,
        where_source=[f"{src_path}:{n}" for n in range(1, len(sources) + 1)],
        where_reference=[f"{ref_path}:{n}" for n in range(1, len(references) + 1)],
        seg_ids=None,
        files=files,
        source_path=src_path,
    )


def _same_count(a: Path, n_a: int, b: Path, n_b: int) -> None:
    if n_a != n_b:
        raise SimulError(
            f"{a} has {n_a} lines but {b} has {n_b}; the files must be line-aligned (line i of each "
            "file is the same segment): use files of the same split and release"
        )


def attach_times(texts: SegmentTexts, yaml_path: Path | None) -> tuple[list[str], list[SegmentTime | None]]:
    """Each segment's talk and YAML row, checking that the YAML lines up with the text files."""
    n = len(texts.sources)
    if yaml_path is None:
        if not texts.talks:
            raise SimulError(
                "no talk ids: put ACL.6060.<split>.talkids.txt next to the text files or pass the segment "
                "YAML (--segments) whose wav names each segment's talk"
            )
        return texts.talks, [None] * n
    rows = read_segment_yaml(yaml_path)
    if len(rows) != n:
        raise SimulError(
            f"{yaml_path} has {len(rows)} segment rows but {texts.source_path} has {n} "
            "segments; the YAML must list the same segments in the same order (same split and release)"
        )
    if not texts.talks:
        return [row.talk for row in rows], list(rows)
    if texts.seg_ids is None:
        # line-aligned files: row i is line i, and must name the same talk
        for index, (row, talk) in enumerate(zip(rows, texts.talks, strict=True)):
            if row.talk != talk:
                raise SimulError(
                    f"{yaml_path}:{row.line}: wav of talk {row.talk} but {texts.where_source[index]} belongs "
                    f"to talk {talk}; the YAML and the text files list segments in different orders"
                )
        return texts.talks, list(rows)
    # The XML orders talks by docid; match YAML rows by (talk, position in talk) so any talk order works.
    by_talk: dict[str, list[SegmentTime]] = {}
    for row in rows:
        by_talk.setdefault(row.talk, []).append(row)
    position: dict[str, int] = {}
    matched: list[SegmentTime | None] = []
    for index, talk in enumerate(texts.talks):
        k = position.get(talk, 0)
        position[talk] = k + 1
        talk_rows = by_talk.get(talk, [])
        if k >= len(talk_rows):
            raise SimulError(
                f"{texts.where_source[index]}: segment {k + 1} of talk {talk} has no row in {yaml_path} "
                f"(the YAML lists {len(talk_rows)} segments for it); use the YAML of the same split"
            )
        matched.append(talk_rows[k])
    for talk, talk_rows in by_talk.items():
        if position.get(talk, 0) != len(talk_rows):
            row = talk_rows[position.get(talk, 0)]
            raise SimulError(
                f"{yaml_path}:{row.line}: talk {talk} has {len(talk_rows)} rows but the text files hold "
                f"{position.get(talk, 0)} of its segments; the YAML belongs to another split or release"
            )
    return texts.talks, matched


def make_segment(
    texts: SegmentTexts,
    index: int,
    segment_id: str,
    talk: str,
    row: SegmentTime | None,
    provenance: dict[str, Any],
    with_reference: bool = True,
    provenance_tail: Mapping[str, Any] | None = None,
) -> Segment:
    """Segment ``index`` of ``texts`` with its source (and reference) checked, and the audio times of its YAML
    row recorded in ``provenance`` (followed by ``provenance_tail``)."""
    source = texts.sources[index]
    if not source.strip():
        raise SimulError(f"{texts.where_source[index]}: empty source segment")
    check_source(source, texts.where_source[index])
    reference: str | None = None
    if with_reference:
        reference = texts.references[index].strip()
        if not reference:
            raise SimulError(f"{texts.where_reference[index]}: empty reference segment")
    if row is not None:
        provenance["offset_s"] = round(row.offset_ms / 1000.0, 3)
        provenance["duration_s"] = round(row.duration_ms / 1000.0, 3)
    provenance.update(provenance_tail or {})
    return Segment(
        id=segment_id,
        line=index + 1,
        talk=talk,
        source=" ".join(source.split()),
        reference=reference,
        offset_ms=None if row is None else row.offset_ms,
        duration_ms=None if row is None else row.duration_ms,
        provenance=provenance,
    )


def line_segments(
    source_path: Path,
    reference_paths: Sequence[Path],
    name: str,
    talk: str,
    segments_yaml: Path | None = None,
) -> list[Segment]:
    """Segments from a line-aligned transcript and (optionally) its translations, the first reference first;
    ids ``<name>-<line>``.

    Every line belongs to ``talk`` unless a segment YAML is given, whose ``wav`` then names each line's talk.
    Without a reference file the streams have no reference (``null``).
    """
    first = reference_paths[0] if reference_paths else None
    texts = line_texts(source_path, first or source_path, None)
    if segments_yaml is None:
        texts = replace(texts, talks=[talk] * len(texts.sources))
    talks, times = attach_times(texts, segments_yaml)
    files: dict[str, Any] = {"source_file": source_path.name}
    if first is not None:
        files["reference_file"] = first.name
    if len(reference_paths) > 1:
        files["more_reference_files"] = [p.name for p in reference_paths[1:]]
    if segments_yaml is not None:
        files["segments_file"] = segments_yaml.name
    more = more_reference_lines(source_path, len(texts.sources), reference_paths[1:])
    return [
        replace(
            make_segment(
                texts,
                index,
                f"{name}-{index + 1}",
                talks[index],
                times[index],
                {"dataset": name, "line": index + 1, "talk": talks[index], **files},
                with_reference=first is not None,
            ),
            more_references=tuple(lines[index] for lines in more),
        )
        for index in range(len(texts.sources))
    ]


def more_reference_lines(source_path: Path, count: int, paths: Sequence[Path]) -> list[list[str]]:
    """The lines of the second, third, ... reference file, each line-aligned with ``source_path`` (``count``
    lines) and none empty."""
    out: list[list[str]] = []
    for path in paths:
        lines = read_utf8_lines(path, "reference file")
        _same_count(source_path, count, path, len(lines))
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                raise SimulError(f"{path}:{number}: empty reference segment")
        out.append([line.strip() for line in lines])
    return out


def select(segments: list[Segment], start: int, limit: int | None) -> list[Segment]:
    """Segments start.. (1-based line numbers), at most ``limit`` of them."""
    if start < 1:
        raise SimulError(f"--start is 1-based and must be at least 1, got {start}")
    if limit is not None and limit < 1:
        raise SimulError(f"--limit must be at least 1, got {limit}")
    if start > len(segments):
        raise SimulError(f"--start {start} is past the last segment ({len(segments)})")
    end = len(segments) if limit is None else min(len(segments), start - 1 + limit)
    return segments[start - 1 : end]


def talk_file_pairs(specs: list[str], talks: list[str], what: str) -> list[tuple[str | None, Path]]:
    """Pair each ``FILE`` or ``TALK=FILE`` of an option with its talk.

    The talk is the one given before ``=``, else the talk id that appears in the file name (the longest, so
    ``2022.acl-long.110`` wins over a shorter id it contains), else the only talk there is, else None.
    """
    known = sorted(set(talks), key=len, reverse=True)
    pairs: list[tuple[str | None, Path]] = []
    for spec in specs:
        talk: str | None = None
        path = Path(spec)
        if not path.exists() and "=" in spec:
            head, tail = spec.split("=", 1)
            if head not in known:
                listed = ", ".join(sorted(known))
                raise SimulError(f"{what} {spec!r}: {head!r} is not a talk of the data (talks: {listed})")
            talk, path = head, Path(tail)
        if not path.exists():
            raise SimulError(f"{what} {path} does not exist")
        if talk is None:
            talk = next((t for t in known if t in path.name), None)
        if talk is None and len(known) == 1:
            talk = known[0]
        pairs.append((talk, path))
    return pairs

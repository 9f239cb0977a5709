"""One stream per reference segment from the partials files of the selected talks.

Step times (``time_ms``) are emission times relative to the segment start: the YAML ``offset`` when the
segments are timed, else the audio start of the first partial that reached the segment. A partial emitted
before that origin (possible only through alignment) is clamped to 0 and counted. Each step keeps the talk
time and the input line in ``extra``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from simul.common.errors import SimulError
from simul.common.hashing import sha256_file
from simul.common.safe_text import excerpt
from simul.streams.format import Step, Stream
from simul.streams.partials.align import RawStep, align_talk
from simul.streams.partials.formats import (
    DEFAULT_MAX_GAP_MS,
    PartialLine,
    PartialsFile,
    check_format,
    infer_format,
    parse_partials,
)
from simul.streams.segments import Segment, stream_from_segment, talk_file_pairs


@dataclass
class PartialsReport:
    """Counts for one partials file and talk: the import summary and each stream's provenance."""

    file: str
    format: str
    time_unit: str
    align: str
    talk: str
    sha256: str
    partials: int
    empty_partials: int
    unaligned_partials: int
    split_partials: int
    words: int
    unaligned_words: int
    unterminated_utterances: int
    segments: int = 0
    streams: int = 0
    segments_without_partials: list[int] = field(default_factory=list)
    clamped_times: int = 0

    def provenance(self) -> dict[str, Any]:
        keys = ("file", "format", "time_unit", "align", "sha256", "partials", "unaligned_partials")
        out = {key: getattr(self, key) for key in keys}
        out["unaligned_words"] = self.unaligned_words
        return out


@dataclass
class PartialsImport:
    streams: list[Stream]
    reports: list[PartialsReport]
    # selected segments of talks that no partials file covers
    segments_not_covered: list[int] = field(default_factory=list)

    @property
    def unaligned_partials(self) -> int:
        return sum(r.unaligned_partials for r in self.reports)

    def summary(self) -> dict[str, Any]:
        return {
            "streams": len(self.streams),
            "unaligned_partials": self.unaligned_partials,
            "unaligned_words": sum(r.unaligned_words for r in self.reports),
            "segments_without_partials": sorted(x for r in self.reports for x in r.segments_without_partials),
            "segments_not_covered": len(self.segments_not_covered),
            "files": [r.__dict__ for r in self.reports],
        }


def _group_by_talk(
    parsed: PartialsFile, file_talk: str | None, talks: set[str]
) -> dict[str, list[PartialLine]]:
    groups: dict[str, list[PartialLine]] = defaultdict(list)
    for pl in parsed.lines:
        talk = pl.talk or file_talk
        where = f"{parsed.path}:{pl.line}"
        if talk is None:
            raise SimulError(
                f"{where}: cannot tell which talk these partials belong to (no talk id in the file name); "
                f"pass --partials TALK=FILE with one of: {', '.join(sorted(talks))}"
            )
        if talk not in talks:
            raise SimulError(
                f"{where}: talk {excerpt(talk)} is not in the data (talks: {', '.join(sorted(talks))})"
            )
        groups[talk].append(pl)
    return groups


def partial_streams(
    segments: Sequence[Segment],
    selected: Sequence[Segment],
    specs: list[str],
    fmt: str | None,
    tgt: str,
    src: str = "en",
    time_unit: str | None = None,
    align: str = "text",
    max_gap_ms: float = DEFAULT_MAX_GAP_MS,
) -> PartialsImport:
    """One stream per selected segment that the partials reach.

    ``segments`` are all segments of the data (alignment uses whole talks), ``selected`` the ones to build
    streams for, ``specs`` the ``FILE`` or ``TALK=FILE`` arguments.
    """
    if fmt is not None:
        check_format(fmt)
    talks_in_order: dict[str, list[Segment]] = defaultdict(list)
    for segment in segments:
        talks_in_order[segment.talk].append(segment)
    wanted = {segment.line for segment in selected}
    per_talk: dict[str, tuple[PartialsFile, list[PartialLine]]] = {}
    for file_talk, path in talk_file_pairs(specs, list(talks_in_order), "partials file"):
        parsed = parse_partials(path, fmt or infer_format(path), time_unit)
        for talk, lines in _group_by_talk(parsed, file_talk, set(talks_in_order)).items():
            if talk in per_talk:
                raise SimulError(
                    f"talk {talk} has partials in both {per_talk[talk][0].path} and {path}; give one file "
                    "per talk"
                )
            per_talk[talk] = (parsed, lines)
    streams: dict[int, Stream] = {}
    reports: list[PartialsReport] = []
    for talk, (parsed, lines) in per_talk.items():
        talk_segments = talks_in_order[talk]
        result = align_talk(lines, talk_segments, align, max_gap_ms)
        report = PartialsReport(
            file=parsed.path.name,
            format=parsed.format,
            time_unit=parsed.time_unit,
            align=align,
            talk=talk,
            sha256=sha256_file(parsed.path),
            partials=result.partials,
            empty_partials=result.empty_partials,
            unaligned_partials=result.unaligned_partials,
            split_partials=result.split_partials,
            words=result.words,
            unaligned_words=result.unaligned_words,
            unterminated_utterances=result.unterminated_utterances,
        )
        for position, segment in enumerate(talk_segments):
            if segment.line not in wanted:
                continue
            report.segments += 1
            raw = result.steps.get(position)
            if not raw:
                report.segments_without_partials.append(segment.line)
                continue
            stream, clamped = _stream(segment, raw, lines, report, src, tgt)
            report.clamped_times += clamped
            report.streams += 1
            streams[segment.line] = stream
        reports.append(report)
    covered = {s.line for talk in per_talk for s in talks_in_order[talk]}
    return PartialsImport(
        streams=[streams[line] for line in sorted(streams)],
        reports=reports,
        segments_not_covered=[s.line for s in selected if s.line not in covered],
    )


def _stream(
    segment: Segment,
    raw: list[RawStep],
    lines: Sequence[PartialLine],
    report: PartialsReport,
    src: str,
    tgt: str,
) -> tuple[Stream, int]:
    if segment.offset_ms is not None:
        origin, origin_name = segment.offset_ms, "segment_offset"
    else:
        starts = [lines[r.index].start_ms for r in raw]
        origin = min(s if s is not None else lines[r.index].time_ms for s, r in zip(starts, raw, strict=True))
        origin_name = "first_partial_start"
    clamped = 0
    steps: list[Step] = []
    for k, step in enumerate(raw):
        relative = step.time_ms - origin
        if relative < 0:
            clamped += 1
            relative = 0.0
        extra = {"talk_time_ms": round(step.time_ms, 1), "partials_line": lines[step.index].line}
        steps.append(Step(source=step.text, final=k == len(raw) - 1, time_ms=relative, extra=extra))
    provenance = {
        "simulated": False,
        "partials": report.provenance(),
        "time_origin": origin_name,
        "time_origin_ms": round(origin, 1),
    }
    return stream_from_segment(segment, src, tgt, steps, provenance), clamped

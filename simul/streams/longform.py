"""Long-form streams (format version 3): one stream per talk or document, built from what the importers read.

Three builders, each giving :meth:`simul.streams.format.Stream.talk` records:

* :func:`simulated_talks` (``simul streams acl6060 --longform``): the gold transcript of a talk, word by
  word, on the talk's clock. A word becomes known when it ends: at i/n of its segment (segment offset +
  in-segment time), or at its time in a word-timed transcript (``--word-times``), as
  :mod:`simul.streams.simulate` times the words of one segment. Every ``interval_ms`` of audio a step holds
  the words ended so far, as written in the gold transcript (cased and punctuated: every step is a prefix
  of the final one); a step that would not change the transcript is left out. The final step, at the end
  of the talk's last segment (or of its last word, if later), holds the whole transcript.
* :func:`partial_talks` (``--partials FILE`` with ``acl6060 --longform`` or ``asr --longform``): one step
  per line of a recognizer's talk-level output, at its emission time, holding the talk's transcript so far:
  the committed text (whisper-streaming chunks appended, a chunk that starts without a space continuing the
  previous word; SLTev/JSONL complete lines) followed by the open hypothesis (SLTev/JSONL partial lines).
  A line that leaves the transcript as it was (or empty) adds no step. Only talks the partials cover are
  written.
* :func:`document_streams` (``simul streams text --longform --doc-ids FILE``): the lines of a document
  joined into one source, revealed ``lag`` words (characters for zh/ja/th) at a time across the whole
  document, untimed.

Segments are the reference segmentation for the scorer: per gold segment (or document line) its
references, source transcript and, for talks, ``offset_ms``/``duration_ms``. A talk's ``duration_ms`` is
the end of its last segment, or the end of the last audio span the recognizer reported if later.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError, UsageError
from simul.common.hashing import sha256_file
from simul.common.languages import Language
from simul.common.limits import MAX_AUDIO_SECONDS, check_source, check_steps
from simul.streams import format as fmt
from simul.streams.fixed_lag import AlignedLine, check_selection
from simul.streams.lag import lag_prefixes
from simul.streams.parallel_text import read_text_lines
from simul.streams.partials.build import _group_by_talk
from simul.streams.partials.formats import PartialLine, check_format, infer_format, parse_partials
from simul.streams.segments import Segment, talk_file_pairs
from simul.streams.simulate import _fill, read_word_times, talk_word_ends

# A step per second of audio: a 10-minute talk gets about 600 steps (SIMUL_MAX_STEPS allows 10,000).
DEFAULT_LONGFORM_INTERVAL_MS = 1000.0
# Overlaps of neighbouring gold segments up to this long are trimmed (fit_talk_segments); longer: an error.
MAX_TRIMMED_OVERLAP_MS = 100.0


def talks_in_order(segments: Sequence[Segment]) -> dict[str, list[Segment]]:
    """Segments grouped by talk, talks in the order they first appear, segments in their order."""
    talks: dict[str, list[Segment]] = {}
    for segment in segments:
        talks.setdefault(segment.talk, []).append(segment)
    return talks


def pick_talks(talks: dict[str, list[Segment]], wanted: Sequence[str]) -> dict[str, list[Segment]]:
    """The talks named by ``--talk`` (all when none is named); an unknown id is an error listing the ids."""
    if not wanted:
        return talks
    unknown = [t for t in wanted if t not in talks]
    if unknown:
        raise UsageError(f"--talk {unknown[0]!r} is not a talk of the data (talks: {', '.join(talks)})")
    return {t: talks[t] for t in talks if t in wanted}


def fit_talk_segments(talk: str, segments: Sequence[Segment]) -> tuple[list[Segment], int]:
    """Segment times of one talk in order and not overlapping; also how many overlaps were trimmed.

    Gold segmentations made by forced alignment overlap by a few milliseconds (ACL 60/60 dev: 14 of 468
    segments, by 3 to 35 ms). An overlap of at most :data:`MAX_TRIMMED_OVERLAP_MS` ends the earlier segment
    where the next one starts; a larger one is an error naming the text lines to fix."""
    fitted: list[Segment] = []
    trimmed = 0
    for segment in segments:
        previous = fitted[-1] if fitted else None
        start, end = segment.offset_ms, None if previous is None else previous.end_ms
        if previous is None or start is None or end is None or start >= end - fmt.SEGMENT_TOLERANCE_MS:
            fitted.append(segment)
            continue
        assert previous.offset_ms is not None
        if end - start > MAX_TRIMMED_OVERLAP_MS or start < previous.offset_ms:
            raise SimulError(
                f"talk {talk}: segment {segment.id} (line {segment.line}) starts at {start / 1000.0:g} s, "
                f"before segment {previous.id} (line {previous.line}) ends at {end / 1000.0:g} s; a "
                "long-form talk needs segments in talk order that do not overlap: fix the offsets and "
                "durations in the segment YAML"
            )
        fitted[-1] = replace(previous, duration_ms=start - previous.offset_ms)
        fitted.append(segment)
        trimmed += 1
    return fitted, trimmed


def _talk_segments(segments: Sequence[Segment]) -> tuple[fmt.Segment, ...]:
    return tuple(
        fmt.Segment(
            references=s.references,
            source=s.source,
            offset_ms=s.offset_ms,
            duration_ms=s.duration_ms,
        )
        for s in segments
    )


def _segments_end(segments: Sequence[Segment]) -> float | None:
    ends = [s.end_ms for s in segments if s.end_ms is not None]
    return max(ends) if ends else None


def _common_provenance(segments: Sequence[Segment], talk: str) -> dict[str, Any]:
    """The dataset facts the segments share (dataset, split, files), and the talk's line range."""
    first = segments[0].provenance
    keep = (
        "dataset",
        "split",
        "source_file",
        "reference_file",
        "more_reference_files",
        "talkids_file",
        "segments_file",
    )
    out: dict[str, Any] = {k: first[k] for k in keep if k in first}
    out.update(talk=talk, segments=len(segments), lines=[segments[0].line, segments[-1].line])
    return out


def _check_talk_steps(talk_id: str, steps: Sequence[fmt.Step], hint: str) -> None:
    """Refuse a talk the stream reader would refuse (simul.common.limits), naming the talk."""
    check_steps(len(steps), f"talk {talk_id}{hint}")
    check_source(steps[-1].source, f"talk {talk_id}")


# --- simulated timing ---------------------------------------------------------------------------------


@dataclass
class TalkImport:
    """Talks built, with what the summary reports about them."""

    streams: list[fmt.Stream]
    details: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self,
        talk: str,
        talk_id: str,
        src: str,
        tgt: str,
        steps: Sequence[fmt.Step],
        segments: Sequence[Segment],
        duration_ms: float | None,
        partials: dict[str, Any],
        simulated: bool,
        trimmed: int,
        **detail: Any,
    ) -> None:
        """One ACL 60/60 talk as a long-form stream, with its provenance and its line in the summary."""
        provenance = {
            **_common_provenance(segments, talk),
            "simulated": simulated,
            "partials": partials,
            "time_origin": "talk_start",
            "overlaps_trimmed": trimmed,
        }
        self.streams.append(
            fmt.Stream.talk(
                id=talk_id,
                src=src,
                tgt=tgt,
                steps=tuple(steps),
                segments=_talk_segments(segments),
                duration_ms=duration_ms,
                provenance=provenance,
            )
        )
        self.details.append(
            {
                "talk": talk,
                "segments": len(segments),
                "steps": len(steps),
                **detail,
                "overlaps_trimmed": trimmed,
            }
        )

    def summary(self) -> dict[str, Any]:
        return {"streams": len(self.streams), "longform": True, "talks": self.details}


def simulated_talks(
    talks: dict[str, list[Segment]],
    id_prefix: str,
    src: str,
    tgt: str,
    interval_ms: float = DEFAULT_LONGFORM_INTERVAL_MS,
    word_times: Sequence[str] = (),
    all_talks: Sequence[str] = (),
) -> TalkImport:
    """One simulated long-form stream per talk (``talks``: its segments, already cut as wanted)."""
    if interval_ms <= 0:
        raise UsageError(f"--interval-ms must be positive, got {interval_ms:g}")
    for talk, segments in talks.items():
        untimed = [s for s in segments if not s.timed]
        if untimed:
            raise SimulError(
                f"segment {untimed[0].id} of talk {talk} has no audio offset/duration: simulated long-form "
                "timing needs the segment YAML (put it next to the text files or pass --segments FILE)"
            )
    fitted = {talk: fit_talk_segments(talk, segments) for talk, segments in talks.items()}
    ends: dict[int, list[float | None]] = {}
    files: dict[str, str] = {}
    for named, path in talk_file_pairs(list(word_times), list(all_talks or talks), "word-times file"):
        if named is None:
            raise SimulError(
                f"cannot tell which talk word-times file {path} belongs to (no talk id in its name); "
                f"pass --word-times TALK=FILE with one of: {', '.join(sorted(talks))}"
            )
        if named not in talks:
            continue
        if named in files:
            raise SimulError(f"talk {named} has two word-times files ({files[named]}, {path.name}); give one")
        talk_ends, _ = talk_word_ends(talks[named], read_word_times(path))
        ends.update(talk_ends)
        files[named] = path.name
    result = TalkImport(streams=[])
    for talk, (segments, trimmed) in fitted.items():
        words: list[str] = []
        word_ends: list[float] = []
        for segment in segments:
            assert segment.offset_ms is not None and segment.duration_ms is not None
            seg_words = segment.source.split()
            known = ends.get(segment.line)
            if known is not None and any(e is not None for e in known):
                relative = _fill(known, segment.duration_ms)
            else:
                relative = [segment.duration_ms * (k + 1) / len(seg_words) for k in range(len(seg_words))]
            words.extend(seg_words)
            word_ends.extend(segment.offset_ms + r for r in relative)
        for k in range(1, len(word_ends)):  # a word-timed transcript may run past the next segment start
            word_ends[k] = max(word_ends[k], word_ends[k - 1])
        end_ms = max(_segments_end(segments) or 0.0, word_ends[-1])
        if end_ms > MAX_AUDIO_SECONDS * 1000.0:
            raise SimulError(f"talk {talk} ends after more than a day; check the segment times")
        talk_id = f"{id_prefix}-{talk}"
        steps = timed_prefix_steps(words, word_ends, end_ms, interval_ms)
        _check_talk_steps(
            talk_id, steps, f" (at --interval-ms {interval_ms:g}; a larger interval gives fewer)"
        )
        partials: dict[str, Any] = {
            "source": "simulated",
            "interval_ms": interval_ms,
            "timing": "word_times" if talk in files else "even",
        }
        if talk in files:
            partials["word_times_file"] = files[talk]
        result.add(
            talk, talk_id, src, tgt, steps, segments, end_ms, partials, simulated=True, trimmed=trimmed
        )
    return result


def timed_prefix_steps(
    words: Sequence[str], ends_ms: Sequence[float], end_ms: float, interval_ms: float
) -> list[fmt.Step]:
    """Every ``interval_ms``, the words ended so far (a step only when that changes); the last step, at
    ``end_ms`` or the tick that reached the last word, is the whole text and final."""
    steps: list[fmt.Step] = []
    known = 0
    tick = 1
    while tick * interval_ms < end_ms:
        now = tick * interval_ms
        tick += 1
        before = known
        while known < len(words) and ends_ms[known] <= now:
            known += 1
        if known > before:
            steps.append(fmt.Step(" ".join(words[:known]), final=False, time_ms=now))
    full = " ".join(words)
    if steps and steps[-1].source == full:
        steps[-1] = fmt.Step(full, final=True, time_ms=steps[-1].time_ms)
    else:
        steps.append(fmt.Step(full, final=True, time_ms=end_ms))
    return steps


# --- recognizer output --------------------------------------------------------------------------------


def transcript_steps(lines: Sequence[PartialLine]) -> list[fmt.Step]:
    """The talk's transcript after each partial line (see the module docstring), one step per change."""
    committed = ""
    open_text = ""
    steps: list[fmt.Step] = []
    for pl in lines:
        text = " ".join(pl.text.split())
        if pl.append:
            if text:
                glue = " " if committed and pl.text[:1].isspace() else ""
                committed += glue + text
        elif pl.final:
            committed = f"{committed} {text}".strip()
            open_text = ""
        else:
            open_text = text
        source = f"{committed} {open_text}".strip()
        if not source or (steps and steps[-1].source == source):
            continue
        steps.append(fmt.Step(source, final=False, time_ms=pl.time_ms, extra={"partials_line": pl.line}))
    if steps:
        last = steps[-1]
        steps[-1] = fmt.Step(last.source, final=True, time_ms=last.time_ms, extra=last.extra)
    return steps


def partial_talks(
    talks: dict[str, list[Segment]],
    id_prefix: str,
    specs: Sequence[str],
    partials_format: str | None,
    src: str,
    tgt: str,
    time_unit: str | None = None,
    all_talks: Sequence[str] = (),
) -> TalkImport:
    """One long-form stream per talk of ``talks`` that the partials files cover (``specs``: FILE or
    TALK=FILE; ``all_talks``: every talk of the data, which a file may name although it is not selected)."""
    if partials_format is not None:
        check_format(partials_format)
    known = list(all_talks or talks)
    per_talk: dict[str, tuple[Path, str, str, list[PartialLine]]] = {}
    for file_talk, path in talk_file_pairs(list(specs), known, "partials file"):
        parsed = parse_partials(path, partials_format or infer_format(path), time_unit)
        for talk, lines in _group_by_talk(parsed, file_talk, set(known)).items():
            if talk in per_talk:
                raise SimulError(
                    f"talk {talk} has partials in both {per_talk[talk][0]} and {path}; give one file per talk"
                )
            per_talk[talk] = (path, parsed.format, parsed.time_unit, lines)
    result = TalkImport(streams=[])
    for talk, segments in talks.items():
        if talk not in per_talk:
            continue
        path, file_format, unit, lines = per_talk[talk]
        segments, trimmed = fit_talk_segments(talk, segments)
        steps = transcript_steps(lines)
        if not steps:
            raise SimulError(f"partials file {path} holds no words for talk {talk}")
        talk_id = f"{id_prefix}-{talk}"
        _check_talk_steps(talk_id, steps, "")
        spans = [pl.end_ms for pl in lines if pl.end_ms is not None]
        seg_end = _segments_end(segments)
        ends = [e for e in (seg_end, max(spans) if spans else None) if e is not None]
        duration = max(ends) if ends and max(ends) > 0 else None
        partials = {
            "file": path.name,
            "format": file_format,
            "time_unit": unit,
            "sha256": sha256_file(path),
            "partials": len(lines),
        }
        result.add(
            talk, talk_id, src, tgt, steps, segments, duration, partials, False, trimmed, file=path.name
        )
    return result


# --- documents of parallel text -----------------------------------------------------------------------


@dataclass(frozen=True)
class Document:
    id: str
    lines: list[AlignedLine]
    first_line: int  # in the doc-ids file


def read_doc_ids(path: Path, lines: Sequence[AlignedLine], what: str) -> list[Document]:
    """Group ``lines`` into documents by a doc-ids file (one id per line, line-aligned with the text).

    Consecutive equal ids form a document; an id that comes back after another document is an error (the
    file is not sorted by document), as is a line count that differs from the text's."""
    ids = [line.strip() for line in read_text_lines(path)]
    if len(ids) != len(lines):
        where = f"{path}:{min(len(ids), len(lines)) + 1}"
        more = "fewer" if len(ids) < len(lines) else "more"
        raise SimulError(
            f"{where}: the doc-ids file has {len(ids)} lines but {what} has {len(lines)} ({more} ids); give "
            "one document id per line of the text, in the same order"
        )
    documents: list[Document] = []
    seen: dict[str, int] = {}
    for number, (doc_id, line) in enumerate(zip(ids, lines, strict=True), start=1):
        if not doc_id:
            raise SimulError(f"{path}:{number}: empty document id; every line needs its document's id")
        if documents and documents[-1].id == doc_id:
            documents[-1].lines.append(line)
            continue
        if doc_id in seen:
            raise SimulError(
                f"{path}:{number}: document {doc_id!r} comes back after document {documents[-1].id!r} (it "
                f"started on line {seen[doc_id]}); a document's lines must be consecutive: sort the text and "
                "the doc-ids file by document, keeping the line order inside each document"
            )
        seen[doc_id] = number
        documents.append(Document(doc_id, [line], number))
    return documents


def document_streams(
    documents: Sequence[Document],
    id_prefix: str,
    src: Language,
    tgt: Language,
    lag: int,
    unit: str,
    provenance: dict[str, Any],
    skip_empty: bool = False,
) -> tuple[list[fmt.Stream], dict[str, list[int]]]:
    """One untimed long-form stream per document: ``lag`` units revealed per step across the document."""
    check_selection(lag, 1, None)
    streams: list[fmt.Stream] = []
    skipped: dict[str, list[int]] = {}
    for doc in documents:
        kept: list[AlignedLine] = []
        for row in doc.lines:
            reason, where = None, ""
            if not row.source.strip():
                reason, where = "empty source line", row.where_source
            else:
                empty = [
                    w for r, w in zip(row.references, row.where_references, strict=True) if not r.strip()
                ]
                if empty:
                    reason, where = "empty reference line", empty[0]
            if reason is not None:
                if not skip_empty:
                    raise SimulError(f"{where}: {reason} (pass --skip-empty to leave such lines out)")
                skipped.setdefault(reason, []).append(row.line)
                continue
            kept.append(row)
        if not kept:
            continue
        text = fmt.join_texts((row.source for row in kept), src.short)
        stream_id = f"{id_prefix}-{doc.id}"
        check_source(text, f"document {doc.id} (lines {kept[0].where_source} to {kept[-1].where_source})")
        prefixes = lag_prefixes(text, lag, unspaced=unit == "char")
        check_steps(len(prefixes), f"document {stream_id} (at --lag {lag}; a larger lag gives fewer steps)")
        steps = tuple(fmt.Step(p, final=k == len(prefixes) - 1) for k, p in enumerate(prefixes))
        segments = tuple(
            fmt.Segment(
                references=tuple(r.strip() for r in row.references), source=" ".join(row.source.split())
            )
            for row in kept
        )
        streams.append(
            fmt.Stream.talk(
                id=stream_id,
                src=src.short,
                tgt=tgt.short,
                steps=steps,
                segments=segments,
                provenance={
                    **provenance,
                    "document": doc.id,
                    "lines": [kept[0].line, kept[-1].line],
                    "segments": len(kept),
                    "lag": lag,
                    "unit": unit,
                    "simulated": True,
                },
            )
        )
    return streams, skipped

"""Real recognizer output: parse timed partials and turn them into one stream per reference segment.

Three input formats (docs/streams.md has examples). Every line carries an *emission time*: when the
recognizer produced it, measured from the start of the talk audio.

* ``sltev``: SLTev's ``P|C <emission> <start> <end> text`` (``.asrt``); each ``P`` line is the whole current
  hypothesis of an utterance (it may revise earlier words), the ``C`` line closes the utterance with its
  complete text. SLTev's timed gold transcripts (``.OStt``) have no emission column, ``P|C <start> <end>
  text``; their emission time is ``end``. SLTev does not state a unit; its samples count hundredths of a
  second, hence the default ``cs``.
* ``whisper-streaming``: whisper_streaming / SimulStreaming's ``<emission_ms> <beg_ms> <end_ms> <text>``.
  Each line is a committed chunk; the transcript is the concatenation of all chunks so far (a chunk that
  starts without a space continues the previous word).
* ``jsonl``: one JSON object per line, ``{"time_ms", "start_ms", "end_ms", "text", "final", "talk"}``; like
  ``sltev``, ``text`` is the whole current hypothesis of the open utterance and ``final: true`` closes it.

Alignment. A recognizer segments speech its own way, so its words are assigned to the reference segments
of the talk, word by word:

* ``text`` (default): the recognizer's final transcript of the talk is aligned to the reference transcript
  (the segments' English, concatenated) by a minimum-edit word alignment on lower-cased words without
  punctuation. Matched and substituted words take their reference word's segment. Extra words between two
  segments, and words before the first or after the last reference word, go by time to the nearest segment
  within ``max_gap_ms`` (between two segments: the nearer of the two); without times they stay with the
  previous segment, or are unaligned at the edges. Words of a hypothesis that is later revised take the
  segment of the final word they align to within the same utterance.
* ``time``: each word's audio time (its position spread evenly over the line's ``start..end``, or the
  emission time when the line has none) picks the segment whose ``offset..offset+duration`` contains it,
  or the nearest within ``max_gap_ms``.

A partial whose words fall into two segments contributes to both (counted as ``split_partials``). Words
assigned to no segment are *unaligned*: they are counted (``unaligned_words``, and ``unaligned_partials``
for lines none of whose words could be placed) and reported, never dropped silently. A segment gets a step
whenever its share of the transcript changes; its last step, the recognizer's final text for it, is final.
A segment that receives no words has no stream and is reported.

Step times (``time_ms``) are emission times relative to the segment start: the YAML ``offset`` when the
segments are timed, else the audio start of the first partial that reached the segment. A partial emitted
before that origin (possible only through alignment) is clamped to 0 and counted. Each step keeps the talk
time and the input line in ``extra``.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError, UsageError
from simul.common.hashing import sha256_file
from simul.common.limits import as_float, loads
from simul.common.safe_text import excerpt
from simul.streams.acl6060 import Segment, read_utf8_lines, talk_file_pairs
from simul.streams.format import Step, Stream

FORMATS = ("sltev", "whisper-streaming", "jsonl")
TIME_UNITS: dict[str, float] = {"ms": 1.0, "cs": 10.0, "s": 1000.0}
DEFAULT_TIME_UNIT = {"sltev": "cs", "whisper-streaming": "ms", "jsonl": "ms"}
ALIGN_MODES = ("text", "time")
DEFAULT_MAX_GAP_MS = 1000.0

_SLTEV_SUFFIXES = {".ostt": 2, ".asrt": 3, ".slt": 3, ".asr": 3}
_WHISPER_LINE = re.compile(r"^\s*(\S+)[ \t]+(\S+)[ \t]+(\S+)(?:[ \t](.*))?$")
_JSONL_KEYS = ("time_ms", "start_ms", "end_ms", "text", "final", "talk")


@dataclass(frozen=True)
class PartialLine:
    """One line of recognizer output, times in milliseconds from the start of the talk."""

    line: int
    time_ms: float
    start_ms: float | None
    end_ms: float | None
    text: str
    final: bool
    # True: ``text`` is appended to the committed transcript (whisper-streaming); False: it is the whole
    # current hypothesis of the open utterance (sltev, jsonl).
    append: bool
    talk: str | None = None


@dataclass(frozen=True)
class PartialsFile:
    path: Path
    format: str
    time_unit: str
    lines: tuple[PartialLine, ...]


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise UsageError(f"unknown --partials-format {fmt!r}: use one of {', '.join(FORMATS)}")
    return fmt


def infer_format(path: Path) -> str:
    """The format a file name implies (``.jsonl``, SLTev suffixes); otherwise the user must say."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return "jsonl"
    if suffix in _SLTEV_SUFFIXES:
        return "sltev"
    raise UsageError(
        f"cannot tell the format of {path.name} from its name; pass --partials-format ({', '.join(FORMATS)})"
    )


def parse_partials(path: Path, fmt: str, time_unit: str | None = None) -> PartialsFile:
    """Read a partials file, check every line and that emission times never go backwards."""
    check_format(fmt)
    unit = time_unit or DEFAULT_TIME_UNIT[fmt]
    if unit not in TIME_UNITS:
        raise UsageError(f"unknown --time-unit {unit!r}: use one of {', '.join(TIME_UNITS)}")
    raw = read_utf8_lines(path, "partials file")
    scale = TIME_UNITS[unit]
    if fmt == "sltev":
        lines = _parse_sltev(path, raw, scale)
    elif fmt == "whisper-streaming":
        lines = _parse_whisper(path, raw, scale)
    else:
        lines = _parse_jsonl(path, raw, scale)
    if not lines:
        raise SimulError(f"partials file {path} holds no partials")
    _check_order(path, lines)
    return PartialsFile(path=path, format=fmt, time_unit=unit, lines=tuple(lines))


def parse_number(token: str, where: str, name: str, scale: float = 1.0) -> float:
    """``token`` as a finite non-negative number times ``scale``; errors name ``where`` and ``name``."""
    try:
        value = float(token)
    except ValueError:
        raise SimulError(f"{where}: {name} {excerpt(token)} is not a number") from None
    if not math.isfinite(value * scale) or value < 0:
        raise SimulError(f"{where}: {name} must be a non-negative number, got {excerpt(token)}")
    return value * scale


def _check_span(where: str, start: float | None, end: float | None) -> None:
    if start is not None and end is not None and end < start:
        raise SimulError(f"{where}: the audio span ends before it starts ({end:g} < {start:g} ms)")


def _sltev_layout(path: Path, raw: list[str]) -> int:
    """How many time columns the SLTev file has: 2 (``.OStt``) or 3 (emission, start, end)."""
    if path.suffix.lower() in _SLTEV_SUFFIXES:
        return _SLTEV_SUFFIXES[path.suffix.lower()]
    counts: dict[int, int] = defaultdict(int)
    for line in raw:
        tokens = line.split()[1:4]
        n = 0
        for token in tokens:
            try:
                float(token)
            except ValueError:
                break
            n += 1
        counts[n] += 1
    # A text that starts with a number adds a column on its line only, so the most common count wins.
    layout = max(counts, key=lambda n: (counts[n], n)) if counts else 3
    if layout < 2:
        raise SimulError(
            f"{path}: not SLTev partials: lines must read 'P|C <emission> <start> <end> text' "
            "(or 'P|C <start> <end> text' in .OStt files)"
        )
    return layout


def _parse_sltev(path: Path, raw: list[str], scale: float) -> list[PartialLine]:
    layout = _sltev_layout(path, [line for line in raw if line.strip()])
    expected = "P|C <start> <end> text" if layout == 2 else "P|C <emission> <start> <end> text"
    out: list[PartialLine] = []
    for number, line in enumerate(raw, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        parts = line.split(None, layout + 1)
        if parts[0] not in ("P", "C"):
            raise SimulError(
                f"{where}: a line must start with P (partial) or C (complete), got {excerpt(parts[0])}; "
                f"expected {expected!r}"
            )
        if len(parts) < layout + 1:
            raise SimulError(f"{where}: missing times; expected {expected!r}")
        names = ["start", "end"] if layout == 2 else ["emission time", "start", "end"]
        times = [parse_number(parts[k + 1], where, names[k], scale) for k in range(layout)]
        text = parts[layout + 1] if len(parts) > layout + 1 else ""
        emission, start, end = (
            (times[1], times[0], times[1]) if layout == 2 else (times[0], times[1], times[2])
        )
        _check_span(where, start, end)
        out.append(PartialLine(number, emission, start, end, text, final=parts[0] == "C", append=False))
    return out


def _parse_whisper(path: Path, raw: list[str], scale: float) -> list[PartialLine]:
    out: list[PartialLine] = []
    for number, line in enumerate(raw, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        match = _WHISPER_LINE.match(line)
        if match is None:
            raise SimulError(
                f"{where}: expected '<emission_ms> <beg_ms> <end_ms> <text>', got {excerpt(line)}"
            )
        emission = parse_number(match[1], where, "emission time", scale)
        start = parse_number(match[2], where, "begin time", scale)
        end = parse_number(match[3], where, "end time", scale)
        _check_span(where, start, end)
        out.append(PartialLine(number, emission, start, end, match[4] or "", final=True, append=True))
    return out


def _optional_time(obj: dict[str, Any], key: str, where: str, scale: float) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    number = as_float(value) * scale
    if not (math.isfinite(number) and number >= 0):
        raise SimulError(f"{where}: {key!r} must be a non-negative number of milliseconds or null")
    return number


def _parse_jsonl(path: Path, raw: list[str], scale: float) -> list[PartialLine]:
    out: list[PartialLine] = []
    for number, line in enumerate(raw, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        obj = loads(line, where)
        if not isinstance(obj, dict):
            raise SimulError(f"{where}: expected a JSON object with {', '.join(_JSONL_KEYS)}")
        if "time_ms" not in obj or "text" not in obj:
            raise SimulError(f"{where}: every partial needs 'time_ms' (emission time) and 'text'")
        emission = _optional_time(obj, "time_ms", where, scale)
        if emission is None:
            raise SimulError(f"{where}: 'time_ms' must be a number of milliseconds")
        if not isinstance(obj["text"], str):
            raise SimulError(f"{where}: 'text' must be a string")
        final = obj.get("final", False)
        if not isinstance(final, bool):
            raise SimulError(f"{where}: 'final' must be true or false")
        talk = obj.get("talk")
        if talk is not None and (not isinstance(talk, str) or not talk):
            raise SimulError(f"{where}: 'talk' must be a non-empty string when given")
        start = _optional_time(obj, "start_ms", where, scale)
        end = _optional_time(obj, "end_ms", where, scale)
        _check_span(where, start, end)
        out.append(PartialLine(number, emission, start, end, obj["text"], final, append=False, talk=talk))
    return out


def _check_order(path: Path, lines: list[PartialLine]) -> None:
    last: dict[str | None, PartialLine] = {}
    for pl in lines:
        prev = last.get(pl.talk)
        if prev is not None and pl.time_ms < prev.time_ms:
            raise SimulError(
                f"{path}:{pl.line}: emission time goes backwards ({pl.time_ms:g} ms after {prev.time_ms:g} "
                f"ms on line {prev.line}); partials must be listed in the order the recognizer emitted them"
            )
        last[pl.talk] = pl


# --- the talk transcript over time ---------------------------------------------------------------------


@dataclass
class _Word:
    text: str
    time_ms: float  # estimated audio time of the word (emission time when the line has no span)
    index: int  # the partial line (position in the talk's list) that committed it
    utterance: int


@dataclass(frozen=True)
class _Snapshot:
    """The transcript right after one partial line: committed words plus the open hypothesis."""

    index: int
    time_ms: float
    committed: int
    last_text: str | None  # the last committed word as it read then (a later chunk may extend it)
    open_words: tuple[str, ...] = ()
    open_times: tuple[float, ...] = ()
    utterance: int = -1


def _spread(pl: PartialLine, n: int) -> list[float]:
    """Audio times of ``n`` words spread evenly over the line's span (its emission time without one)."""
    if pl.start_ms is None or pl.end_ms is None or n == 0:
        return [pl.time_ms] * n
    width = (pl.end_ms - pl.start_ms) / n
    return [pl.start_ms + width * (k + 0.5) for k in range(n)]


def _transcript(lines: Sequence[PartialLine]) -> tuple[list[_Word], list[_Snapshot], int]:
    """Committed words, one snapshot per line, and how many utterances ended without a final line."""
    words: list[_Word] = []
    snaps: list[_Snapshot] = []
    utterance = 0
    open_words: tuple[str, ...] = ()
    open_times: tuple[float, ...] = ()
    last_index = -1
    for index, pl in enumerate(lines):
        tokens = pl.text.split()
        times = _spread(pl, len(tokens))
        if pl.append:
            if words and tokens and not pl.text[:1].isspace():
                words[-1].text += tokens.pop(0)  # the chunk continues the previous word
                times.pop(0)
            words.extend(_Word(t, tm, index, utterance) for t, tm in zip(tokens, times, strict=True))
            utterance += 1
            snaps.append(_Snapshot(index, pl.time_ms, len(words), words[-1].text if words else None))
        elif pl.final:
            words.extend(_Word(t, tm, index, utterance) for t, tm in zip(tokens, times, strict=True))
            utterance += 1
            open_words, open_times = (), ()
            snaps.append(_Snapshot(index, pl.time_ms, len(words), None))
        else:
            open_words, open_times = tuple(tokens), tuple(times)
            snaps.append(_Snapshot(index, pl.time_ms, len(words), None, open_words, open_times, utterance))
            last_index = index
    unterminated = 0
    if open_words:
        # The file ends inside an utterance: its last hypothesis is the recognizer's final word on it.
        unterminated = 1
        words.extend(
            _Word(t, tm, last_index, utterance) for t, tm in zip(open_words, open_times, strict=True)
        )
        snaps.append(_Snapshot(last_index, lines[last_index].time_ms, len(words), None))
    return words, snaps, unterminated


# --- assigning words to segments -----------------------------------------------------------------------


def normalize_word(word: str) -> str:
    """Lower case without punctuation: what two transcripts are compared on."""
    return "".join(ch for ch in word.casefold() if ch.isalnum())


def _distance(time_ms: float, segment: Segment) -> float:
    assert segment.offset_ms is not None and segment.end_ms is not None
    if time_ms < segment.offset_ms:
        return segment.offset_ms - time_ms
    return max(0.0, time_ms - segment.end_ms)


def _nearest(
    time_ms: float, segments: Sequence[Segment], candidates: Sequence[int], max_gap_ms: float
) -> int | None:
    timed = [k for k in candidates if segments[k].timed]
    if not timed:
        return None
    best = min(timed, key=lambda k: (_distance(time_ms, segments[k]), k))
    return best if _distance(time_ms, segments[best]) <= max_gap_ms else None


def _map_opcodes(
    hyp: list[str], ref: list[str], ref_seg: Sequence[int | None]
) -> tuple[list[int | None], list[tuple[int, int]]]:
    """Segments of hypothesis words aligned to reference words; also the ``(prev_ref, next_ref)`` of each
    hypothesis word that has no counterpart (-1 marks a missing neighbour), for the caller to place."""
    result: list[int | None] = [None] * len(hyp)
    gaps: list[tuple[int, int]] = [(-1, -1)] * len(hyp)
    matcher = SequenceMatcher(None, hyp, ref, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                result[i1 + k] = ref_seg[j1 + k]
        elif tag == "replace":
            for k in range(i2 - i1):
                result[i1 + k] = ref_seg[j1 + (k * (j2 - j1)) // (i2 - i1)]
        elif tag == "delete":  # words the hypothesis has and the reference lacks
            for k in range(i1, i2):
                gaps[k] = (j1 - 1, j1 if j1 < len(ref) else -1)
    return result, gaps


def _assign_text(words: list[_Word], segments: Sequence[Segment], max_gap_ms: float) -> list[int | None]:
    ref: list[str] = []
    ref_seg: list[int] = []
    for k, segment in enumerate(segments):
        for word in segment.source.split():
            ref.append(normalize_word(word))
            ref_seg.append(k)
    result, gaps = _map_opcodes([normalize_word(w.text) for w in words], ref, ref_seg)
    for i, (prev, nxt) in enumerate(gaps):
        if result[i] is not None or (prev < 0 and nxt < 0):
            continue
        # an extra hypothesis word between reference words prev and nxt (-1: none on that side)
        candidates = sorted({ref_seg[j] for j in (prev, nxt) if j >= 0})
        if prev >= 0 and nxt >= 0:
            by_time = (
                _nearest(words[i].time_ms, segments, candidates, math.inf) if len(candidates) > 1 else None
            )
            result[i] = by_time if by_time is not None else ref_seg[prev]
        else:  # before the first or after the last reference word of the talk
            result[i] = _nearest(words[i].time_ms, segments, candidates, max_gap_ms)
    return result


def _assign_time(times: Sequence[float], segments: Sequence[Segment], max_gap_ms: float) -> list[int | None]:
    every = range(len(segments))
    return [_nearest(t, segments, every, max_gap_ms) for t in times]


def _assign_open(
    open_words: Sequence[str], finals: list[str], final_segs: list[int | None]
) -> list[int | None]:
    """Segments of a hypothesis's words: those of the final words of its utterance they align to."""
    if not finals:
        return [None] * len(open_words)
    result, gaps = _map_opcodes(
        [normalize_word(w) for w in open_words], [normalize_word(w) for w in finals], final_segs
    )
    for i, (prev, nxt) in enumerate(gaps):
        if result[i] is None and (prev >= 0 or nxt >= 0):
            result[i] = final_segs[prev] if prev >= 0 else final_segs[nxt]
    return result


# --- per-segment steps ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _RawStep:
    text: str
    time_ms: float
    index: int


@dataclass
class TalkResult:
    """What the partials of one talk gave: steps per segment (by position in the talk) and the counts."""

    steps: dict[int, list[_RawStep]]
    partials: int = 0
    empty_partials: int = 0
    unaligned_partials: int = 0
    split_partials: int = 0
    words: int = 0
    unaligned_words: int = 0
    unterminated_utterances: int = 0


def align_talk(
    lines: Sequence[PartialLine], segments: Sequence[Segment], align: str, max_gap_ms: float
) -> TalkResult:
    """Steps for every segment of one talk (all of its segments, in order) from its partials."""
    if align not in ALIGN_MODES:
        raise UsageError(f"unknown --align {align!r}: use one of {', '.join(ALIGN_MODES)}")
    if align == "time" and not all(s.timed for s in segments):
        raise UsageError(
            "--align time needs segment offsets and durations: pass the segment YAML (--segments)"
        )
    words, snaps, unterminated = _transcript(lines)
    if align == "text":
        word_seg = _assign_text(words, segments, max_gap_ms)
    else:
        word_seg = _assign_time([w.time_ms for w in words], segments, max_gap_ms)
    by_utterance: dict[int, list[int]] = defaultdict(list)
    for j, word in enumerate(words):
        by_utterance[word.utterance].append(j)

    def open_segments(snap: _Snapshot) -> list[int | None]:
        if align == "time":
            return _assign_time(snap.open_times, segments, max_gap_ms)
        finals = by_utterance.get(snap.utterance, [])
        return _assign_open(snap.open_words, [words[j].text for j in finals], [word_seg[j] for j in finals])

    result = TalkResult(steps=defaultdict(list), unterminated_utterances=unterminated)
    contributions: dict[int, list[int | None]] = defaultdict(list)
    seg_words: dict[int, list[str]] = defaultdict(list)
    slot: dict[int, int] = {}  # committed word -> its position in its segment's word list
    done = 0
    prev_open: set[int] = set()
    for snap in snaps:
        touched = set(prev_open)
        for j in range(max(done - 1, 0), snap.committed):
            text = snap.last_text if j == snap.committed - 1 and snap.last_text is not None else words[j].text
            seg = word_seg[j]
            if j >= done:
                contributions[words[j].index].append(seg)
            if seg is None:
                continue
            if j not in slot:
                slot[j] = len(seg_words[seg])
                seg_words[seg].append(text)
                touched.add(seg)
            elif seg_words[seg][slot[j]] != text:
                seg_words[seg][slot[j]] = text
                touched.add(seg)
        done = snap.committed
        open_by_seg: dict[int, list[str]] = defaultdict(list)
        for token, seg in zip(snap.open_words, open_segments(snap) if snap.open_words else [], strict=True):
            contributions[snap.index].append(seg)
            if seg is not None:
                open_by_seg[seg].append(token)
        touched |= open_by_seg.keys()
        for seg in sorted(touched):
            text = " ".join(seg_words[seg] + open_by_seg[seg])
            steps = result.steps[seg]
            if text and (not steps or steps[-1].text != text):
                steps.append(_RawStep(text, snap.time_ms, snap.index))
        prev_open = set(open_by_seg)
    # The recognizer's final text for a segment closes its stream (normally it already is the last step).
    for seg in list(result.steps):
        final = " ".join(words[j].text for j in sorted(slot) if word_seg[j] == seg)
        steps = result.steps[seg]
        if not final:
            del result.steps[seg]  # only retracted hypotheses reached it
        elif steps[-1].text != final:
            steps.append(_RawStep(final, steps[-1].time_ms, steps[-1].index))
    result.partials = len(lines)
    result.empty_partials = sum(1 for index in range(len(lines)) if not contributions.get(index))
    for segs in contributions.values():
        placed = {s for s in segs if s is not None}
        result.unaligned_partials += not placed
        result.split_partials += len(placed) > 1
    result.words = len(words)
    result.unaligned_words = sum(1 for seg in word_seg if seg is None)
    return result


# --- streams -------------------------------------------------------------------------------------------


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
    raw: list[_RawStep],
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
        **segment.provenance,
        "simulated": False,
        "partials": report.provenance(),
        "time_origin": origin_name,
        "time_origin_ms": round(origin, 1),
    }
    stream = Stream(
        id=segment.id,
        src=src,
        tgt=tgt,
        steps=tuple(steps),
        reference=segment.reference,
        provenance=provenance,
    )
    return stream, clamped

"""Aligning a talk's recognized words to its reference segments, and the steps each segment gets.

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
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from simul.common.errors import UsageError
from simul.streams.partials.formats import ALIGN_MODES, PartialLine
from simul.streams.segments import Segment

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


def _aligned(
    hyp: Sequence[str], ref: Sequence[str]
) -> tuple[list[int | None], list[bool], list[tuple[int, int]]]:
    """The minimum-edit word alignment of ``hyp`` to ``ref``: per hypothesis word the reference word it
    aligns to (matched or substituted; None when the reference lacks it), whether it matched exactly, and
    for a word the reference lacks the ``(prev_ref, next_ref)`` around it (-1 marks a missing neighbour)."""
    index: list[int | None] = [None] * len(hyp)
    equal = [False] * len(hyp)
    gaps: list[tuple[int, int]] = [(-1, -1)] * len(hyp)
    matcher = SequenceMatcher(None, list(hyp), list(ref), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                index[i1 + k] = j1 + k
                equal[i1 + k] = True
        elif tag == "replace":
            for k in range(i2 - i1):
                index[i1 + k] = j1 + (k * (j2 - j1)) // (i2 - i1)
        elif tag == "delete":  # words the hypothesis has and the reference lacks
            for k in range(i1, i2):
                gaps[k] = (j1 - 1, j1 if j1 < len(ref) else -1)
    return index, equal, gaps


def reference_words(hyp: Sequence[str], ref: Sequence[str]) -> tuple[list[int | None], list[bool]]:
    """The alignment that ``text`` alignment assigns words to segments by, for other users (the derived
    segment times of :mod:`simul.streams.asr.segment_times`): per hypothesis word, the index of the reference
    word it aligns to (matched or substituted; None for a word the reference lacks) and whether it matched
    exactly. Compare normalized words (:func:`normalize_word`)."""
    index, equal, _ = _aligned(hyp, ref)
    return index, equal


def _map_opcodes(
    hyp: list[str], ref: list[str], ref_seg: Sequence[int | None]
) -> tuple[list[int | None], list[tuple[int, int]]]:
    """Segments of hypothesis words aligned to reference words; also the ``(prev_ref, next_ref)`` of each
    hypothesis word that has no counterpart (-1 marks a missing neighbour), for the caller to place."""
    index, _, gaps = _aligned(hyp, ref)
    return [None if j is None else ref_seg[j] for j in index], gaps


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
class RawStep:
    text: str
    time_ms: float
    index: int


@dataclass
class TalkResult:
    """What the partials of one talk gave: steps per segment (by position in the talk) and the counts."""

    steps: dict[int, list[RawStep]]
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
                steps.append(RawStep(text, snap.time_ms, snap.index))
        prev_open = set(open_by_seg)
    # The recognizer's final text for a segment closes its stream (normally it already is the last step).
    for seg in list(result.steps):
        final = " ".join(words[j].text for j in sorted(slot) if word_seg[j] == seg)
        steps = result.steps[seg]
        if not final:
            del result.steps[seg]  # only retracted hypotheses reached it
        elif steps[-1].text != final:
            steps.append(RawStep(final, steps[-1].time_ms, steps[-1].index))
    result.partials = len(lines)
    result.empty_partials = sum(1 for index in range(len(lines)) if not contributions.get(index))
    for segs in contributions.values():
        placed = {s for s in segs if s is not None}
        result.unaligned_partials += not placed
        result.split_partials += len(placed) > 1
    result.words = len(words)
    result.unaligned_words = sum(1 for seg in word_seg if seg is None)
    return result

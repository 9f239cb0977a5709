"""Talk-clock times for untimed reference lines, from the recognizer's own timed words.

``simul streams asr --audio TALK.wav --longform --source en.txt --ref de.txt`` has reference segments (one a
line) but no segment YAML, and long-form scoring places each segment on the talk's clock (re-segmentation and
LongYAAL need ``offset_ms``/``duration_ms``). The recognizer knows when it heard each word, so:

1. The final transcript's words (with their ``[start, end]`` times from the steps' ``word_ms``) are aligned
   to the source lines' words by the minimum-edit word alignment that ``--align text`` uses to assign
   recognized words to segments (:func:`simul.streams.partials.align.reference_words`: lower case, no
   punctuation). Every recognized word aligned to a source word places that word's line there (a misheard
   word is still heard where it was said; "task oriented" for "task-oriented" is two words on one); words
   the source lacks place nothing. Exact matches are counted as ``matched_words``.
2. A line runs from the start of its first placed word to the end of its last, except that a leading word
   separated from the rest of its line by a pause of over a second is left out (Whisper times the first
   word after a pause from the start of the pause). A line that starts before the previous one ends
   (Whisper's word times are rough) starts where the previous one ends. With the recording's speech mask,
   a line is then trimmed to the first and last frame of speech inside it (Whisper's first word after a
   silence starts a few hundred ms early).
3. Lines with no placed word get times interpolated between their neighbours: a run of such lines shares the
   gap between the end of the line before it (0 at the start) and the start of the line after it (the
   recording's end at the end), in proportion to their source words.

:class:`DerivedTimes` says how many words matched and how many lines were interpolated; the stream records it
in ``provenance["segment_times"]`` and ``simul eval`` copies it to run.json.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from simul.common.errors import SimulError
from simul.streams.asr.audio import FRAME_MS
from simul.streams.partials.align import normalize_word, reference_words
from simul.streams.segments import Segment

METHOD = "recognizer word times aligned to the source lines (minimum-edit word alignment, as --align text)"
# Below this share of the source words matched, the transcript is not that of the recording: refused.
MIN_MATCHED_SHARE = 0.2
# Shorter transcripts are not judged by that share (a few words can all be misheard).
MIN_WORDS_JUDGED = 20
# Leading words of a line this far (ms) from its next word are taken as mistimed (_without_displaced_lead).
LEADING_PAUSE_MS = 1000.0
MAX_DISPLACED = 2


@dataclass(frozen=True)
class DerivedTimes:
    """Segments with times on the talk clock and how they were found."""

    segments: list[Segment]
    source_words: int
    recognized_words: int
    matched_words: int  # recognized words equal to the source word they align to
    placed_words: int  # matched or substituted: aligned to a source word
    interpolated: list[int]  # line numbers whose times were interpolated

    def to_json(self) -> dict[str, Any]:
        return {
            "derived": True,
            "method": METHOD,
            "source_words": self.source_words,
            "recognized_words": self.recognized_words,
            "matched_words": self.matched_words,
            "placed_words": self.placed_words,
            "interpolated_segments": len(self.interpolated),
            **({"interpolated_lines": self.interpolated[:50]} if self.interpolated else {}),
        }


def derive_segment_times(
    segments: Sequence[Segment],
    words: Sequence[str],
    times: Sequence[tuple[float, float]],
    duration_ms: float,
    where: str,
    speech: npt.NDArray[np.bool_] | None = None,
) -> DerivedTimes:
    """Give every segment of ``segments`` (one talk, in order, with source text) an offset and a duration
    from the recognized ``words`` and their ``times`` (see the module docstring); ``where`` names the
    transcript in errors; ``speech``: the recording's speech mask (``simul.streams.asr.audio.speech_mask``,
    frames of ``FRAME_MS``), to trim each line to the speech inside it."""
    if len(words) != len(times):
        raise ValueError(f"{len(words)} words but {len(times)} times")
    missing = [s for s in segments if not s.source.strip()]
    if missing:
        raise SimulError(
            f"{where}: segment {missing[0].id} has no source text; deriving segment times aligns the "
            "recognized words to the source lines: pass --source TRANSCRIPT (or --segments YAML)"
        )
    ref: list[str] = []
    ref_line: list[int] = []
    for k, segment in enumerate(segments):
        for word in segment.source.split():
            ref.append(normalize_word(word) or word)
            ref_line.append(k)
    hyp = [normalize_word(w) or w for w in words]
    index, equal = reference_words(hyp, ref)
    placed_times: list[list[tuple[float, float]]] = [[] for _ in segments]
    for i, j in enumerate(index):
        if j is not None:
            placed_times[ref_line[j]].append(times[i])
    placed = sum(len(p) for p in placed_times)
    spans: list[list[float] | None] = [None] * len(segments)
    for k, line_times in enumerate(placed_times):
        line_times = _without_displaced_lead(line_times)
        if line_times:
            span = [min(a for a, _ in line_times), max(b for _, b in line_times)]
            spans[k] = span if speech is None else _speech_inside(span, speech)
    matched = sum(equal)
    if len(ref) >= MIN_WORDS_JUDGED and matched < MIN_MATCHED_SHARE * len(ref):
        raise SimulError(
            f"{where}: only {matched} of the {len(ref)} source words match what was recognized in the "
            "recording; is --source the transcript of this recording? (pass the right one, or --segments "
            "YAML with its times)"
        )
    offsets = _ordered(spans, [len(s.source.split()) for s in segments], duration_ms)
    interpolated = [segments[k].line for k, span in enumerate(spans) if span is None]
    timed = [
        replace(segment, offset_ms=round(start, 1), duration_ms=round(end - start, 1))
        for segment, (start, end) in zip(segments, offsets, strict=True)
    ]
    return DerivedTimes(timed, len(ref), len(words), matched, placed, interpolated)


def _without_displaced_lead(times: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """A line's placed word times without leading words cut off from the rest of the line by a pause of
    more than :data:`LEADING_PAUSE_MS` (at most :data:`MAX_DISPLACED` of them, and never the last word).

    Whisper's word timestamps put the first word after a pause at the start of the pause: in the espeak-ng
    rendering of the ACL 60/60 dev sample, "In" (line 4, spoken at 18.3 s) came out at 15.2-16.3 s, right
    after the previous line's last word, and "task", its next word, at 18.4 s."""
    kept = times
    for _ in range(MAX_DISPLACED):
        if len(kept) < 2 or kept[1][0] - kept[0][1] <= LEADING_PAUSE_MS:
            break
        kept = kept[1:]
    return kept


def _speech_inside(span: list[float], speech: npt.NDArray[np.bool_]) -> list[float]:
    """``span`` trimmed to its first and last frame of speech (unchanged when it holds none).

    Whisper's word times are rough at the edges of speech: on the espeak-ng rendering of the ACL 60/60 dev
    sample a line's first word started 100 to 490 ms before the line was spoken, where the previous silence
    began; the energy of the audio says where the speech starts."""
    first = max(0, math.floor(span[0] / FRAME_MS))
    last = min(len(speech), math.ceil(span[1] / FRAME_MS))
    voiced = np.flatnonzero(speech[first:last])
    if len(voiced) == 0:
        return span
    return [(first + int(voiced[0])) * FRAME_MS, min(span[1], (first + int(voiced[-1]) + 1) * FRAME_MS)]


def _ordered(
    spans: Sequence[list[float] | None], weights: Sequence[int], duration_ms: float
) -> list[tuple[float, float]]:
    """Spans in order and not overlapping, the missing ones interpolated (module docstring, steps 2-3)."""
    fixed: list[tuple[float, float] | None] = []
    last_end = 0.0
    for span in spans:
        if span is None:
            fixed.append(None)
            continue
        start = min(max(span[0], last_end), duration_ms)
        end = min(max(span[1], start), duration_ms)
        fixed.append((start, end))
        last_end = end
    out: list[tuple[float, float]] = []
    k = 0
    while k < len(fixed):
        known = fixed[k]
        if known is not None:
            out.append(known)
            k += 1
            continue
        run_end = k
        while run_end < len(fixed) and fixed[run_end] is None:
            run_end += 1
        begin = out[-1][1] if out else 0.0
        after = fixed[run_end] if run_end < len(fixed) else None
        stop = after[0] if after is not None else duration_ms
        stop = max(stop, begin)
        total = sum(max(1, w) for w in weights[k:run_end])
        position = begin
        for m in range(k, run_end):
            width = (stop - begin) * max(1, weights[m]) / total
            out.append((position, position + width))
            position += width
        k = run_end
    return out

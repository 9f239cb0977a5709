"""What long-form scoring needs of one talk: its final output in latency units with each unit's times, and
its reference segmentation.

Positions (delays, elapsed, segment offsets and durations, the recording's end) are on one axis per talk:
milliseconds on the talk's clock for timed talks (speech), source words read for untimed text documents
(a text segment's offset is then the number of source words of the segments before it, its duration its own
word count). Units follow ``simul.metrics.units``: whitespace words, or characters for languages written
without spaces (zh, ja, th), as OmniSTEval's ``--word_level``/``--char_level`` and simulstream's
``latency_unit`` count them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from simul.common.errors import SimulError
from simul.common.languages import get_language
from simul.metrics.units import target_unit

TIMED = "ms"
UNTIMED = "source words"


@dataclass(frozen=True)
class TalkSegment:
    """One reference segment: its references (first one first), its source text, and where it lies."""

    references: tuple[str, ...]
    source: str = ""
    offset: float = 0.0  # ms on the talk's clock, or source words before the segment (untimed)
    duration: float = 0.0  # ms, or the segment's source words (untimed)

    @property
    def end(self) -> float:
        return self.offset + self.duration


@dataclass(frozen=True)
class LongformTalk:
    """One talk's final output with per-unit delays (CU) and elapsed times (CA), and its segments.

    ``delays[j]`` is the position at which unit j of the final output first appeared in its final form and
    stayed (see ``delays.py``); ``elapsed[j]`` the computation-aware time of that same update (None when the
    run recorded no computation times). ``duration`` is the recording's length (ms) or the document's
    source words, when known.
    """

    id: str
    src: str
    tgt: str
    words: tuple[str, ...]
    delays: tuple[float, ...]
    elapsed: tuple[float, ...] | None
    segments: tuple[TalkSegment, ...]
    duration: float | None = None
    timed: bool = True

    def __post_init__(self) -> None:
        where = f"talk {self.id!r}"
        if not self.id:
            raise SimulError("a long-form talk needs an id")
        if len(self.delays) != len(self.words):
            raise SimulError(f"{where}: {len(self.words)} output units but {len(self.delays)} delays")
        if self.elapsed is not None and len(self.elapsed) != len(self.words):
            raise SimulError(f"{where}: {len(self.words)} output units but {len(self.elapsed)} elapsed times")
        for name, values in (("delays", self.delays), ("elapsed", self.elapsed or ())):
            if any(not math.isfinite(v) for v in values):
                raise SimulError(f"{where}: {name} must be finite numbers")
        if not self.segments:
            raise SimulError(f"{where} has no reference segments; long-form scoring aligns onto them")
        for number, seg in enumerate(self.segments, start=1):
            if not (math.isfinite(seg.offset) and math.isfinite(seg.duration)) or seg.duration < 0:
                raise SimulError(
                    f"{where}, segment {number}: offset and duration must be finite, duration >= 0"
                )
        get_language(self.src)
        get_language(self.tgt)

    @property
    def unit(self) -> str:
        """``word`` or ``char`` (see ``simul.metrics.units``)."""
        return target_unit(self.tgt)

    @property
    def prediction(self) -> str:
        """The final output as text: words joined by spaces, characters run together."""
        return "".join(self.words) if self.unit == "char" else " ".join(self.words)

    @property
    def position_unit(self) -> str:
        return TIMED if self.timed else UNTIMED

    @property
    def recording_end(self) -> float:
        """The end of the last reference segment: where OmniSTEval's LongYAAL stops counting.

        OmniSTEval 0.1.10 (``data._add_time_to_recording_end_to_segmentation``) takes a recording's end as
        max(offset + duration) over its segments, not the audio's length, so simul does the same.
        """
        return max(seg.end for seg in self.segments)


def text_segments(
    references: Sequence[tuple[str, ...]], sources: Sequence[str], src: str
) -> tuple[TalkSegment, ...]:
    """Segments of an untimed document: offsets and durations in source words (cumulative counts).

    Words are whitespace words, or non-space characters for a source written without spaces, as
    ``simul.metrics.latency.source_positions`` counts a text stream's position.
    """
    unspaced = get_language(src).unspaced
    out = []
    offset = 0.0
    for refs, source in zip(references, sources, strict=True):
        count = float(sum(1 for ch in source if not ch.isspace()) if unspaced else len(source.split()))
        out.append(TalkSegment(references=tuple(refs), source=source, offset=offset, duration=count))
        offset += count
    return tuple(out)

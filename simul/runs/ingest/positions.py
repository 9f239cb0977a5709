"""The source a system had seen at a position: a prefix of words for text streams, a step for timed ones."""

from __future__ import annotations

from simul.common.languages import get_language
from simul.streams.format import Stream


def source_at(stream: Stream, position: float) -> tuple[str, float | None]:
    """(source prefix, time_ms) at ``position``: ms for timed streams, source words (non-space characters
    for unspaced sources) for text streams."""
    if stream.timed:
        known = [s for s in stream.steps if s.time_ms is not None and s.time_ms <= position]
        return (known[-1].source if known else ""), position
    count = max(0, round(position))
    text = stream.final_source
    if get_language(stream.src).unspaced:
        seen = 0
        for index, ch in enumerate(text):
            if not ch.isspace():
                seen += 1
                if seen > count:
                    return text[:index].rstrip(), None
        return text, None
    return " ".join(text.split()[:count]), None

"""Can every long-form figure of a set of streams be computed? Asked before anything is decoded (or scored).

Long-form scoring (:mod:`simul.metrics.longform.scoring`) re-segments each talk's output onto its reference
segments, so it needs, per talk: reference segments, a reference in each, and a place for each on the
talk's axis: ``offset_ms``/``duration_ms`` for a talk with audio times (``time_ms`` on its steps), or the
source text of each segment for an untimed document (placed in source words). A stream that lacks any of
these decodes fine and then cannot be scored, so ``simul eval`` and ``simul ingest`` (through
:func:`simul.runs.evaluation.load_stream_set`) and ``simul score`` refuse it first, naming the option of
the command that builds the stream which fixes it. COMET's need of source texts is not checked here: it is
reported as unavailable, with the reason, and the rest is scored.
"""

from __future__ import annotations

from collections.abc import Sequence

from simul.common.errors import SimulError
from simul.streams.format import Stream

REBUILD_TIMED = (
    "rebuild the stream with --segments YAML (the times of a segmentation), or, from the recording, with "
    "`simul streams asr --audio TALK.wav --longform --source TRANSCRIPT --ref TRANSLATION` (the segment "
    "times are then derived from the recognized words)"
)
REBUILD_REFS = (
    "rebuild the stream with --ref TRANSLATION (one line per segment; with --source, or --segments YAML)"
)


def longform_problems(streams: Sequence[Stream]) -> list[str]:
    """What keeps the long-form figures of ``streams`` from being computed, one line per talk (none when
    they can be, or when not every stream is a talk: the re-segmented figures are then not computed)."""
    if not streams or not all(s.longform for s in streams):
        return []
    problems: list[str] = []
    for stream in streams:
        where = f"talk {stream.id!r}"
        if not stream.segments:
            problems.append(
                f"{where} has no reference segments (long-form quality and latency align its output onto "
                f"them): {REBUILD_REFS}"
            )
            continue
        no_reference = [k for k, seg in enumerate(stream.segments, start=1) if not seg.references]
        if no_reference:
            problems.append(
                f"{where}: {len(no_reference)} of its {len(stream.segments)} segments have no reference "
                f"(segment {no_reference[0]} first): {REBUILD_REFS}"
            )
        if stream.timed:
            untimed = [
                k
                for k, seg in enumerate(stream.segments, start=1)
                if seg.offset_ms is None or seg.duration_ms is None
            ]
            if untimed:
                problems.append(
                    f"{where} has audio times on its steps but {len(untimed)} of its {len(stream.segments)} "
                    f"segments have no offset_ms/duration_ms on the talk clock (segment {untimed[0]} first), "
                    f"so its output cannot be placed on them: {REBUILD_TIMED}"
                )
        elif any(seg.source is None or not seg.source.strip() for seg in stream.segments):
            problems.append(
                f"{where} is an untimed document, placed in source words, but some of its segments have no "
                "source text: rebuild the stream with --source (or the text streams' source lines)"
            )
    return problems


def check_longform_scoring(streams: Sequence[Stream], what: str) -> None:
    """Refuse ``streams`` (``what``: the file or run they come from) when a long-form figure could not be
    computed after decoding; one message, every talk named (up to five)."""
    problems = longform_problems(streams)
    if not problems:
        return
    shown = problems[:5] + ([f"... and {len(problems) - 5} more talks"] if len(problems) > 5 else [])
    talks = f"{len(problems)} talk{'s' if len(problems) != 1 else ''}"
    raise SimulError(f"{what}: {talks} could be decoded but not scored:\n  " + "\n  ".join(shown))

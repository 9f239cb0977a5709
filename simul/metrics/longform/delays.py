"""A talk's updates -> its final output units, each with the time its final form first appeared and stayed.

**Rule** (simulstream 1.0.0, ``metrics/readers.py`` ``LogReader.final_outputs_and_latencies``: retracted
tokens drop their delays, re-emitted ones take the new update's time, and a word whose last part changes takes
the time of that change). On talk-level texts: with D_u the displayed text of update u split into units
(``simul.metrics.units``: whitespace words, or characters for zh/ja/th), F = D_last and
L_u = |LCP(D_u, F)|, unit j of F is final from the first update u with L_(u') > j for every u' >= u; its
delay is that update's CU time (``emitted_ms``: the source position when emitted, ms on the talk clock, or the
source words read for untimed text) and its elapsed that update's CA time (``elapsed_ms``). This is the
short-form finalisation rule of ``simul.metrics.latency.finalisation_steps``, reused, applied to the talk.

Delays are non-decreasing along the output by construction. A unit that is taken back and re-emitted
identically within one update keeps its earlier time here (the talk-level text cannot show it); simulstream,
which sees the deleted tokens, would give it the later time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from simul.common.errors import SimulError
from simul.decoding.records import StepRecord
from simul.metrics.latency import finalisation_steps
from simul.metrics.longform.talk import LongformTalk, TalkSegment, text_segments
from simul.metrics.units import target_unit, units
from simul.streams.format import Stream
from simul.streams.scorable import REBUILD_TIMED


@dataclass(frozen=True)
class TalkUpdate:
    """One update of a talk: the talk-level displayed text after it, and its CU and CA times."""

    text: str
    emitted: float  # CU: ms on the talk clock, or source words read (untimed)
    elapsed: float | None = None  # CA: ms on the talk clock (None when not measured)


@dataclass(frozen=True)
class FinalUnits:
    """The final output units of a talk and, per unit, its update index, delay and elapsed time."""

    unit: str
    words: tuple[str, ...]
    finalised_at: tuple[int, ...]
    delays: tuple[float, ...]
    elapsed: tuple[float, ...] | None


def final_units(updates: Sequence[TalkUpdate], tgt: str) -> FinalUnits:
    """Apply the rule of the module docstring to a talk's updates (in emission order)."""
    unit = target_unit(tgt)
    displays = [units(u.text, unit) for u in updates]
    if unit == "char" and len(updates) > 1:
        # a space shown at the end of an update (zh/ja output with a Latin word) counts from that update,
        # as in OmniSTEval and simulstream; only the final output is stripped
        displays[:-1] = [list(u.text.lstrip()) for u in updates[:-1]]
    steps = finalisation_steps(displays)
    words = tuple(displays[-1]) if displays else ()
    has_elapsed = bool(updates) and all(u.elapsed is not None for u in updates)
    return FinalUnits(
        unit=unit,
        words=words,
        finalised_at=tuple(steps),
        delays=tuple(float(updates[t].emitted) for t in steps),
        elapsed=tuple(float(updates[t].elapsed or 0.0) for t in steps) if has_elapsed else None,
    )


def updates_from_records(records: Sequence[StepRecord], where: str = "talk") -> list[TalkUpdate]:
    """A long-form run's StepRecords -> updates: ``display``, CU from ``talk["emitted_ms"]`` (or
    ``talk["source_words"]`` for untimed text, where emitted_ms is None), CA from ``talk["elapsed_ms"]``."""
    out = []
    for index, record in enumerate(records):
        talk = record.talk
        here = f"{where}, step {record.step if record.step is not None else index}"
        if not isinstance(talk, dict):
            raise SimulError(f"{here}: the record has no 'talk' facts; was it written by a long-form run?")
        emitted = talk.get("emitted_ms")
        if emitted is None:
            emitted = talk.get("source_words")
        if not isinstance(emitted, int | float) or isinstance(emitted, bool):
            raise SimulError(f"{here}: talk.emitted_ms and talk.source_words are both missing")
        elapsed = talk.get("elapsed_ms")
        if elapsed is not None and (not isinstance(elapsed, int | float) or isinstance(elapsed, bool)):
            raise SimulError(f"{here}: talk.elapsed_ms must be a number of ms")
        out.append(TalkUpdate(text=record.display, emitted=float(emitted), elapsed=elapsed))
    return out


def final_units_from_records(records: Sequence[StepRecord], tgt: str, where: str = "talk") -> FinalUnits:
    """:func:`final_units` of a long-form run's steps (see :func:`updates_from_records`)."""
    return final_units(updates_from_records(records, where), tgt)


def talk_from_records(stream: Stream, records: Sequence[StepRecord]) -> LongformTalk:
    """A long-form run's steps of one talk -> the :class:`LongformTalk` that :func:`score_talks` scores.

    Timed talks (``emitted_ms`` on every record, segment times on the stream) are on the talk clock in ms, the
    recording's length being ``stream.duration_ms``; untimed documents are on source words, their segments'
    offsets the cumulative word counts of the segments' sources (``talk.text_segments``), and have no
    computation-aware times (their ``elapsed_ms`` is computation time, not a position in source words).
    """
    where = f"talk {stream.id!r}"
    if not stream.longform:
        raise SimulError(f"{where} is not a long-form stream (version 3, 'longform': true)")
    if not records:
        raise SimulError(f"{where} has no steps in the run")
    if not stream.segments:
        raise SimulError(f"{where} has no reference segments to score against")
    timed = all(isinstance(r.talk, dict) and r.talk.get("emitted_ms") is not None for r in records)
    units = final_units_from_records(records, stream.tgt, where)
    if timed:
        if any(seg.offset_ms is None or seg.duration_ms is None for seg in stream.segments):
            raise SimulError(
                f"{where}: the run has times but the segments do not (no offset_ms/duration_ms on the talk "
                f"clock); {REBUILD_TIMED}"
            )
        segments = tuple(
            TalkSegment(
                references=seg.references,
                source=seg.source or "",
                offset=float(seg.offset_ms or 0.0),
                duration=float(seg.duration_ms or 0.0),
            )
            for seg in stream.segments
        )
        duration = stream.duration_ms
    else:
        if any(seg.source is None for seg in stream.segments):
            raise SimulError(
                f"{where}: an untimed document needs every segment's source text to place it in source words"
            )
        segments = text_segments(
            [seg.references for seg in stream.segments],
            [seg.source or "" for seg in stream.segments],
            stream.src,
        )
        duration = segments[-1].end
    return LongformTalk(
        id=stream.id,
        src=stream.src,
        tgt=stream.tgt,
        words=units.words,
        delays=units.delays,
        # an untimed document's elapsed_ms is computation time, on no common axis with its source words
        elapsed=units.elapsed if timed else None,
        segments=segments,
        duration=duration,
        timed=timed,
    )

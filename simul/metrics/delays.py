"""One stream's delays, as scored by simul and as written by `simul export`: one computation for both.

See ``metrics/latency.py`` for the definitions and ``metrics/units.py`` for the units.
"""

from __future__ import annotations

from dataclasses import dataclass

from simul.common.languages import get_language
from simul.decoding.records import StreamResult
from simul.metrics.latency import (
    Lagging,
    cumulative_ms,
    elapsed,
    finalisation_steps,
    source_length,
    source_positions,
)
from simul.metrics.units import reference_length, target_unit, units
from simul.streams.format import Stream


def segment_duration_ms(stream: Stream) -> float | None:
    """The duration of a timed stream's audio segment (``provenance.duration_s``), if recorded."""
    value = stream.provenance.get("duration_s")
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value) * 1000.0
    return None


@dataclass(frozen=True)
class StreamDelays:
    """The final display in target units, each unit's delay and elapsed time, and the lengths."""

    unit: str
    final_units: list[str]
    finalised_at: list[int]  # step index at which each unit became final
    delays: list[float]
    elapsed: list[float]  # computation-aware; meaningful only when timings are available
    source_length: float  # |X| for delays
    elapsed_source_length: float  # |X| for elapsed (C_(T-1) for text streams)
    reference_length: int | None
    timed: bool

    def lagging(self) -> Lagging:
        return Lagging.of(self.delays, self.source_length, self.reference_length)

    def lagging_aware(self) -> Lagging:
        return Lagging.of(self.elapsed, self.elapsed_source_length, self.reference_length)


def stream_delays(result: StreamResult, stream: Stream) -> StreamDelays:
    unit = target_unit(stream.tgt)
    displays = [units(s.display, unit) for s in result.steps]
    timed = all(s.time_ms is not None for s in result.steps) and bool(result.steps)
    positions = source_positions(
        [s.source for s in result.steps], [s.time_ms for s in result.steps], get_language(stream.src).unspaced
    )
    length = source_length(positions, timed, segment_duration_ms(stream))
    compute = cumulative_ms([s.t_prompt + s.t_gen for s in result.steps])
    finalised_at = finalisation_steps(displays)
    return StreamDelays(
        unit=unit,
        final_units=displays[-1] if displays else [],
        finalised_at=finalised_at,
        delays=[positions[t] for t in finalised_at],
        elapsed=elapsed(finalised_at, positions, compute, timed),
        source_length=length,
        elapsed_source_length=length if timed else (compute[-1] if compute else 0.0),
        reference_length=reference_length(stream.reference, unit) if stream.reference is not None else None,
        timed=timed,
    )

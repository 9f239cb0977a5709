"""What a metric family gives a method's report (:class:`Figures`), what the other methods are compared with
(:class:`RtReference`), and the rounding run.json uses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simul.decoding.records import StreamResult


@dataclass
class Figures:
    """One family's share of a method's report: run.json metrics, counts, and its columns of the per-stream
    rows (one dict per stream result, in the results' order; empty when the family adds no column), and its
    lines of the run's error-span file (XCOMET's spans per segment: simul.runs.directory.ERROR_SPANS_FILE)."""

    metrics: dict[str, float | None] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    spans: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class RtReference:
    """RT's side of the comparisons: its stream results by stream id (agreement with RT) and its TPS figures
    as its own report gives them (rounded; None when the records lack timing or model tokens)."""

    results: Mapping[str, StreamResult]
    tps: float | None
    tps_e2e: float | None


def combine(parts: Sequence[Figures], streams: int) -> Figures:
    """The families' figures in one. Each name belongs to one family: a name given twice is a programming
    error (ValueError), so that no family overwrites another's figure."""
    out = Figures(rows=[{} for _ in range(streams)])
    for part in parts:
        _add(out.metrics, part.metrics, "metric")
        _add(out.counts, part.counts, "count")
        if part.rows and len(part.rows) != streams:
            raise ValueError(f"a family gave {len(part.rows)} per-stream rows for {streams} streams")
        for row, columns in zip(out.rows, part.rows, strict=False):
            _add(row, columns, "per-stream column")
        out.spans.extend(part.spans)
    return out


def _add(into: dict[str, Any], new: Mapping[str, Any], what: str) -> None:
    clash = into.keys() & new.keys()
    if clash:
        raise ValueError(f"{what} {', '.join(sorted(clash))} given by two metric families")
    into.update(new)


def rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def mean_of(values: Sequence[float | None]) -> float | None:
    """The mean of the values that exist, rounded to 4 decimals (None when none does)."""
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 4) if present else None

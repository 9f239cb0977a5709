"""Turn per-step records into the figures of a run, one method at a time.

Everything here is computed from what a run directory stores (step records and streams), so that
`simul score` recomputes exactly what `simul eval` reported. Each metric family computes its own figures
(simul.metrics.registry.FAMILIES) from one input computed once per method (simul.metrics.family.FamilyInput);
:func:`method_report` puts them together and marks what the records lack.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simul.decoding.records import StreamResult
from simul.metrics.delays import stream_delays
from simul.metrics.family import NO_SCORERS, FamilyInput, Figures, RtReference, Scorers, combine
from simul.metrics.intervals import baseline_key
from simul.metrics.registry import FAMILIES, needing
from simul.metrics.spec import RECORD_FIELDS
from simul.request.methods import Method
from simul.streams.format import Stream

__all__ = ["MethodReport", "Scorers", "drop_missing", "method_report", "reports_for", "rt_reference"]


@dataclass
class MethodReport:
    """A method's figures plus its per-stream figures (for paired comparisons)."""

    method: Method
    metrics: dict[str, float | None]
    per_stream: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    spans: list[dict[str, Any]] = field(default_factory=list)  # XCOMET's error spans per segment
    # each learned metric's SHA-256 of what its scorer was given (run.json's learned_inputs)
    learned_inputs: dict[str, str] = field(default_factory=dict)


def family_input(
    method: Method,
    results: Sequence[StreamResult],
    streams: Mapping[str, Stream],
    ne_tokenizer: str,
    rt: RtReference | None = None,
    scorers: Scorers = NO_SCORERS,
) -> FamilyInput:
    """What every family reads, computed once: a run with a talk (a long-form stream) has no sentence
    delays (its latencies are the long-form ones), and when every stream is a talk its quality and latency
    are scored on the talks re-segmented onto their reference segments."""
    talks = any(streams[r.stream_id].longform for r in results)
    return FamilyInput(
        method=method,
        results=results,
        streams=streams,
        ne_tokenizer=ne_tokenizer,
        rt=rt,
        scorers=scorers,
        talks=talks,
        whole_talks=bool(results) and all(streams[r.stream_id].longform for r in results),
        delays=None if talks else [stream_delays(r, streams[r.stream_id]) for r in results],
    )


def method_report(
    method: Method,
    results: Sequence[StreamResult],
    streams: Mapping[str, Stream],
    ne_tokenizer: str,
    rt: RtReference | None = None,
    missing: frozenset[str] = frozenset(),
    scorers: Scorers = NO_SCORERS,
) -> MethodReport:
    """Every figure of one method over its stream results, family by family; ``rt``: what RT gives the
    comparisons (speedups, agreement), ``missing``: what the records do not hold (of spec.RECORD_FIELDS),
    whose figures become None."""
    given = family_input(method, results, streams, ne_tokenizer, rt, scorers)
    figures = combine(
        [
            Figures(
                counts={"streams": len(results), "steps": sum(len(r.steps) for r in results)},
                rows=[{"stream": r.stream_id, "steps": len(r.steps)} for r in results],
            ),
            *(family.figures(given) for family in FAMILIES),
        ],
        len(results),
    )
    drop_missing(figures, missing)
    if missing:
        figures.counts["not_available"] = sorted(missing)
    return MethodReport(
        method=method,
        metrics=figures.metrics,
        per_stream=figures.rows,
        extra=figures.counts,
        spans=figures.spans,
        learned_inputs=figures.learned_inputs,
    )


def drop_missing(figures: Figures, missing: frozenset[str]) -> None:
    """Set to None every figure that needs a field the records lack (``missing``, of spec.RECORD_FIELDS):
    what the metric records and the families say they need (simul.metrics.registry.needing)."""
    unknown = missing - set(RECORD_FIELDS)
    if unknown:
        raise ValueError(f"not fields of the step records: {', '.join(sorted(unknown))}")
    for kind in missing:
        for name in needing(kind):
            for figure in (figures.metrics, figures.counts, *figures.rows):
                if name in figure:
                    figure[name] = None


def rt_reference(report: MethodReport, results: Sequence[StreamResult]) -> RtReference:
    """RT's side of the other methods' comparisons: its results, and its TPS figures as its own report has
    them."""
    return RtReference(
        results={r.stream_id: r for r in results},
        tps=report.metrics["tps"],
        tps_e2e=report.metrics["tps_e2e"],
    )


def reports_for(
    methods: Sequence[Method],
    results: Mapping[str, list[StreamResult]],
    streams: Mapping[str, Stream],
    ne_tokenizer: str,
    missing: frozenset[str] = frozenset(),
    scorers: Scorers = NO_SCORERS,
) -> list[MethodReport]:
    """Reports for every method, in order; the others are compared with RT without mask-k (else any RT),
    whose report is made first."""
    rt_key = baseline_key(methods)
    order = sorted(methods, key=lambda m: m.key != rt_key)  # RT first, the others in their order
    reports: dict[str, MethodReport] = {}
    rt: RtReference | None = None
    for method in order:
        report = method_report(
            method, results[method.key], streams, ne_tokenizer, rt=rt, missing=missing, scorers=scorers
        )
        reports[method.key] = report
        if method.key == rt_key:
            rt = rt_reference(report, results[method.key])
    return [reports[m.key] for m in methods]

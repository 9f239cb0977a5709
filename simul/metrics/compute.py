"""Turn per-step records into the figures of a run, one method at a time.

Everything here is computed from what a run directory stores (step records and streams), so that
`simul score` recomputes exactly what `simul eval` reported. Each metric family computes its own figures
(simul.metrics.families); :func:`method_report` puts them together and marks what the records lack.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simul.decoding.records import StreamResult
from simul.metrics.delays import stream_delays
from simul.metrics.families.acceptance import acceptance_figures
from simul.metrics.families.degeneracy import degeneracy_figures
from simul.metrics.families.drafters import drafter_figures
from simul.metrics.families.figures import Figures, RtReference, combine
from simul.metrics.families.latency import latency_figures
from simul.metrics.families.longform import DEFAULT_RESEGMENT, longform_figures
from simul.metrics.families.quality import quality_figures
from simul.metrics.families.speed import speed_figures
from simul.metrics.families.stability import stability_figures
from simul.metrics.learned import SegmentScorer
from simul.metrics.registry import FAMILIES, METRICS
from simul.metrics.spec import FamilyInput
from simul.request.methods import Method
from simul.streams.format import Stream

# What a run lacks when its outputs came from another system (``simul ingest``), and the figures that need
# it: those are reported as not available (None), never as zero.
MISSING_FIELDS: dict[str, tuple[str, ...]] = {
    "draft": ("ad", "ao", "ideal_speedup", "efficiency", "row_cost", "agreement_rt"),
    "model_tokens": (
        "tps",
        "tps_e2e",
        "speedup",
        "speedup_e2e",
        "ao",
        "ideal_speedup",
        "efficiency",
        "row_cost",
        "agreement_rt",
    ),
    "timing": (
        "tps",
        "tps_e2e",
        "speedup",
        "speedup_e2e",
        "efficiency",
        "row_cost",
        "p50_update_ms",
        "p95_update_ms",
        "latency_ca",
        "al_ca",
        "dal_ca",
        "yaal_ca",
    ),
    # append-only outputs (SimulEval's instances.log) cannot show an erasure
    "revisions": ("ne", "ne_display", "ne_mean", "ne_display_mean"),
}
_MISSING_COUNTS: dict[str, tuple[str, ...]] = {
    "draft": ("draft_tokens", "accepted_tokens", "resync_drafted", "resync_accepted", "frozen_steps"),
    "model_tokens": ("output_tokens", "verify_rows", "decode_passes"),
    "timing": (
        "gen_seconds",
        "prompt_seconds",
        "prompt_eval_seconds",
        "verify_seconds",
        "decode_seconds",
    ),
    "revisions": ("erased_tokens", "erased_display_tokens"),
}
# per_stream.jsonl's columns of the same kinds
_MISSING_COLUMNS: dict[str, tuple[str, ...]] = {
    "draft": ("accepted",),
    "model_tokens": ("output_tokens",),
    "revisions": ("erased", "erased_display"),
}


@dataclass
class MethodReport:
    """A method's figures plus its per-stream figures (for paired comparisons)."""

    method: Method
    metrics: dict[str, float | None]
    per_stream: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    spans: list[dict[str, Any]] = field(default_factory=list)  # XCOMET's error spans per segment


@dataclass(frozen=True)
class Scorers:
    """What quality is scored with beyond sacrebleu: the learned segment scorers (simul.metrics.learned:
    COMET, XCOMET, BLEURT; ``comet_reason`` says why there is no COMET-family one) and, for runs of whole
    talks, the re-segmenter (simul.metrics.families.longform)."""

    learned: tuple[SegmentScorer, ...] = ()
    comet_reason: str | None = None
    resegment: str = DEFAULT_RESEGMENT


def method_report(
    method: Method,
    results: Sequence[StreamResult],
    streams: Mapping[str, Stream],
    ne_tokenizer: str,
    rt: RtReference | None = None,
    missing: frozenset[str] = frozenset(),
    scorers: Scorers = Scorers(),
) -> MethodReport:
    """Every figure of one method over its stream results, family by family; ``rt``: what RT gives the
    comparisons (speedups, agreement), ``missing``: what the records do not hold (keys of MISSING_FIELDS),
    whose figures become None.

    A run with a talk (a long-form stream) has no sentence latencies or degeneracy diagnostics but the cost
    along its talks; when every stream is a talk, its quality and latency are scored on the talks
    re-segmented onto their reference segments (simul.metrics.families.longform)."""
    talks = any(streams[r.stream_id].longform for r in results)
    whole_talks = bool(results) and all(streams[r.stream_id].longform for r in results)
    delays = None if talks else [stream_delays(r, streams[r.stream_id]) for r in results]
    figures = combine(
        [
            Figures(
                counts={"streams": len(results), "steps": sum(len(r.steps) for r in results)},
                rows=[{"stream": r.stream_id, "steps": len(r.steps)} for r in results],
            ),
            quality_figures(results, streams, scorers.learned, whole_talks),
            stability_figures(results, ne_tokenizer),
            acceptance_figures(method, results, rt),
            drafter_figures(results),
            speed_figures(method, results, rt),
            latency_figures(results, streams, delays),
            degeneracy_figures(delays),
            longform_figures(
                results,
                streams,
                talks=talks,
                whole_talks=whole_talks,
                learned=scorers.learned,
                comet_reason=scorers.comet_reason,
                resegment=scorers.resegment,
            ),
            *(family.figures(FamilyInput(results, streams, ne_tokenizer)) for family in FAMILIES),
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
    )


def drop_missing(figures: Figures, missing: frozenset[str]) -> None:
    """Set to None what needs a field the records lack (``missing``: keys of MISSING_FIELDS)."""
    for kind in missing:
        for name, info in METRICS.items():  # what each metric's record says it needs
            if kind in info.needs:
                for figure in (figures.metrics, *figures.rows):
                    if name in figure:
                        figure[name] = None
        for names, figure in (
            (MISSING_FIELDS, figures.metrics),
            (_MISSING_COUNTS, figures.counts),
            *((_MISSING_COLUMNS, row) for row in figures.rows),
        ):
            for name in names.get(kind, ()):
                if name in figure:
                    figure[name] = None


def rt_reference(
    method: Method, results: Sequence[StreamResult], missing: frozenset[str] = frozenset()
) -> RtReference:
    """RT's side of the other methods' comparisons: its results, and its TPS figures as its own report has
    them."""
    speed = speed_figures(method, results, None)
    drop_missing(speed, missing)
    return RtReference(
        results={r.stream_id: r for r in results},
        tps=speed.metrics["tps"],
        tps_e2e=speed.metrics["tps_e2e"],
    )


def reports_for(
    methods: Sequence[Method],
    results: Mapping[str, list[StreamResult]],
    streams: Mapping[str, Stream],
    ne_tokenizer: str,
    missing: frozenset[str] = frozenset(),
    scorers: Scorers = Scorers(),
) -> list[MethodReport]:
    """Reports for every method, in order; the others are compared with RT without mask-k (else any RT)."""
    by_key = {m.key: m for m in methods}
    rt_key = next((m.key for m in methods if m.name == "rt" and not m.mask_k), None)
    rt_key = rt_key or next((m.key for m in methods if m.name == "rt"), None)
    rt = None if rt_key is None else rt_reference(by_key[rt_key], results[rt_key], missing)
    return [
        method_report(
            method,
            results[method.key],
            streams,
            ne_tokenizer,
            rt=None if method.key == rt_key else rt,
            missing=missing,
            scorers=scorers,
        )
        for method in methods
    ]

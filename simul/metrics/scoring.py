"""Score a set of decoded streams: every metric of every method, COMET included when available.

Used by `simul eval` at the end of a run and by `simul score` on a run directory, so both give the same
numbers from the same records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simul.decoding.records import StreamResult
from simul.metrics.comet import CometScorer
from simul.metrics.compute import LONGFORM_LATENCIES, MethodReport, reports_for
from simul.metrics.registry import METRICS
from simul.request.methods import Method
from simul.streams.format import Stream

DEFAULT_RESEGMENT = "softsegmenter"
RESEGMENTERS = ("softsegmenter", "mwer")


@dataclass
class Scored:
    reports: list[MethodReport]
    signatures: dict[str, Any]
    comet: dict[str, Any] = field(default_factory=dict)

    def methods_json(self) -> list[dict[str, Any]]:
        return [
            {
                **r.method.to_json(),
                "key": r.method.key,
                "label": r.method.label,
                "metrics": r.metrics,
                "counts": {k: v for k, v in r.extra.items() if k not in ("signatures",)},
            }
            for r in self.reports
        ]

    def per_stream_rows(self) -> list[dict[str, Any]]:
        return [{"method": r.method.key, **row} for r in self.reports for row in r.per_stream]


def not_available(run: Mapping[str, Any]) -> frozenset[str]:
    """What a run's records lack (set by `simul ingest` in ``config.ingest.not_available``)."""
    ingest = run.get("config", {}).get("ingest") or {}
    return frozenset(str(x) for x in ingest.get("not_available", ()))


def higher_is_better() -> dict[str, bool]:
    return {name: info.higher_is_better for name, info in METRICS.items() if info.directional}


def score(
    methods: Sequence[Method],
    results: Mapping[str, list[StreamResult]],
    streams: Mapping[str, Stream],
    ne_tokenizer: str,
    comet: CometScorer | None,
    comet_reason: str | None,
    missing: frozenset[str] = frozenset(),
    resegment: str = DEFAULT_RESEGMENT,
) -> Scored:
    """Every metric of every method. Long-form runs (whole talks) are scored as IWSLT 2026 does: the talk's
    output re-segmented onto its reference segments (``resegment``: softsegmenter or mwer), then BLEU, chrF
    and COMET per segment, and the long-form latencies (simul.metrics.longform)."""
    reports = reports_for(methods, results, streams, ne_tokenizer, missing)
    signatures: dict[str, Any] = {"ne_tokenizer": ne_tokenizer}
    for report in reports:
        for name, sig in report.extra.get("signatures", {}).items():
            signatures.setdefault(name, sig)
    comet_info: dict[str, Any] = {"available": comet is not None, "reason": comet_reason}
    longform = [r for r in reports if _is_longform(results[r.method.key], streams)]
    for report in longform:
        _score_longform(report, results[report.method.key], streams, comet, comet_reason, resegment)
        for name, sig in report.extra["longform"]["signatures"].items():
            signatures.setdefault(f"longform_{name}", sig)
    if comet is not None:
        for report in reports:
            if report in longform:
                continue
            rs = results[report.method.key]
            with_refs = [r for r in rs if streams[r.stream_id].reference is not None]
            if not with_refs:
                continue
            scores = comet.score(
                [streams[r.stream_id].final_source for r in with_refs],
                [r.final_output for r in with_refs],
                [streams[r.stream_id].reference or "" for r in with_refs],
            )
            report.metrics["comet"] = round(scores.system, 4)
            seg = {r.stream_id: s for r, s in zip(with_refs, scores.segments, strict=True)}
            for row in report.per_stream:
                value = seg.get(row["stream"])
                row["comet"] = None if value is None else round(value, 4)
            signatures["comet"] = scores.signature
        comet_info.update({"model": comet.model, "version": comet.version, "batch_size": comet.batch_size})
        checkpoint = getattr(comet, "checkpoint", None)  # what the model name resolved to (comet.py)
        if checkpoint is not None:
            comet_info["checkpoint"] = checkpoint
    else:
        for report in reports:
            if report in longform:
                continue
            for row in report.per_stream:
                row["comet"] = None
    return Scored(reports=reports, signatures=signatures, comet=comet_info)


def _is_longform(results: Sequence[StreamResult], streams: Mapping[str, Stream]) -> bool:
    return bool(results) and all(streams[r.stream_id].longform for r in results)


def _score_longform(
    report: MethodReport,
    results: Sequence[StreamResult],
    streams: Mapping[str, Stream],
    comet: CometScorer | None,
    comet_reason: str | None,
    resegment: str,
) -> None:
    """Resegmented BLEU/chrF/COMET and the long-form latencies of one method's talks, into ``report``.

    The whole talk's BLEU and chrF against its joined references stay in the counts (``bleu_talk``,
    ``chrf_talk``); per talk, ``per_stream`` gets every segment's sentence chrF, COMET and latencies."""
    from simul.metrics.longform import score_talks, talk_from_records

    talks = [talk_from_records(streams[r.stream_id], r.steps) for r in results]
    scores = score_talks(talks, resegment=resegment, comet=comet, comet_unavailable=comet_reason)
    metrics = report.metrics
    report.extra["bleu_talk"], report.extra["chrf_talk"] = metrics["bleu"], metrics["chrf"]
    metrics["bleu"] = round(scores.bleu, 4)
    metrics["chrf"] = round(scores.chrf, 4)
    metrics["comet"] = None if scores.comet is None else round(scores.comet, 4)
    for name in LONGFORM_LATENCIES:
        value = scores.latency.get(name)
        metrics[name] = None if value is None else round(value, 3)
    summary = scores.to_json()
    segments = summary.pop("per_segment")
    summary.pop("latency")
    report.extra["longform"] = summary
    report.extra.setdefault("signatures", {}).update(
        {"bleu": scores.signatures.get("bleu", ""), "chrf": scores.signatures.get("chrf", "")}
    )
    by_talk: dict[str, list[dict[str, Any]]] = {}
    for seg in segments:
        by_talk.setdefault(seg.pop("talk"), []).append(seg)
    for row in report.per_stream:
        row["segments"] = by_talk.get(row["stream"], [])
        row["comet"] = None

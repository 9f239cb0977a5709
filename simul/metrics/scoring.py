"""Score a set of decoded streams: every metric of every method, the learned ones (COMET, XCOMET, BLEURT:
simul.metrics.learned) with the scorers given.

Used by `simul eval` at the end of a run and by `simul score` on a run directory, so both give the same
numbers from the same records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simul.decoding.records import StreamResult
from simul.metrics.compute import MethodReport, Scorers, reports_for
from simul.metrics.families.longform import DEFAULT_RESEGMENT, RESEGMENTERS
from simul.metrics.learned import SegmentScorer
from simul.metrics.registry import METRICS
from simul.request.methods import Method
from simul.streams.format import Stream

__all__ = ["DEFAULT_RESEGMENT", "RESEGMENTERS", "Scored", "higher_is_better", "not_available", "score"]


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

    def error_span_rows(self) -> list[dict[str, Any]]:
        """XCOMET's error spans, a line per method and segment (empty when the run has no XCOMET)."""
        return [{"method": r.method.key, **line} for r in self.reports for line in r.spans]

    def learned_inputs(self) -> dict[str, dict[str, str]]:
        """Learned metric -> method key -> the SHA-256 of what its scorer was given for that method
        (simul.metrics.learned.inputs_sha256; a method it scored nothing of has none): run.json's
        ``learned_inputs``, which `simul score --update` checks before it reuses a figure
        (simul.runs.learned_reuse)."""
        inputs: dict[str, dict[str, str]] = {}
        for report in self.reports:
            for kind, digest in report.learned_inputs.items():
                inputs.setdefault(kind, {})[report.method.key] = digest
        return inputs

    def attach(self, run: dict[str, Any]) -> None:
        """Put the figures in ``run`` (run.json): ``signatures``, the ``comet`` block, each method's row
        (``methods``) and ``learned_inputs`` (left out when no learned metric scored anything)."""
        run["signatures"] = self.signatures
        run["comet"] = self.comet
        run["methods"] = self.methods_json()
        inputs = self.learned_inputs()
        if inputs:
            run["learned_inputs"] = inputs
        else:
            run.pop("learned_inputs", None)


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
    learned: Sequence[SegmentScorer | None],
    comet_reason: str | None,
    missing: frozenset[str] = frozenset(),
    resegment: str = DEFAULT_RESEGMENT,
) -> Scored:
    """Every metric of every method; ``learned``: the learned scorers (simul.metrics.learned: COMET, XCOMET,
    BLEURT; None entries are skipped), ``comet_reason`` why there is no COMET-family one. Long-form runs
    (whole talks) are scored as IWSLT 2026 does: the talk's output re-segmented onto its reference segments
    (``resegment``: softsegmenter or mwer), then BLEU, chrF and the learned metrics per segment, and the
    long-form latencies (simul.metrics.longform). The run's ``comet`` block describes its COMET-family scorer
    (COMET before XCOMET when there are both)."""
    scorers_used = tuple(s for s in learned if s is not None)
    scorers = Scorers(learned=scorers_used, comet_reason=comet_reason, resegment=resegment)
    reports = reports_for(methods, results, streams, ne_tokenizer, missing, scorers)
    signatures: dict[str, Any] = {"ne_tokenizer": ne_tokenizer}
    for report in reports:
        for name, sig in report.extra.get("signatures", {}).items():
            signatures.setdefault(name, sig)
    for report in reports:
        for name, sig in report.extra.get("longform", {}).get("signatures", {}).items():
            signatures.setdefault(f"longform_{name}", sig)
    comet = next((s for s in scorers_used if s.kind in ("comet", "xcomet")), None)
    comet_info: dict[str, Any] = {"available": comet is not None, "reason": comet_reason}
    if comet is not None:
        comet_info.update(
            {
                "model": comet.model,
                "version": comet.version,
                "batch_size": comet.batch_size,
                "kind": comet.kind,
            }
        )
        checkpoint = getattr(comet, "checkpoint", None)  # what the model name resolved to (comet.py)
        if checkpoint is not None:
            comet_info["checkpoint"] = checkpoint
    return Scored(reports=reports, signatures=signatures, comet=comet_info)

"""The long-form family, for runs of whole talks (long-form streams):

* the cost of updates along the talks (simul.metrics.talk_cost): per run and per talk, and its growth
  (``cost_growth``), for any run with a talk;
* when every stream is a talk, quality and latency as IWSLT 2026 scores them (simul.metrics.longform): each
  talk's output re-segmented onto its reference segments (``resegment``: softsegmenter or mwer), then BLEU,
  chrF and each learned metric (simul.metrics.learned: COMET, XCOMET, BLEURT) over the segments (the run's
  ``bleu``, ``chrf``, ``comet``, ``xcomet``, ``bleurt``) and LongYAAL, LongLAAL, LongAL, LongDAL,
  computation-unaware and -aware. The summary goes to the counts (``longform``), and per talk each segment's
  hypothesis, sentence chrF, learned scores and latencies (``segments``); the talk itself gets no learned
  score. XCOMET's error spans of each segment go to the run's error-span lines
  (simul.metrics.families.quality.xcomet_spans), with the segment's index.

Other runs get None for these metrics, so that every run has the keys."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from simul.decoding.records import StreamResult
from simul.metrics.family import Family, FamilyInput, Figures, combine, rounded
from simul.metrics.learned import SegmentScorer
from simul.metrics.spec import MetricInfo
from simul.metrics.talk_cost import talk_cost
from simul.streams.format import Stream

if TYPE_CHECKING:  # the long-form scorer (OmniSTEval's SoftSegmenter) is imported only for runs of talks
    from simul.metrics.longform.scoring import LongformScores

DEFAULT_RESEGMENT = "softsegmenter"
RESEGMENTERS = ("softsegmenter", "mwer")


def longform_figures(
    results: Sequence[StreamResult],
    streams: Mapping[str, Stream],
    *,
    talks: bool,
    whole_talks: bool,
    learned: Sequence[SegmentScorer] = (),
    comet_reason: str | None = None,
    resegment: str = DEFAULT_RESEGMENT,
) -> Figures:
    """``talks``: some stream is a talk (the talk cost); ``whole_talks``: every stream is (re-segmented
    scoring; ``learned``: the learned scorers, simul.metrics.learned, and ``comet_reason`` why there is no
    COMET-family one)."""
    cost = _talk_cost(results) if talks else Figures(metrics={"cost_growth": None})
    if whole_talks:
        scored = _resegmented(results, streams, learned, comet_reason, resegment)
    else:
        scored = Figures(metrics=dict.fromkeys(_latencies()))
    return combine([cost, scored], len(results))


def _talk_cost(results: Sequence[StreamResult]) -> Figures:
    whole = talk_cost([r.steps for r in results])
    return Figures(
        metrics={"cost_growth": whole["cost_growth"]},
        counts={"talk_cost": whole},
        rows=[{"talk_cost": talk_cost([r.steps])} for r in results],
    )


def _resegmented(
    results: Sequence[StreamResult],
    streams: Mapping[str, Stream],
    learned: Sequence[SegmentScorer],
    comet_reason: str | None,
    resegment: str,
) -> Figures:
    from simul.metrics.longform import score_talks, talk_from_records

    talks = [talk_from_records(streams[r.stream_id], r.steps) for r in results]
    scores = score_talks(talks, resegment=resegment, learned=learned, comet_unavailable=comet_reason)
    metrics: dict[str, float | None] = {
        "bleu": round(scores.bleu, 4),
        "chrf": round(scores.chrf, 4),
        "comet": None,
        **{kind: None if value is None else round(value, 4) for kind, value in scores.learned.items()},
    }
    for name in _latencies():
        value = scores.latency.get(name)
        metrics[name] = None if value is None else round(value, 3)
    summary = scores.to_json()
    segments = summary.pop("per_segment")
    summary.pop("latency")
    by_talk: dict[str, list[dict[str, Any]]] = {}
    for seg in segments:
        by_talk.setdefault(seg.pop("talk"), []).append(seg)
    rows: list[dict[str, Any]] = [{"segments": by_talk.get(r.stream_id, []), "comet": None} for r in results]
    counts: dict[str, Any] = {"longform": summary}
    spans: list[dict[str, Any]] = []
    if "xcomet" in scores.learned:
        for row in rows:
            row["xcomet"] = None
        spans = _segment_spans(scores)
        counts["xcomet_truncated"] = summary.get("xcomet_truncated", 0)
        counts["xcomet_max_tokens"] = scores.learned_counts.get("xcomet_max_tokens")
    return Figures(
        metrics=metrics, counts=counts, rows=rows, spans=spans, learned_inputs=dict(scores.learned_inputs)
    )


def _segment_spans(scores: LongformScores) -> list[dict[str, Any]]:
    """The error-span lines of the re-segmented segments scored by XCOMET (simul.metrics.families.quality's
    format: stream, segment index, hypothesis, score, spans, truncation, tokens)."""
    return [
        {
            "stream": seg.talk,
            "segment": seg.index,
            "hypothesis": seg.hypothesis,
            "xcomet": rounded(seg.learned.get("xcomet"), 4),
            **seg.detail.to_json(),
        }
        for seg in scores.per_segment
        if seg.detail is not None
    ]


def _figures(given: FamilyInput) -> Figures:
    scorers = given.scorers
    return longform_figures(
        given.results,
        given.streams,
        talks=given.talks,
        whole_talks=given.whole_talks,
        learned=scorers.learned,
        comet_reason=scorers.comet_reason,
        resegment=scorers.resegment or DEFAULT_RESEGMENT,
    )


def _latencies() -> tuple[str, ...]:
    """run.json names of the long-form latencies (simul.metrics.longform.latency's keys)."""
    return tuple(spec.name for spec in FAMILY.specs if spec.name != "cost_growth")


# long-form runs (whole talks), OmniSTEval's definitions (simul.metrics.longform.latency)
FAMILY = Family(
    name="longform",
    specs=(
        MetricInfo(
            "long_yaal",
            False,
            "LongYAAL",
            "long-form YAAL over re-segmented talks (IWSLT 2026)",
            fmt=".0f",
            ca="ca_long_yaal",
        ),
        MetricInfo(
            "long_laal",
            False,
            "LongLAAL",
            "long-form LAAL (= StreamLAAL) over re-segmented talks",
            ca="ca_long_laal",
        ),
        MetricInfo("long_al", False, "LongAL", "long-form AL over re-segmented talks", ca="ca_long_al"),
        MetricInfo("long_dal", False, "LongDAL", "long-form DAL over re-segmented talks", ca="ca_long_dal"),
        MetricInfo(
            "ca_long_yaal", False, "LongYAAL CA", "computation-aware LongYAAL", timing=True, fmt=".0f"
        ),
        MetricInfo("ca_long_laal", False, "LongLAAL CA", "computation-aware LongLAAL", timing=True),
        MetricInfo("ca_long_al", False, "LongAL CA", "computation-aware LongAL", timing=True),
        MetricInfo("ca_long_dal", False, "LongDAL CA", "computation-aware LongDAL", timing=True),
        MetricInfo(
            "cost_growth",
            False,
            "Growth",
            "long-form: mean update time in the talks' last quarter / first quarter (metrics.talk_cost)",
            timing=True,
        ),
    ),
    figures=_figures,
)

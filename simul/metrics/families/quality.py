"""The quality family: corpus BLEU and chrF of the final outputs against every reference
(simul.metrics.quality, sacrebleu), per stream the sentence chrF, and each learned metric the run is scored
with (simul.metrics.learned: COMET, XCOMET, BLEURT) over (complete source, final output, first reference)
triples: the system score and each stream's segment score under the scorer's ``kind``, its counts
(``xcomet_truncated`` with the model's limit ``xcomet_max_tokens``, ``bleurt_truncated``), and XCOMET's error
spans, truncation and token counts per stream as error-span lines (:func:`xcomet_spans`).

Streams without a reference are left out of the corpus scores (``references`` in the counts says on how many
streams they were computed) and get None per stream. For a run of whole talks scored after re-segmentation
(``whole_talks``, simul.metrics.families.longform), the corpus BLEU and chrF of the talks against their
joined references stay in the counts (``bleu_talk``, ``chrf_talk``): the run's BLEU, chrF and COMET are the
re-segmented ones."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simul.decoding.records import StreamResult
from simul.metrics.family import Family, FamilyInput, Figures, rounded
from simul.metrics.learned import SegmentScorer, SegmentScores, inputs_sha256
from simul.metrics.quality import corpus_bleu, corpus_chrf, sentence_chrf
from simul.metrics.spec import MetricInfo
from simul.streams.format import Stream

# the learned metrics of --comet-model: a run always has a comet figure (None without a model), and a
# per-stream comet column when it is scored with one of them
COMET_FAMILY = ("comet", "xcomet")


def quality_figures(
    results: Sequence[StreamResult],
    streams: Mapping[str, Stream],
    learned: Sequence[SegmentScorer] = (),
    whole_talks: bool = False,
) -> Figures:
    """``learned``: the learned segment scorers (simul.metrics.learned) the run is scored with, each of
    whose figures goes under its ``kind``."""
    with_ref = [r for r in results if streams[r.stream_id].references]
    bleu = chrf = None
    signatures: dict[str, str] = {}
    if with_ref:
        hyps = [r.final_output for r in with_ref]
        refs = [streams[r.stream_id].references for r in with_ref]
        b = corpus_bleu(hyps, refs, streams[results[0].stream_id].tgt)
        c = corpus_chrf(hyps, refs)
        bleu, chrf = b.score, c.score
        signatures = {"bleu": b.signature, "chrf": c.signature}
    rows: list[dict[str, Any]] = [
        {
            "chrf": round(sentence_chrf(r.final_output, streams[r.stream_id].references), 4)
            if streams[r.stream_id].reference
            else None
        }
        for r in results
    ]
    counts: dict[str, Any] = {"references": len(with_ref), "signatures": signatures}
    if whole_talks:
        counts.update(bleu_talk=rounded(bleu, 4), chrf_talk=rounded(chrf, 4))
        return Figures(counts=counts, rows=rows)
    metrics = {"comet": None, "bleu": rounded(bleu, 4), "chrf": rounded(chrf, 4)}
    figures = Figures(metrics=metrics, counts=counts, rows=rows)
    if not any(s.kind in COMET_FAMILY for s in learned):
        for row in rows:
            row["comet"] = None
    for scorer in learned:
        _add_learned(scorer, results, streams, figures, signatures)
    return figures


def _add_learned(
    scorer: SegmentScorer,
    results: Sequence[StreamResult],
    streams: Mapping[str, Stream],
    figures: Figures,
    signatures: dict[str, str],
) -> None:
    """A learned metric (COMET, XCOMET, BLEURT) of the final outputs over the streams with a reference
    (first reference; complete source): per stream and the mean, its counts, XCOMET's error spans, and the
    SHA-256 of the inputs (``learned_inputs``). No stream with a reference: no figure (a COMET-family scorer
    adds no per-stream column either)."""
    kind = scorer.kind
    scored = [(i, r) for i, r in enumerate(results) if streams[r.stream_id].reference is not None]
    if kind not in COMET_FAMILY:  # a metric of its own option (BLEURT): its column in every row
        for row in figures.rows:
            row[kind] = None
    if not scored:
        return
    sources = [streams[r.stream_id].final_source for _, r in scored]
    outputs = [r.final_output for _, r in scored]
    references = [streams[r.stream_id].reference or "" for _, r in scored]
    scores = scorer.score(sources, outputs, references)
    figures.learned_inputs[kind] = inputs_sha256(scorer.needs_source, sources, outputs, references)
    figures.metrics[kind] = round(scores.system, 4)
    signatures[kind] = scores.signature
    for row in figures.rows:
        row.setdefault("comet", None)
        row[kind] = None
    for (i, _), value in zip(scored, scores.segments, strict=True):
        figures.rows[i][kind] = round(value, 4)
    figures.counts.update(scores.counts())
    if scores.details is not None:
        hyps = [(r.stream_id, None, r.final_output) for _, r in scored]
        figures.spans.extend(xcomet_spans(hyps, scores))


def xcomet_spans(
    segments: Sequence[tuple[str, int | None, str]], scores: SegmentScores
) -> list[dict[str, Any]]:
    """The error-span lines of scored segments, each (stream id, segment index or None, hypothesis): the
    hypothesis the spans' character offsets refer to, the segment's XCOMET score, its spans, whether the
    model's input was cut, and the token counts."""
    details = scores.details or []
    return [
        {
            "stream": stream,
            "segment": segment,
            "hypothesis": hypothesis,
            "xcomet": round(value, 4),
            **detail.to_json(),
        }
        for (stream, segment, hypothesis), value, detail in zip(
            segments, scores.segments, details, strict=True
        )
    ]


def _figures(given: FamilyInput) -> Figures:
    return quality_figures(given.results, given.streams, given.scorers.learned, given.whole_talks)


# the learned metrics' records come with their scorers (simul.metrics.registry.LEARNED)
FAMILY = Family(
    name="quality",
    specs=(
        MetricInfo(
            "chrf",
            True,
            "chrF",
            "corpus chrF of the final outputs (sacrebleu)",
            fmt=".1f",
            quality=True,
            corpus_resampled=True,
            rank_auto=3,
        ),
        MetricInfo(
            "bleu",
            True,
            "BLEU",
            "corpus BLEU of the final outputs (sacrebleu)",
            fmt=".1f",
            quality=True,
            corpus_resampled=True,
        ),
    ),
    figures=_figures,
)

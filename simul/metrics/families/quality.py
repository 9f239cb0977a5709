"""The quality family: corpus BLEU and chrF of the final outputs against every reference
(simul.metrics.quality, sacrebleu), per stream the sentence chrF, and COMET over (complete source, final
output, first reference) triples (simul.metrics.comet): the system score and each stream's segment score,
under ``comet``, or under ``xcomet`` for an XCOMET model, whose error spans, truncation and token counts per
stream go to the error-span lines (:func:`xcomet_spans`) and the number of truncated segments to the counts
(``xcomet_truncated``, with the model's limit ``xcomet_max_tokens``).

Streams without a reference are left out of the corpus scores (``references`` in the counts says on how many
streams they were computed) and get None per stream. For a run of whole talks scored after re-segmentation
(``whole_talks``, simul.metrics.families.longform), the corpus BLEU and chrF of the talks against their
joined references stay in the counts (``bleu_talk``, ``chrf_talk``): the run's BLEU, chrF and COMET are the
re-segmented ones."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simul.decoding.records import StreamResult
from simul.metrics.bleurt import BleurtScorer
from simul.metrics.comet_model import CometLike, CometScores
from simul.metrics.families.figures import Figures, rounded
from simul.metrics.quality import corpus_bleu, corpus_chrf, sentence_chrf
from simul.streams.format import Stream


def quality_figures(
    results: Sequence[StreamResult],
    streams: Mapping[str, Stream],
    comet: CometLike | None,
    whole_talks: bool = False,
    bleurt: BleurtScorer | None = None,
) -> Figures:
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
    if comet is None:
        for row in rows:
            row["comet"] = None
    else:
        _add_comet(comet, results, streams, figures, signatures)
    if bleurt is not None:
        _add_bleurt(bleurt, results, streams, figures, signatures)
    return figures


def _add_bleurt(
    bleurt: BleurtScorer,
    results: Sequence[StreamResult],
    streams: Mapping[str, Stream],
    figures: Figures,
    signatures: dict[str, str],
) -> None:
    """BLEURT (simul.metrics.bleurt) of the final outputs against the first reference, per stream and the
    mean; pairs cut at the model's length are counted (``bleurt_truncated``)."""
    scored = [(i, r) for i, r in enumerate(results) if streams[r.stream_id].reference is not None]
    for row in figures.rows:
        row["bleurt"] = None
    if not scored:
        return
    scores = bleurt.score(
        [streams[r.stream_id].reference or "" for _, r in scored], [r.final_output for _, r in scored]
    )
    figures.metrics["bleurt"] = round(scores.system, 4)
    signatures["bleurt"] = scores.signature
    figures.counts["bleurt_truncated"] = sum(scores.truncated)
    for (i, _), value in zip(scored, scores.segments, strict=True):
        figures.rows[i]["bleurt"] = round(value, 4)


def _add_comet(
    comet: CometLike,
    results: Sequence[StreamResult],
    streams: Mapping[str, Stream],
    figures: Figures,
    signatures: dict[str, str],
) -> None:
    """COMET (or XCOMET) over the streams with a reference. None of them: no figure, and no per-stream
    column."""
    scored = [(i, r) for i, r in enumerate(results) if streams[r.stream_id].reference is not None]
    if not scored:
        return
    scores = comet.score(
        [streams[r.stream_id].final_source for _, r in scored],
        [r.final_output for _, r in scored],
        [streams[r.stream_id].reference or "" for _, r in scored],
    )
    kind = scores.kind
    figures.metrics[kind] = round(scores.system, 4)
    signatures[kind] = scores.signature
    for row in figures.rows:
        row.update(dict.fromkeys(("comet", kind)))
    for (i, _), value in zip(scored, scores.segments, strict=True):
        figures.rows[i][kind] = round(value, 4)
    if scores.details is not None:
        hyps = [(r.stream_id, None, r.final_output) for _, r in scored]
        figures.spans.extend(xcomet_spans(hyps, scores))
        figures.counts.update(xcomet_counts(scores))


def xcomet_spans(
    segments: Sequence[tuple[str, int | None, str]], scores: CometScores
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


def xcomet_counts(scores: CometScores) -> dict[str, Any]:
    """How many segments' input XCOMET cut at its token limit, and the limit."""
    return {
        "xcomet_truncated": sum(1 for d in scores.details or [] if d.truncated),
        "xcomet_max_tokens": scores.max_tokens,
    }

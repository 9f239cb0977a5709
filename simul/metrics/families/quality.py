"""The quality family: corpus BLEU and chrF of the final outputs against every reference
(simul.metrics.quality, sacrebleu), per stream the sentence chrF, and COMET over (complete source, final
output, first reference) triples (simul.metrics.comet): the system score and each stream's segment score.

Streams without a reference are left out of the corpus scores (``references`` in the counts says on how many
streams they were computed) and get None per stream. For a run of whole talks scored after re-segmentation
(``whole_talks``, simul.metrics.families.longform), the corpus BLEU and chrF of the talks against their
joined references stay in the counts (``bleu_talk``, ``chrf_talk``): the run's BLEU, chrF and COMET are the
re-segmented ones."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simul.decoding.records import StreamResult
from simul.metrics.comet import CometScorer
from simul.metrics.families.figures import Figures, rounded
from simul.metrics.quality import corpus_bleu, corpus_chrf, sentence_chrf
from simul.streams.format import Stream


def quality_figures(
    results: Sequence[StreamResult],
    streams: Mapping[str, Stream],
    comet: CometScorer | None,
    whole_talks: bool = False,
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
    if comet is None:
        for row in rows:
            row["comet"] = None
    else:
        _add_comet(comet, results, streams, metrics, signatures, rows)
    return Figures(metrics=metrics, counts=counts, rows=rows)


def _add_comet(
    comet: CometScorer,
    results: Sequence[StreamResult],
    streams: Mapping[str, Stream],
    metrics: dict[str, float | None],
    signatures: dict[str, str],
    rows: list[dict[str, Any]],
) -> None:
    """COMET over the streams with a reference. None of them: no COMET figure, and no per-stream column."""
    scored = [(i, r) for i, r in enumerate(results) if streams[r.stream_id].reference is not None]
    if not scored:
        return
    scores = comet.score(
        [streams[r.stream_id].final_source for _, r in scored],
        [r.final_output for _, r in scored],
        [streams[r.stream_id].reference or "" for _, r in scored],
    )
    metrics["comet"] = round(scores.system, 4)
    signatures["comet"] = scores.signature
    for row in rows:
        row["comet"] = None
    for (i, _), value in zip(scored, scores.segments, strict=True):
        rows[i]["comet"] = round(value, 4)

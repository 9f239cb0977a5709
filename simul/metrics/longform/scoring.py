"""Long-form scores of a set of talks, IWSLT 2026 style: the one entry point is :func:`score_talks`.

1. Each talk's final output is re-segmented onto its reference segments (``resegment.py``: SoftSegmenter
   by default, mWER optionally).
2. Quality over the re-segmented segments of every talk, as simul's short-form scoring does
   (``simul.metrics.quality``): corpus BLEU with the target language's sacrebleu tokenizer and corpus chrF,
   against every reference of each segment; per segment sentence chrF; each learned metric given
   (simul.metrics.learned: COMET, XCOMET, BLEURT) on (segment source, re-segmented hypothesis, first
   reference), under its ``kind``; XCOMET with each segment's error spans and truncation
   (``SegmentScore.detail``).
3. Latency on the same segments (``latency.py``): LongYAAL, LongLAAL (= StreamLAAL), LongAL, LongDAL, each
   computation-unaware (CU, ``delays``) and computation-aware (CA, ``elapsed``), in ms for timed talks and in
   source words for text documents; and IWSLT 2026's regime of CU LongYAAL.

Everything comes back in :class:`LongformScores`, whose ``to_json()`` is plain JSON, with the signatures
(tools and versions) that must match for two figures to be compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from simul.common.errors import SimulError
from simul.common.languages import get_language
from simul.metrics.comet_model import SegmentDetail
from simul.metrics.learned import SegmentScorer, inputs_sha256
from simul.metrics.longform.latency import corpus_latency, regime, segment_latencies
from simul.metrics.longform.resegment import resegment_talks
from simul.metrics.longform.talk import LongformTalk
from simul.metrics.quality import corpus_bleu, corpus_chrf, sentence_chrf

LATENCY_DEFINITIONS = "omnisteval-0.1.10"


@dataclass(frozen=True)
class SegmentScore:
    """One reference segment after re-segmentation."""

    talk: str
    index: int  # 0-based within the talk
    hypothesis: str
    references: tuple[str, ...]
    chrf: float
    units: int
    latency: dict[str, float | None]
    learned: dict[str, float | None] = field(default_factory=dict)  # each learned metric's segment score
    detail: SegmentDetail | None = None  # XCOMET's spans, truncation and token counts


@dataclass(frozen=True)
class LongformScores:
    """Corpus figures, per-segment figures and signatures of a long-form evaluation."""

    talks: int
    segments: int
    empty_segments: int
    bleu: float
    chrf: float
    latency: dict[str, float | None]  # long_yaal, ..., ca_long_dal
    latency_unit: str  # "ms" or "source words"
    regime: str  # low / high / over / n/a
    signatures: dict[str, str]
    per_segment: list[SegmentScore] = field(default_factory=list)
    comet_unavailable: str | None = None
    # each learned metric's system score (simul.metrics.learned; None: its scorer could not score the talks)
    learned: dict[str, float | None] = field(default_factory=dict)
    learned_counts: dict[str, Any] = field(default_factory=dict)  # what each scorer counts (SegmentScores)
    # each learned metric's SHA-256 of what its scorer was given (simul.metrics.learned.inputs_sha256)
    learned_inputs: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        learned: dict[str, Any] = {"comet": None, **self.learned}
        if "xcomet" in self.learned:
            learned["xcomet_truncated"] = sum(1 for s in self.per_segment if s.detail and s.detail.truncated)
        return {
            "talks": self.talks,
            "segments": self.segments,
            "empty_segments": self.empty_segments,
            "bleu": self.bleu,
            "chrf": self.chrf,
            **learned,
            "comet_unavailable": self.comet_unavailable,
            "latency": dict(self.latency),
            "latency_unit": self.latency_unit,
            "regime": self.regime,
            "signatures": dict(self.signatures),
            "per_segment": [
                {
                    "talk": s.talk,
                    "index": s.index,
                    "hypothesis": s.hypothesis,
                    "references": list(s.references),
                    "chrf": s.chrf,
                    "comet": None,
                    **{kind: s.learned.get(kind) for kind in self.learned},
                    "units": s.units,
                    "latency": dict(s.latency),
                }
                for s in self.per_segment
            ],
        }


def _check(talks: Sequence[LongformTalk], tgt: str | None) -> str:
    if not talks:
        raise SimulError("no long-form talks to score")
    langs = {get_language(t.tgt).short for t in talks}
    if len(langs) > 1:
        raise SimulError(
            f"talks into several target languages ({', '.join(sorted(langs))}); score them apart"
        )
    if tgt is not None and get_language(tgt).short not in langs:
        raise SimulError(f"the talks are into {langs.pop()}, not {tgt}")
    if len({t.timed for t in talks}) > 1:
        raise SimulError(
            "timed talks and untimed documents scored together; their latencies have no common unit"
        )
    for talk in talks:
        counts = {len(seg.references) for seg in talk.segments}
        if 0 in counts:
            raise SimulError(
                f"talk {talk.id!r} has a segment without a reference; long-form scoring needs one"
            )
    return talks[0].tgt


def score_talks(
    talks: Sequence[LongformTalk],
    tgt: str | None = None,
    resegment: str = "softsegmenter",
    learned: Sequence[SegmentScorer] = (),
    *,
    comet_unavailable: str | None = None,
    lang: str | None = None,
) -> LongformScores:
    """Score ``talks`` (one target language; ``tgt`` only checks it) after re-segmenting them with
    ``resegment`` (``softsegmenter`` or ``mwer``). ``learned``: the learned scorers (simul.metrics.learned;
    COMET, XCOMET, BLEURT), with ``comet_unavailable`` the reason to record when there is no COMET-family one.
    ``lang``: SoftSegmenter's Moses language (default: the target's code; "" for none)."""
    target = _check(talks, tgt)
    reseg = resegment_talks(talks, resegment, lang)
    lat_rows = segment_latencies(talks, reseg)
    hyps: list[str] = []
    refs: list[tuple[str, ...]] = []
    sources: list[str] = []
    where: list[tuple[str, int, int]] = []
    for talk, outputs in zip(talks, reseg.talks, strict=True):
        for index, (seg, got) in enumerate(zip(talk.segments, outputs, strict=True)):
            hyps.append(got.hypothesis)
            refs.append(tuple(r.strip() for r in seg.references))
            sources.append(seg.source)
            where.append((talk.id, index, len(got.words)))
    bleu = corpus_bleu(hyps, refs, target)
    chrf = corpus_chrf(hyps, refs)
    details: list[SegmentDetail | None] = [None] * len(hyps)
    systems: dict[str, float | None] = {}
    segment_scores: dict[str, list[float | None]] = {}
    learned_counts: dict[str, Any] = {}
    learned_inputs: dict[str, str] = {}
    signatures = {
        "resegmentation": reseg.signature,
        "bleu": bleu.signature,
        "chrf": chrf.signature,
        "latency": f"{LATENCY_DEFINITIONS}|{reseg.tool}|unit:{talks[0].unit}|pos:{talks[0].position_unit}",
    }
    for scorer in learned:
        kind = scorer.kind
        systems[kind] = None
        segment_scores[kind] = [None] * len(hyps)
        if scorer.needs_source and any(not s.strip() for s in sources):
            comet_unavailable = "COMET needs every segment's source transcript; some segments have none"
            continue
        firsts = [r[0] for r in refs]
        result = scorer.score(sources, hyps, firsts)
        learned_inputs[kind] = inputs_sha256(scorer.needs_source, sources, hyps, firsts)
        systems[kind] = float(result.system)
        segment_scores[kind] = [float(x) for x in result.segments]
        signatures[kind] = str(result.signature)
        learned_counts.update(result.counts())
        if result.details is not None:
            details = [d if isinstance(d, SegmentDetail) else None for d in result.details]
    per_segment = []
    flat_lat = [row for talk_rows in lat_rows for row in talk_rows]
    for n, ((talk_id, index, count), hyp, ref, row, detail) in enumerate(
        zip(where, hyps, refs, flat_lat, details, strict=True)
    ):
        per_segment.append(
            SegmentScore(
                talk=talk_id,
                index=index,
                hypothesis=hyp,
                references=ref,
                chrf=sentence_chrf(hyp, ref),
                units=count,
                latency=dict(vars(row)),
                learned={kind: values[n] for kind, values in segment_scores.items()},
                detail=detail,
            )
        )
    latency = corpus_latency(lat_rows)
    return LongformScores(
        talks=len(talks),
        segments=len(hyps),
        empty_segments=sum(1 for _, _, count in where if count == 0),
        bleu=bleu.score,
        chrf=chrf.score,
        latency=latency,
        latency_unit=talks[0].position_unit,
        regime=regime(latency["long_yaal"], talks[0].timed),
        signatures=signatures,
        per_segment=per_segment,
        comet_unavailable=None
        if any(systems.get(k) is not None for k in ("comet", "xcomet"))
        else comet_unavailable,
        learned=systems,
        learned_counts=learned_counts,
        learned_inputs=learned_inputs,
    )

"""The paired bootstrap of `simul rank`: sacrebleu's test, for chrF and BLEU as sacrebleu computes it and for
COMET and XCOMET on resampled segment scores.

sacrebleu's paired bootstrap resampling (``sacrebleu --paired-bs``; sacrebleu 2.x ``significance.py``,
``_paired_bs_test``, after Koehn, 2004, "Statistical Significance Tests for Machine Translation Evaluation",
and Moses' ``bootstrap-hypothesis-difference-significance.pl``), between a baseline A and a system B scored on
the same n segments:

1. draw ``samples`` resamples of the segment indices at once, ``numpy.random.default_rng(seed).choice(n,
   size=(samples, n), replace=True)`` (seed 12345 by default, sacrebleu's ``SACREBLEU_SEED``);
2. score both systems on every resample: chrF and BLEU from the summed sufficient statistics of the resampled
   segments (simul.metrics.sacrebleu_stats, checked to give ``corpus_score``'s figure), COMET and XCOMET as
   the mean of the resampled segment scores (their system score is that mean);
3. each system's bootstrap mean and 95 % confidence interval, sacrebleu's ``estimate_ci``: the scores sorted,
   the interval from the (samples // 40)-th to the (samples - samples // 40 - 1)-th, reported as the mean ±
   half its width;
4. p: with d = |A - B| observed and d_k = |A_k - B_k| on resample k, p = (#{k : d_k - mean(d) > d} + 1) /
   (samples + 1), a two-sided test of "the two systems score the same". One exception: two systems with the
   same score (d = 0) get p = 1, where sacrebleu's formula gives 1 / (samples + 1), which reads as a
   significant difference between, say, two displays of the same final outputs.

simul adds the interval of the difference A - B, from the same resamples and the same percentile positions.
For chrF and BLEU, tests/test_rank.py checks that the means, intervals and p equal what
``sacrebleu.significance.PairedTest`` gives on the same hypotheses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

SEED = 12345  # sacrebleu's default SACREBLEU_SEED

# scores of one system on each resample: a (samples, n) array of segment indices -> (samples,) scores
Array = np.ndarray[Any, Any]
ResampleScorer = Callable[[Array], Array]


@dataclass(frozen=True)
class PairedBootstrap:
    """A paired bootstrap between ``a`` (the better-ranked neighbour) and ``b``."""

    a_score: float
    b_score: float
    a_mean: float
    a_ci: float  # half-width of the 95 % interval around a_mean
    b_mean: float
    b_ci: float
    delta: float  # a_score - b_score
    delta_low: float
    delta_high: float
    p: float
    samples: int
    seed: int

    def to_json(self) -> dict[str, Any]:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in self.__dict__.items()}


def _interval(scores: Array) -> tuple[float, float, float]:
    """(mean, low, high) as sacrebleu's estimate_ci positions them."""
    ordered = np.sort(scores)
    n = len(ordered)
    lower = n // 40
    return float(ordered.mean()), float(ordered[lower]), float(ordered[n - lower - 1])


def paired_bootstrap(
    n: int,
    score_a: ResampleScorer,
    score_b: ResampleScorer,
    observed: tuple[float, float],
    samples: int = 1000,
    seed: int = SEED,
) -> PairedBootstrap:
    """sacrebleu's paired bootstrap over ``n`` segments (the module's docstring); ``observed``: both systems'
    scores on all segments."""
    rng = np.random.default_rng(seed)
    indices = rng.choice(n, size=(samples, n), replace=True)
    a, b = score_a(indices), score_b(indices)
    a_mean, a_low, a_high = _interval(a)
    b_mean, b_low, b_high = _interval(b)
    _, d_low, d_high = _interval(a - b)
    diffs = np.abs(b - a)
    centred = diffs - diffs.mean()
    observed_diff = abs(observed[0] - observed[1])
    p = 1.0 if observed_diff == 0.0 else (int(np.sum(centred > observed_diff)) + 1) / (samples + 1)
    return PairedBootstrap(
        a_score=observed[0],
        b_score=observed[1],
        a_mean=a_mean,
        a_ci=0.5 * (a_high - a_low),
        b_mean=b_mean,
        b_ci=0.5 * (b_high - b_low),
        delta=observed[0] - observed[1],
        delta_low=d_low,
        delta_high=d_high,
        p=p,
        samples=samples,
        seed=seed,
    )


def mean_resampler(segments: Sequence[float]) -> ResampleScorer:
    """COMET's and XCOMET's system score (the mean of segment scores) on each resample."""
    values = np.asarray(segments, dtype=np.float64)

    def score(indices: Array) -> Array:
        return np.asarray(values[indices].mean(axis=1), dtype=np.float64)

    return score


def corpus_resampler(
    metric_name: str, hypotheses: Sequence[str], references: Sequence[tuple[str, ...]], tgt: str
) -> tuple[ResampleScorer, float]:
    """Corpus chrF or BLEU (the run's settings: simul.metrics.quality) on each resample, from sacrebleu's
    per-segment statistics; and the score on all segments."""
    from simul.metrics.quality import bleu_tokenizer, reference_streams
    from simul.metrics.sacrebleu_stats import corpus_statistics

    metric: Any
    if metric_name == "chrf":
        from sacrebleu.metrics.chrf import CHRF

        metric = CHRF()
    else:
        from sacrebleu.metrics.bleu import BLEU

        metric = BLEU(tokenize=bleu_tokenizer(tgt))
    stats = corpus_statistics(metric, hypotheses, reference_streams(list(references)))

    def score(indices: Array) -> Array:
        return np.array([stats.score(row) for row in indices], dtype=np.float64)

    return score, stats.score(range(len(hypotheses)))

"""Is a difference between two systems beyond noise? The paired bootstraps of `simul diff` and `simul rank`.

Both resample the segments (streams, or a talk's re-segmented reference segments) with replacement and score
both systems on every resample (Koehn, 2004, "Statistical Significance Tests for Machine Translation
Evaluation"). What they share, :class:`SystemScores`: one system's score on all segments and on each row of a
``(samples, n)`` array of resampled segment indices,

* corpus chrF and BLEU (:func:`corpus_scores`): from the summed sufficient statistics of the resampled
  segments (simul.metrics.sacrebleu_stats, checked to give ``corpus_score``'s figure), with the sacrebleu
  objects of the run's own scores (simul.metrics.quality.sacrebleu_metric) and every reference;
* COMET, XCOMET and BLEURT (:func:`segment_mean_scores`): their system score is the mean of the segment
  scores, so a resample's is the mean of the resampled ones, summed left to right (``numpy.cumsum``, the same
  figure as Python's ``sum``, so the exact zeros of :func:`diff_bootstrap` stay exact).

They differ in the question they answer, so each keeps its own draws and verdict.

**`simul diff`: :func:`diff_bootstrap`, a one-sided test of a regression.** ``samples`` resamples drawn one
at a time from Python's ``random.Random(seed)`` (seed :data:`DIFF_SEED`, set by simul, so a verdict does not
depend on the environment), n indices each; the differences new - base. The test is one-sided, by the sign
of the observed change: p is the share of resamples in which the difference does not have the observed sign
(<= 0 for a rise, >= 0 for a drop; 1 for no change). `simul diff`'s thresholds are one-directional, so the
question is whether a drop stays a drop under resampling, not whether the runs differ in either direction
(simul.metrics.sacrebleu_stats says why it does not use ``sacrebleu --paired-bs``). The 95 % interval of the
difference is the ``int(0.025 * samples)``-th and ``min(samples - 1, int(0.975 * samples))``-th of the sorted
differences.

**`simul rank`: :func:`rank_bootstrap`, sacrebleu's two-sided test between neighbours.** sacrebleu's paired
bootstrap resampling (``sacrebleu --paired-bs``; sacrebleu 2.x ``significance.py``, ``_paired_bs_test``,
after Koehn, 2004, and Moses' ``bootstrap-hypothesis-difference-significance.pl``), between a baseline A and
a system B scored on the same n segments:

1. draw ``samples`` resamples of the segment indices at once, ``numpy.random.default_rng(seed).choice(n,
   size=(samples, n), replace=True)`` (seed :data:`RANK_SEED`, 12345, sacrebleu's ``SACREBLEU_SEED``);
2. score both systems on every resample (:class:`SystemScores`);
3. each system's bootstrap mean and 95 % confidence interval, sacrebleu's ``estimate_ci``: the scores sorted,
   the interval from the (samples // 40)-th to the (samples - samples // 40 - 1)-th, reported as the mean ±
   half its width;
4. p: with d = |A - B| observed and d_k = |A_k - B_k| on resample k, p = (#{k : d_k - mean(d) > d} + 1) /
   (samples + 1), a two-sided test of "the two systems score the same". One exception: two systems with the
   same score (d = 0) get p = 1, where sacrebleu's formula gives 1 / (samples + 1), which reads as a
   significant difference between, say, two displays of the same final outputs.

simul adds the interval of the difference A - B, from the same resamples and the same percentile positions.
For chrF and BLEU, tests/test_rank.py checks that the means, intervals and p equal what
``sacrebleu.significance.PairedTest`` gives on the same hypotheses; tests/test_significance.py pins both
tests' figures on fixed data, as they were before the two were joined in this module.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from simul.metrics.quality import reference_streams, sacrebleu_metric
from simul.metrics.sacrebleu_stats import corpus_statistics

DIFF_SEED = 12345
RANK_SEED = 12345  # sacrebleu's default SACREBLEU_SEED

# a (samples, n) array of segment indices -> the (samples,) scores of one system on those resamples
Array = np.ndarray[Any, Any]
Resample = Callable[[Array], Array]


@dataclass(frozen=True)
class SystemScores:
    """One system's score on its ``size`` segments (``whole``) and on resamples of them (``on``)."""

    size: int
    whole: float
    on: Resample


def corpus_scores(
    metric: str, hypotheses: Sequence[str], references: Sequence[tuple[str, ...]], tgt: str
) -> SystemScores:
    """Corpus chrF or BLEU (the run's settings: simul.metrics.quality) on each resample, from sacrebleu's
    per-segment statistics; ``references``: every reference of each segment."""
    stats = corpus_statistics(sacrebleu_metric(metric, tgt), hypotheses, reference_streams(list(references)))

    def on(indices: Array) -> Array:
        return np.array([stats.score(row) for row in indices], dtype=np.float64)

    return SystemScores(len(hypotheses), stats.score(range(len(hypotheses))), on)


def segment_mean_scores(segments: Sequence[float]) -> SystemScores:
    """The mean of segment scores (COMET's, XCOMET's and BLEURT's system score) on each resample, summed left
    to right as Python's ``sum`` adds."""
    values = np.asarray(segments, dtype=np.float64)

    def on(indices: Array) -> Array:
        return np.asarray(np.cumsum(values[indices], axis=1)[:, -1] / indices.shape[1], dtype=np.float64)

    return SystemScores(len(segments), sum(segments) / len(segments), on)


class _Written:
    """A test's figures as the commands write them: every float to 4 decimals."""

    def to_json(self) -> dict[str, Any]:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in self.__dict__.items()}


def _paired(a: SystemScores, b: SystemScores) -> int:
    if a.size != b.size or a.size == 0:
        raise ValueError(f"a paired bootstrap needs the same segments on both sides ({a.size} vs {b.size})")
    return a.size


@dataclass
class DiffBootstrap(_Written):
    """`simul diff`'s verdict on one metric: the change new - base, its 95 % interval, one-sided p."""

    delta: float
    ci_low: float
    ci_high: float
    p: float
    samples: int


def diff_bootstrap(
    base: SystemScores, new: SystemScores, samples: int = 1000, seed: int = DIFF_SEED
) -> DiffBootstrap:
    """`simul diff`'s one-sided paired bootstrap of new - base (the module's docstring)."""
    n = _paired(base, new)
    rng = random.Random(seed)
    indices = np.array([[rng.randrange(n) for _ in range(n)] for _ in range(samples)], dtype=np.int64)
    observed = new.whole - base.whole
    deltas = sorted(float(d) for d in new.on(indices) - base.on(indices))
    if observed > 0:
        p = sum(1 for d in deltas if d <= 0) / samples
    elif observed < 0:
        p = sum(1 for d in deltas if d >= 0) / samples
    else:
        p = 1.0
    low = deltas[int(0.025 * samples)]
    high = deltas[min(samples - 1, int(0.975 * samples))]
    return DiffBootstrap(delta=observed, ci_low=low, ci_high=high, p=p, samples=samples)


@dataclass(frozen=True)
class RankBootstrap(_Written):
    """`simul rank`'s test between ``a`` (the better-ranked neighbour) and ``b``."""

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


def _interval(scores: Array) -> tuple[float, float, float]:
    """(mean, low, high) as sacrebleu's estimate_ci positions them."""
    ordered = np.sort(scores)
    n = len(ordered)
    lower = n // 40
    return float(ordered.mean()), float(ordered[lower]), float(ordered[n - lower - 1])


def rank_bootstrap(
    a: SystemScores, b: SystemScores, samples: int = 1000, seed: int = RANK_SEED
) -> RankBootstrap:
    """`simul rank`'s paired bootstrap, sacrebleu's, between neighbours ``a`` and ``b`` (the module's
    docstring)."""
    n = _paired(a, b)
    rng = np.random.default_rng(seed)
    indices = rng.choice(n, size=(samples, n), replace=True)
    on_a, on_b = a.on(indices), b.on(indices)
    a_mean, a_low, a_high = _interval(on_a)
    b_mean, b_low, b_high = _interval(on_b)
    _, d_low, d_high = _interval(on_a - on_b)
    diffs = np.abs(on_b - on_a)
    centred = diffs - diffs.mean()
    observed_diff = abs(a.whole - b.whole)
    p = 1.0 if observed_diff == 0.0 else (int(np.sum(centred > observed_diff)) + 1) / (samples + 1)
    return RankBootstrap(
        a_score=a.whole,
        b_score=b.whole,
        a_mean=a_mean,
        a_ci=0.5 * (a_high - a_low),
        b_mean=b_mean,
        b_ci=0.5 * (b_high - b_low),
        delta=a.whole - b.whole,
        delta_low=d_low,
        delta_high=d_high,
        p=p,
        samples=samples,
        seed=seed,
    )

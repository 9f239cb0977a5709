"""The paired bootstrap of `simul diff`: is a change of chrF, BLEU or COMET beyond noise?

Paired bootstrap over streams (Koehn, 2004, "Statistical Significance Tests for Machine Translation
Evaluation"): draw ``samples`` resamples of the streams with replacement, score both runs on each
(corpus BLEU and chrF from summed sufficient statistics, simul.metrics.sacrebleu_stats; COMET as the mean of
segment scores), and take the differences new - base. The test is one-sided, by the sign of the observed
change: p is the share of resamples in which the difference does not have the observed sign (<= 0 for a
rise, >= 0 for a drop; 1 for no change). `simul diff`'s thresholds are one-directional, so the question is
whether a drop stays a drop under resampling, not whether the runs differ in either direction (which
``sacrebleu --paired-bs`` tests: simul.metrics.sacrebleu_stats says why simul does not use it). The 95 %
interval of the difference is the 2.5th and 97.5th percentiles of the resampled differences. The resamples
come from Python's ``random.Random(seed)``, seeded by simul, so a verdict does not depend on the environment.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Scorer = Callable[[Sequence[int]], tuple[float, float]]


@dataclass
class Bootstrap:
    delta: float
    ci_low: float
    ci_high: float
    p: float
    samples: int

    def to_json(self) -> dict[str, Any]:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in self.__dict__.items()}


def paired_bootstrap(n_items: int, score: Scorer, samples: int = 1000, seed: int = 12345) -> Bootstrap:
    """Paired bootstrap: ``score(indices)`` returns (base, new) scores on a resample of the items."""
    rng = random.Random(seed)
    base_all, new_all = score(range(n_items))
    observed = new_all - base_all
    deltas = []
    for _ in range(samples):
        picks = [rng.randrange(n_items) for _ in range(n_items)]
        b, n = score(picks)
        deltas.append(n - b)
    deltas.sort()
    if observed > 0:
        p = sum(1 for d in deltas if d <= 0) / samples
    elif observed < 0:
        p = sum(1 for d in deltas if d >= 0) / samples
    else:
        p = 1.0
    low = deltas[int(0.025 * samples)]
    high = deltas[min(samples - 1, int(0.975 * samples))]
    return Bootstrap(delta=observed, ci_low=low, ci_high=high, p=p, samples=samples)


def corpus_scorer(
    metric_name: str, hyps_b: list[str], hyps_n: list[str], refs: list[tuple[str, ...]], tgt: str
) -> Scorer:
    """(base, new) corpus chrF or BLEU of a resample, with the settings of the run's own scores and every
    reference, as the corpus scores use them."""
    from simul.metrics.quality import bleu_tokenizer, reference_streams
    from simul.metrics.sacrebleu_stats import corpus_statistics

    metric: Any
    if metric_name == "chrf":
        from sacrebleu.metrics.chrf import CHRF

        metric = CHRF()
    else:
        from sacrebleu.metrics.bleu import BLEU

        metric = BLEU(tokenize=bleu_tokenizer(tgt))
    ref_streams = reference_streams(refs)
    stats_b = corpus_statistics(metric, hyps_b, ref_streams)
    stats_n = corpus_statistics(metric, hyps_n, ref_streams)

    def score(indices: Sequence[int]) -> tuple[float, float]:
        return stats_b.score(indices), stats_n.score(indices)

    return score


def mean_scorer(base: Sequence[float], new: Sequence[float]) -> Scorer:
    """(base, new) mean of per-stream scores (COMET's system score) on a resample."""

    def score(indices: Sequence[int]) -> tuple[float, float]:
        idx = list(indices)
        return sum(base[i] for i in idx) / len(idx), sum(new[i] for i in idx) / len(idx)

    return score

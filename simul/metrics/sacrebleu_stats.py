"""sacrebleu's per-segment sufficient statistics, for resampling corpus BLEU and chrF.

This module is the one place in simul that calls sacrebleu's private API; the paired bootstraps of `simul
diff` and `simul rank` (simul.reports.significance) go through it. Corpus BLEU and chrF are not means of
segment scores: they are computed from statistics summed over the segments (BLEU: n-gram matches and totals
per order, hypothesis and reference lengths; chrF: character and word n-gram matches and totals). A resample
of the segments is scored by summing the resampled segments' statistics and computing the score from the
sums, which is what sacrebleu does inside its own significance tests (``sacrebleu.significance``, behind
``sacrebleu --paired-bs``) with the same two methods:

* ``Metric._extract_corpus_statistics(hypotheses, reference_streams)``: one statistics vector per segment;
* ``Metric._compute_score_from_stats(summed_vector)``: the corpus score of summed statistics.

Why not ``sacrebleu.significance.PairedTest``: its paired bootstrap tests whether ``|new - base|`` differs
from zero (a two-sided p-value, of the resampled absolute differences centred on their mean), and simul's
threshold is one-sided: a drop is a regression, a rise is not, so the question is whether the observed
change keeps its sign under resampling. PairedTest also reports no interval for the difference (only for
each system's score), has no entry point for COMET's per-segment scores (which must get the same test), and
takes its seed from the ``SACREBLEU_SEED`` environment variable, so a CI job's variable could change a
verdict. The one-sided test is kept; the private calls are kept here, behind two checks that fail loudly
when sacrebleu changes them: :func:`corpus_statistics` raises a :class:`SimulError` naming the sacrebleu
version when a method is gone, or when summed statistics no longer reproduce ``corpus_score`` exactly
(checked on every use), and tests/test_sacrebleu_stats.py checks both on BLEU and chrF with one and two
references.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata
from typing import Any

import numpy as np

from simul.common.errors import SimulError

PRIVATE_METHODS = ("_extract_corpus_statistics", "_compute_score_from_stats")
FIX = (
    "simul's paired bootstrap needs it (simul/metrics/sacrebleu_stats.py): install the sacrebleu version in "
    "simul's constraints, or pass --bootstrap 0 to compare without it"
)


def _sacrebleu_version() -> str:
    try:
        return metadata.version("sacrebleu")
    except metadata.PackageNotFoundError:
        return "unknown"


class CorpusStatistics:
    """Per-segment statistics of one metric on one system's hypotheses; ``score(indices)`` is the corpus
    score of the segments at ``indices`` (repetitions count, as in a bootstrap resample)."""

    def __init__(self, metric: Any, hypotheses: Sequence[str], references: Sequence[Sequence[str | None]]):
        for name in PRIVATE_METHODS:
            if not callable(getattr(metric, name, None)):
                where = f"sacrebleu {_sacrebleu_version()}'s {type(metric).__name__}"
                raise SimulError(f"{where} has no {name} any more; {FIX}")
        self.metric = metric
        try:
            rows = metric._extract_corpus_statistics(list(hypotheses), references)
            self.stats = np.array(rows, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise SimulError(
                f"sacrebleu {_sacrebleu_version()}'s {type(metric).__name__}._extract_corpus_statistics "
                f"changed ({exc}); {FIX}"
            ) from None
        if self.stats.ndim != 2 or self.stats.shape[0] != len(hypotheses):
            raise SimulError(
                f"sacrebleu {_sacrebleu_version()}'s {type(metric).__name__}._extract_corpus_statistics gave "
                f"statistics of shape {self.stats.shape} for {len(hypotheses)} segments; {FIX}"
            )

    def score(self, indices: Sequence[int]) -> float:
        summed = self.stats[np.asarray(indices, dtype=np.int64)].sum(axis=0)
        return float(self.metric._compute_score_from_stats(summed.tolist()).score)


def corpus_statistics(
    metric: Any, hypotheses: Sequence[str], references: Sequence[Sequence[str | None]]
) -> CorpusStatistics:
    """The statistics of ``hypotheses``, checked: their sum over every segment must give exactly the score
    that ``metric.corpus_score`` gives (else sacrebleu changed what the private methods mean)."""
    stats = CorpusStatistics(metric, hypotheses, references)
    whole = stats.score(range(len(hypotheses)))
    public = float(metric.corpus_score(list(hypotheses), references).score)
    if abs(whole - public) > 1e-9:
        raise SimulError(
            f"sacrebleu {_sacrebleu_version()}'s {type(metric).__name__} statistics no longer add up to its "
            f"corpus score ({whole!r} from the statistics, {public!r} from corpus_score); {FIX}"
        )
    return stats

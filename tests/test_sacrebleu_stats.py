"""The paired bootstrap's use of sacrebleu's private statistics API fails loudly when sacrebleu changes it.

simul/metrics/sacrebleu_stats.py is the one place that calls ``_extract_corpus_statistics`` and
``_compute_score_from_stats``. These tests pin what simul relies on: both methods exist on BLEU and chrF, and
the corpus score of any resample (repetitions included) computed from summed per-segment statistics equals
what the public ``corpus_score`` gives on that resample, with one and with two references. If a sacrebleu
release renames the methods or changes the layout of the statistics, these tests fail, and so does
`simul diff` with a message naming the sacrebleu version (never a silently wrong p-value).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from simul.common.errors import SimulError
from simul.metrics.quality import reference_streams
from simul.metrics.sacrebleu_stats import PRIVATE_METHODS, corpus_statistics
from simul.reports.significance import corpus_scores, diff_bootstrap, segment_mean_scores

HYPS = [
    "Die Katze saß auf der Matte.",
    "Wir haben vier neue Züge in der Stadt.",
    "Hallo Welt, das ist ein Test.",
    "Das Wetter ist heute gut.",
    "zzz qqq",
]
REFS_ONE: list[tuple[str, ...]] = [
    ("Die Katze saß auf der Matte und sah aus dem Fenster.",),
    ("Wir haben jetzt vier neue Züge in der Stadt.",),
    ("Hallo Welt, das ist ein Test des Systems.",),
    ("Das Wetter ist heute gut und die Sonne scheint.",),
    ("Ein ganz anderer Satz.",),
]
# a second reference for some segments only: sacrebleu's reference streams are padded with None
REFS_TWO = [
    (*REFS_ONE[0], "Die Katze sass auf der Matte."),
    REFS_ONE[1],
    (*REFS_ONE[2], "Hallo Welt, dies ist ein Test."),
    REFS_ONE[3],
    REFS_ONE[4],
]


def metrics() -> dict[str, Any]:
    from sacrebleu.metrics.bleu import BLEU
    from sacrebleu.metrics.chrf import CHRF

    return {"bleu": BLEU(tokenize="13a"), "chrf": CHRF()}


@pytest.mark.parametrize("name", ["bleu", "chrf"])
@pytest.mark.parametrize("refs", [REFS_ONE, REFS_TWO], ids=["one-reference", "two-references"])
def test_summed_statistics_give_the_public_corpus_score_of_any_resample(
    name: str, refs: list[tuple[str, ...]]
) -> None:
    metric = metrics()[name]
    for method in PRIVATE_METHODS:
        assert callable(getattr(metric, method, None)), f"sacrebleu's {type(metric).__name__} lost {method}"
    stats = corpus_statistics(metric, HYPS, reference_streams(refs))
    for picks in ([0, 1, 2, 3, 4], [0, 0, 2], [4, 4, 4, 1], [3]):
        hyps = [HYPS[i] for i in picks]
        public = metrics()[name].corpus_score(hyps, reference_streams([refs[i] for i in picks])).score
        assert stats.score(picks) == pytest.approx(public, abs=1e-9), picks


class _Renamed:
    """A metric whose private method sacrebleu renamed."""

    def _extract_corpus_statistics(self, hyps: list[str], refs: Any) -> list[list[int]]:
        return [[1] for _ in hyps]


class _Drifted(_Renamed):
    """A metric whose statistics no longer add up to its corpus score."""

    class _Score:
        def __init__(self, score: float) -> None:
            self.score = score

    def _compute_score_from_stats(self, stats: list[float]) -> Any:
        return self._Score(float(stats[0]))

    def corpus_score(self, hyps: list[str], refs: Any) -> Any:
        return self._Score(42.0)


def test_a_changed_private_api_fails_loudly() -> None:
    refs = reference_streams(REFS_ONE)
    with pytest.raises(SimulError, match=r"sacrebleu .*has no _compute_score_from_stats.*--bootstrap 0"):
        corpus_statistics(_Renamed(), HYPS, refs)
    with pytest.raises(SimulError, match=r"no longer add up to its corpus score \(5\.0 .* 42\.0"):
        corpus_statistics(_Drifted(), HYPS, refs)


def test_the_bootstrap_is_one_sided_by_the_sign_of_the_change() -> None:
    # one stream of four got worse: the drop keeps its sign unless a resample leaves that stream out,
    # which happens with probability (3/4)**4 = 0.316
    base, new = [1.0, 1.0, 1.0, 1.0], [0.5, 1.0, 1.0, 1.0]
    drop = diff_bootstrap(segment_mean_scores(base), segment_mean_scores(new), samples=2000)
    assert drop.delta == pytest.approx(-0.125) and drop.p == pytest.approx(0.75**4, abs=0.03)
    # the 2.5th percentile: that stream drawn 3 times or more (P = 0.051) gives -3 * 0.5 / 4
    assert drop.ci_low == pytest.approx(-0.375) and drop.ci_high == 0.0
    rise = diff_bootstrap(segment_mean_scores(new), segment_mean_scores(base), samples=2000)
    assert rise.delta == pytest.approx(0.125) and rise.p == pytest.approx(drop.p)
    assert diff_bootstrap(segment_mean_scores(base), segment_mean_scores(base), samples=10).p == 1.0
    # every stream worse: no resample shows anything but a drop
    assert diff_bootstrap(segment_mean_scores(base), segment_mean_scores([0.0] * 4), samples=200).p == 0.0


def test_corpus_scores_score_each_resample() -> None:
    base = corpus_scores("chrf", HYPS, REFS_ONE, "de")
    new = corpus_scores("chrf", [r[0] for r in REFS_ONE], REFS_ONE, "de")
    assert base.whole < 100.0 and new.whole == pytest.approx(100.0)
    rows = np.array([[0, 1, 2, 3, 4], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    assert list(new.on(rows)) == pytest.approx([100.0] * 3)
    on_base = base.on(rows)
    assert on_base[0] == base.whole and on_base[1] == pytest.approx(base.on(np.array([[1]]))[0])

"""The paired bootstraps of `simul diff` and `simul rank` (simul.reports.significance) give the figures they
gave before they were joined in one module.

Each figure below was computed on fixed data by the code before the join (commit 0b69e3b: `simul diff`'s
``simul/reports/bootstrap.py`` and `simul rank`'s ``simul/reports/paired_bs.py``), default samples and
seeds unless named. A change to the draws (the random generator, its seed, the order of the draws), to how a
resample is scored, or to the intervals and p changes them, and these tests fail. `simul diff`'s figures are
pinned to the last bit, and so are `simul rank`'s chrF and BLEU. `simul rank`'s mean of segment scores now
sums left to right (as `simul diff`'s always did), where numpy's ``mean`` summed pairwise: those figures are
pinned to 1e-12, and to the digit as rank writes them (``to_json``, 4 decimals).
"""

from __future__ import annotations

from typing import Any

import pytest

from simul.metrics.quality import corpus_bleu, corpus_chrf, sacrebleu_metric
from simul.reports.significance import (
    corpus_scores,
    diff_bootstrap,
    rank_bootstrap,
    segment_mean_scores,
)

REFS = [
    "Die Katze saß auf der Matte und sah aus dem Fenster.",
    "Wir haben jetzt vier neue Züge in der Stadt.",
    "Hallo Welt, das ist ein Test des Systems.",
    "Das Wetter ist heute gut und die Sonne scheint.",
    "Der Zug nach Berlin fährt um acht Uhr ab.",
    "Sie hat das Buch gestern in der Bibliothek gelesen.",
    "Morgen gehen wir zusammen ins Kino.",
    "Die Konferenz beginnt nächste Woche in Wien.",
    "Er trinkt jeden Morgen einen starken Kaffee.",
    "Das Museum ist am Montag geschlossen.",
    "Wir brauchen mehr Zeit für dieses Projekt.",
    "Die Kinder spielen im Garten mit dem Hund.",
]
HYP_A = [
    "Die Katze saß auf der Matte und sah aus dem Fenster.",
    "Wir haben vier neue Züge in der Stadt.",
    "Hallo Welt, das ist ein Test.",
    "Das Wetter ist heute gut.",
    "Der Zug nach Berlin fährt um acht ab.",
    "Sie hat das Buch gestern gelesen.",
    "Morgen gehen wir ins Kino.",
    "Die Konferenz beginnt nächste Woche in Wien.",
    "Er trinkt jeden Morgen Kaffee.",
    "Das Museum ist montags zu.",
    "Wir brauchen mehr Zeit für das Projekt.",
    "Die Kinder spielen im Garten.",
]
HYP_B = [
    "Die Katze sitzt auf der Matte.",
    "Wir haben vier Züge in der Stadt.",
    "Hallo Welt, dies ist ein Test des Systems.",
    "Heute ist das Wetter gut und die Sonne scheint.",
    "Der Zug fährt um acht Uhr nach Berlin.",
    "Gestern las sie das Buch in der Bibliothek.",
    "Morgen gehen wir zusammen ins Kino.",
    "Die Tagung beginnt in Wien.",
    "Er trinkt morgens einen starken Kaffee.",
    "Das Museum ist am Montag geschlossen.",
    "Wir brauchen Zeit.",
    "Die Kinder spielen mit dem Hund im Garten.",
]
SEG_A = [0.81, 0.74, 0.9, 0.66, 0.71, 0.85, 0.79, 0.62, 0.88, 0.7, 0.77, 0.83]
SEG_B = [0.79, 0.76, 0.84, 0.69, 0.64, 0.8, 0.81, 0.58, 0.86, 0.73, 0.7, 0.8]
ONE_REF = [(r,) for r in REFS]

# simul diff (base A, new B): delta, ci_low, ci_high, p, samples
DIFF_PINNED: dict[str, tuple[float, float, float, float, int]] = {
    "chrf": (-7.0305620449093595, -26.89188017012836, 13.188948375465259, 0.274, 1000),
    "bleu": (-18.831500985832847, -44.19390725443844, 7.112079674712092, 0.07, 1000),
    "mean": (-0.021666666666666612, -0.043333333333333335, 0.0, 0.026, 1000),
    "mean, 200 samples, seed 7": (
        -0.021666666666666612,
        -0.04083333333333339,
        -0.0008333333333334636,
        0.015,
        200,
    ),
}
# simul rank (A, B): a_score, b_score, a_mean, a_ci, b_mean, b_ci, delta, delta_low, delta_high, p
RANK_PINNED: dict[str, tuple[float, ...]] = {
    "chrf": (
        74.31492969687167,
        67.28436765196231,
        74.35609558973208,
        9.491508121909696,
        67.35690528910756,
        12.50781496300349,
        7.0305620449093595,
        -13.956382838661213,
        26.10880923828138,
        0.17782217782217782,
    ),
    "bleu": (
        63.922400436125464,
        45.09089945029262,
        63.719332210524676,
        12.960035882945817,
        45.07558472147901,
        15.316045934564396,
        18.831500985832847,
        -7.437239007638929,
        41.65831554346377,
        0.04895104895104895,
    ),
    "mean": (
        0.7716666666666666,
        0.75,
        0.7717875,
        0.046666666666666634,
        0.7499324999999999,
        0.04500000000000015,
        0.021666666666666612,
        -0.0008333333333331305,
        0.043333333333333446,
        0.024975024975024976,
    ),
}
RANK_FIELDS = (
    "a_score", "b_score", "a_mean", "a_ci", "b_mean", "b_ci", "delta", "delta_low", "delta_high", "p"
)  # fmt: skip


def _scores(kind: str, hyps: list[str], segments: list[float]) -> Any:
    return segment_mean_scores(segments) if kind == "mean" else corpus_scores(kind, hyps, ONE_REF, "de")


@pytest.mark.parametrize("case", list(DIFF_PINNED))
def test_diff_bootstrap_gives_its_figures_from_before_the_join(case: str) -> None:
    kind = case.split(",")[0]
    options = {"samples": 200, "seed": 7} if "seed 7" in case else {}
    result = diff_bootstrap(_scores(kind, HYP_A, SEG_A), _scores(kind, HYP_B, SEG_B), **options)
    got = (result.delta, result.ci_low, result.ci_high, result.p, result.samples)
    assert got == DIFF_PINNED[case]  # to the last bit


@pytest.mark.parametrize("kind", list(RANK_PINNED))
def test_rank_bootstrap_gives_its_figures_from_before_the_join(kind: str) -> None:
    result = rank_bootstrap(_scores(kind, HYP_A, SEG_A), _scores(kind, HYP_B, SEG_B))
    got = tuple(getattr(result, name) for name in RANK_FIELDS)
    expected = RANK_PINNED[kind]
    if kind == "mean":  # the summation order changed (the module's docstring): the last bits may differ
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)
    else:
        assert got == expected  # to the last bit
    written = {name: round(value, 4) for name, value in zip(RANK_FIELDS, expected, strict=True)}
    assert result.to_json() == {**written, "samples": 1000, "seed": 12345}


def test_a_pinned_figure_moves_when_the_draws_change() -> None:
    """The pins can fail: another seed draws other resamples, and every pinned interval moves."""
    base, new = _scores("chrf", HYP_A, SEG_A), _scores("chrf", HYP_B, SEG_B)
    other = diff_bootstrap(base, new, seed=54321)
    assert (other.ci_low, other.ci_high) != DIFF_PINNED["chrf"][1:3]
    assert rank_bootstrap(base, new, seed=54321).delta_low != RANK_PINNED["chrf"][7]


def test_both_sides_must_have_the_same_segments() -> None:
    with pytest.raises(ValueError, match="same segments"):
        diff_bootstrap(segment_mean_scores(SEG_A), segment_mean_scores(SEG_B[:3]))
    with pytest.raises(ValueError, match="same segments"):
        rank_bootstrap(segment_mean_scores(SEG_A[:2]), segment_mean_scores(SEG_B))


ZH_REFS = [("我们今天去公园散步。",), ("这本书非常有意思。",), ("他明天早上坐火车去北京。",)]
ZH_HYPS = ["今天我们去公园散步。", "这本书很有意思。", "他明天坐火车去北京。"]


@pytest.mark.parametrize(("tgt", "tok"), [("de", "13a"), ("zh", "zh")])
def test_the_tests_resample_the_run_s_own_bleu_and_chrf(tgt: str, tok: str) -> None:
    """One factory (simul.metrics.quality.sacrebleu_metric) for the corpus scores and both tests: the same
    tokenizer rule and signature, so a test's figure on all segments is the run's own figure."""
    hyps, refs = (HYP_A, ONE_REF) if tgt == "de" else (ZH_HYPS, ZH_REFS)
    bleu, chrf = corpus_bleu(hyps, refs, tgt), corpus_chrf(hyps, refs)
    assert f"|tok:{tok}|" in bleu.signature
    assert corpus_scores("bleu", hyps, refs, tgt).whole == pytest.approx(bleu.score, abs=1e-9)
    assert corpus_scores("chrf", hyps, refs, tgt).whole == pytest.approx(chrf.score, abs=1e-9)
    metric = sacrebleu_metric("bleu", tgt)
    metric.corpus_score(hyps, [[r[0] for r in refs]])
    assert str(metric.get_signature()) == bleu.signature
    with pytest.raises(ValueError, match="neither 'bleu' nor 'chrf'"):
        sacrebleu_metric("ter", tgt)

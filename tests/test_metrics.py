"""Metrics on hand-computed examples (SPEC "Metrics")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simul.common.text import complete_prefix, decode_text
from simul.decoding.acceptance import accepts
from simul.metrics.acceptance import acceptance
from simul.metrics.erasure import erasure, normalized_erasure, stream_erasure
from simul.metrics.latency import finalisation_delays, laal, source_positions
from simul.metrics.quality import corpus_bleu, corpus_chrf
from simul.metrics.speed import (
    leviathan_speedup,
    max_row_cost,
    modelled_speedup,
    modelled_speedup_with_draft,
    row_cost,
    speed,
)
from simul.metrics.tokenizers import get_tokenizer, resolve_ne_tokenizer


def test_erasure_counts_tokens_not_kept() -> None:
    assert erasure([], ["a"]) == 0
    assert erasure(["a", "b"], ["a", "c", "d"]) == 1
    assert erasure(["a", "b"], ["a", "b", "c"]) == 0  # a pure append erases nothing
    assert erasure(["x", "y", "z"], ["q"]) == 3


def test_ne_with_a_revision() -> None:
    tok = get_tokenizer("13a")
    outputs = ["a b", "a c d", "a c d e"]
    erased, final = stream_erasure([tok(o) for o in outputs])
    assert (erased, final) == (1, 4)
    ne = normalized_erasure([[tok(o) for o in outputs]])
    assert ne.value == pytest.approx(0.25)


def test_ne_pure_append_is_zero() -> None:
    tok = get_tokenizer("13a")
    ne = normalized_erasure([[tok("Das"), tok("Das ist"), tok("Das ist gut.")]])
    assert ne.erased == 0 and ne.value == 0.0


def test_ne_chinese_characters() -> None:
    tok = get_tokenizer("zh")
    # 我们 -> 我们有 (append) -> 我有 (erases 们有): 2 erased, final length 2
    ne = normalized_erasure([[tok("我们"), tok("我们有"), tok("我有")]])
    assert (ne.erased, ne.final_tokens) == (2, 2)
    assert ne.value == pytest.approx(1.0)


def test_ne_japanese_mecab() -> None:
    tok = get_tokenizer("ja-mecab")
    assert tok("猫が好き") == ["猫", "が", "好き"]
    ne = normalized_erasure([[tok("猫が好き"), tok("猫が嫌い")]])
    assert (ne.erased, ne.final_tokens) == (1, 3)


def test_ne_sums_over_streams_before_dividing() -> None:
    tok = get_tokenizer("13a")
    ne = normalized_erasure([[tok("a b"), tok("c")], [tok("x"), tok("x y z")]])
    # stream 1: erases 2, final 1; stream 2: erases 0, final 3 -> 2 / 4
    assert ne.value == pytest.approx(0.5)


def test_acceptance_rates() -> None:
    acc = acceptance([(0, 0, 3), (3, 3, 5), (5, 2, 6)])
    assert acc.ad == pytest.approx(62.5)
    assert acc.ao == pytest.approx(100 * 5 / 14)
    assert acc.ideal_speedup == pytest.approx(14 / 9)


def test_acceptance_without_drafts() -> None:
    acc = acceptance([(0, 0, 4), (0, 0, 6)])
    assert acc.ad is None
    assert acc.ao == 0.0
    assert acc.ideal_speedup == pytest.approx(1.0)


def test_speed_tps_and_percentiles() -> None:
    spd = speed([(10, 0.1, 0.5), (20, 0.1, 0.5), (30, 0.2, 1.0)])
    assert spd.tps == pytest.approx(60 / 2.0)
    assert spd.p50_update_ms == pytest.approx(600.0)
    assert spd.p95_update_ms == pytest.approx(600 + 0.9 * 600.0)


def test_speed_model() -> None:
    # 2 s over 100 draft rows vs 4 s over 200 one-token passes: a row costs c = 0.02 / 0.02 = 1 decode
    assert row_cost(2.0, 100, 4.0, 200) == pytest.approx(1.0)
    assert row_cost(1.0, 100, 4.0, 200) == pytest.approx(0.5)
    assert row_cost(1.0, 0, 4.0, 200) is None and row_cost(1.0, 10, 0.0, 0) is None
    # free verification gives the ideal speedup; c = A/D makes SSBD no faster than RT
    assert modelled_speedup(0.8, 0.6, 0.0) == pytest.approx(1 / 0.4)
    assert modelled_speedup(0.8, 0.6, 0.8) == pytest.approx(1.0)
    # the en-de bench: A/D 0.876, A/O 0.709, c 0.47 -> 1.49 (measured 1.49); 2.0 would need c <= 0.258
    assert modelled_speedup(0.876, 0.709, 0.47) == pytest.approx(1.49, abs=0.005)
    c_max = max_row_cost(2.0, 0.876, 0.709)
    assert c_max == pytest.approx(0.258, abs=0.001)
    assert modelled_speedup(0.876, 0.709, c_max) == pytest.approx(2.0)
    assert max_row_cost(4.0, 0.876, 0.709) < 0  # above the ideal 1 / (1 - A/O) = 3.44


def test_latency_finalisation_and_laal() -> None:
    tok = get_tokenizer("13a")
    displays = [tok("a"), tok("a b"), tok("a c d"), tok("a c d e")]
    positions = [3.0, 6.0, 9.0, 10.0]
    delays = finalisation_delays(displays, positions)
    # "a" is stable from step 0; "c d" from step 2 ("b" was replaced); "e" appears at the last step
    assert delays == [3.0, 9.0, 9.0, 10.0]
    # rate = 10 / max(4, 4) = 2.5; tau = 4
    assert laal(delays, 10.0, 4) == pytest.approx((3 + (9 - 2.5) + (9 - 5) + (10 - 7.5)) / 4)


def test_latency_counts_a_reappearing_token_from_its_last_appearance() -> None:
    tok = get_tokenizer("13a")
    delays = finalisation_delays([tok("a b"), tok("a"), tok("a b")], [3.0, 6.0, 9.0])
    assert delays == [3.0, 9.0]


def test_laal_uses_the_longer_of_hypothesis_and_reference() -> None:
    # 2 hypothesis tokens, reference of 4: rate = 8 / 4
    assert laal([2.0, 8.0], 8.0, 4) == pytest.approx((2 + (8 - 2)) / 2)
    assert laal([], 8.0, 4) is None


def test_source_positions_words_chars_and_time() -> None:
    assert source_positions(["a b", "a b c"], [None, None], unspaced=False) == [2.0, 3.0]
    assert source_positions(["我们", "我们 有"], [None, None], unspaced=True) == [2.0, 3.0]
    assert source_positions(["a", "a b"], [500.0, 1000.0], unspaced=False) == [500.0, 1000.0]


def test_bleu_and_chrf_carry_signatures() -> None:
    hyps = ["Das ist ein Test.", "Hallo Welt."]
    refs = [("Das ist ein Test.",), ("Hallo, Welt!",)]
    bleu = corpus_bleu(hyps, refs, "de")
    chrf = corpus_chrf(hyps, refs)
    assert 0 < bleu.score < 100 and "tok:13a" in bleu.signature
    assert 0 < chrf.score < 100 and "nc:6" in chrf.signature
    assert "tok:zh" in corpus_bleu(["我们有"], [("我们有",)], "zh").signature
    ja = corpus_bleu(["私は毎日電車で学校に行きます。"], [("私は毎日電車で学校に行きます。",)], "ja")
    assert ja.score == pytest.approx(100.0) and "ja-mecab" in ja.signature


def test_ne_tokenizer_falls_back_to_the_language_tokenizer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SACREBLEU", str(tmp_path))  # no flores101 model there
    assert resolve_ne_tokenizer("auto", "de") == "13a"
    assert resolve_ne_tokenizer("auto", "zh") == "zh"
    assert resolve_ne_tokenizer("auto", "ja") == "ja-mecab"


def test_biased_acceptance_matches_the_mixture() -> None:
    row = np.array([2.0, 1.0, 0.0], dtype=np.float32)
    q = np.exp(row - row.max())
    q /= q.sum()
    for beta in (0.0, 0.1, 0.2, 0.29, 0.3, 0.4, 0.5, 0.9):
        mixed = (1 - beta) * q + beta * np.eye(3)[1]
        expected = bool(mixed[1] >= np.delete(mixed, 1).max())
        assert accepts(row, 1, beta) == expected, beta
    assert accepts(row, 0, 0.0)
    assert not accepts(row, 2, 0.2)


def test_biased_acceptance_ties_accept_and_half_accepts_all() -> None:
    assert accepts(np.array([1.0, 1.0, 0.0], dtype=np.float32), 1, 0.0)
    peaked = np.array([50.0, -50.0, 0.0], dtype=np.float32)
    assert accepts(peaked, 1, 0.5)
    assert not accepts(peaked, 1, 0.49)


def test_utf8_masking_never_cuts_a_character() -> None:
    assert complete_prefix("aü".encode()[:-1]) == b"a"
    assert complete_prefix("我".encode()[:2]) == b""
    assert complete_prefix("我们".encode()) == "我们".encode()
    assert complete_prefix("🙂".encode()[:3]) == b""
    assert decode_text(b" Wir \xe6\x88") == "Wir"
    assert decode_text(b"\xff abc") == "\ufffd abc"


def test_speed_model_with_a_draft_cost() -> None:
    # a free drafter is the plain model; a draft cost adds to every draft row's cost
    assert modelled_speedup_with_draft(0.8, 0.6, 0.2, 0.0) == pytest.approx(modelled_speedup(0.8, 0.6, 0.2))
    assert modelled_speedup_with_draft(0.8, 0.6, 0.2, 0.5) == pytest.approx(1 / (0.4 + 0.7 * 0.6 / 0.8))
    # a draft pass as dear as a target pass, every draft accepted: one output token per (c + d) = 1.2 passes
    assert modelled_speedup_with_draft(1.0, 1.0, 0.2, 1.0) == pytest.approx(1 / 1.2)


def test_leviathan_expected_improvement() -> None:
    # the seed's example, K = 4, alpha = 0.85, c = 0.1: (1 - 0.85^5) / 0.15 = 3.709 tokens a pass (the seed
    # rounds loosely to 4.3 and "about 3x"), over 1 + 4 * 0.1 = 1.4 passes' cost
    assert leviathan_speedup(0.85, 4, 0.1) == pytest.approx(3.7087 / 1.4, abs=1e-3)
    assert leviathan_speedup(1.0, 4, 0.0) == pytest.approx(5.0)
    assert leviathan_speedup(0.0, 4, 0.25) == pytest.approx(0.5)  # every draft rejected: pure overhead
    # the limit alpha -> 1 is continuous
    assert leviathan_speedup(1 - 1e-9, 3, 0.2) == pytest.approx(leviathan_speedup(1.0, 3, 0.2), rel=1e-6)
    with pytest.raises(ValueError):
        leviathan_speedup(1.2, 4, 0.1)

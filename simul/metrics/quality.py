"""BLEU and chrF with sacrebleu (Post, 2018, "A Call for Clarity in Reporting BLEU Scores").

Corpus-level scores over the final outputs against the references. BLEU uses the target language's
tokenizer (zh for Chinese, ja-mecab for Japanese, 13a otherwise: SPEC "Metrics"); chrF is sacrebleu's default
chrF (character n-grams up to 6, beta 2, no word n-grams; Popović, 2015). Both carry sacrebleu's signature,
which must match for two numbers to be compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from simul.errors import SimulError
from simul.languages import get_language


@dataclass(frozen=True)
class Score:
    score: float
    signature: str


def bleu_tokenizer(tgt: str) -> str:
    return get_language(tgt).bleu_tokenizer


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str], tgt: str) -> Score:
    """Corpus BLEU with the tokenizer of the target language."""
    from sacrebleu.metrics.bleu import BLEU

    try:
        metric = BLEU(tokenize=bleu_tokenizer(tgt))
    except (ImportError, RuntimeError) as exc:
        raise SimulError(
            f"BLEU's {bleu_tokenizer(tgt)} tokenizer is not usable ({exc}); `pip install 'sacrebleu[ja]'`"
        ) from None
    result = metric.corpus_score(list(hypotheses), [list(references)])
    return Score(score=float(result.score), signature=str(metric.get_signature()))


def corpus_chrf(hypotheses: Sequence[str], references: Sequence[str]) -> Score:
    """Corpus chrF (sacrebleu defaults: chrF2, character order 6, word order 0)."""
    from sacrebleu.metrics.chrf import CHRF

    metric = CHRF()
    result = metric.corpus_score(list(hypotheses), [list(references)])
    return Score(score=float(result.score), signature=str(metric.get_signature()))


def sentence_chrf(hypothesis: str, reference: str) -> float:
    """chrF of one sentence (for per-stream comparisons), same settings as the corpus score."""
    from sacrebleu.metrics.chrf import CHRF

    return float(CHRF().sentence_score(hypothesis, [reference]).score)

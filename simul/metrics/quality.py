"""BLEU and chrF with sacrebleu (Post, 2018, "A Call for Clarity in Reporting BLEU Scores").

Corpus-level scores over the final outputs against the references. Each segment may have several
references: they are passed to sacrebleu as reference streams (stream k holds every segment's k-th
reference, ``None`` where a segment has fewer), exactly as ``sacrebleu REF_A REF_B -i HYP`` reads files, so
BLEU clips n-gram counts against the maximum count over the references and takes the reference length
closest to the hypothesis, and chrF keeps each segment's best-scoring reference (Post, 2018; sacrebleu's
``metrics/bleu.py`` and ``metrics/chrf.py``). BLEU uses the target language's
tokenizer (zh for Chinese, ja-mecab for Japanese, 13a otherwise: SPEC "Metrics"); chrF is sacrebleu's default
chrF (character n-grams up to 6, beta 2, no word n-grams; Popović, 2015). Both carry sacrebleu's signature,
which must match for two numbers to be compared.

:func:`sacrebleu_metric` is the one place simul builds sacrebleu's BLEU and chrF objects: the corpus scores
here, and the paired bootstraps of `simul diff` and `simul rank` (simul.reports.significance), which resample
these same scores, all take theirs from it, so their tokenizer and signature cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simul.common.errors import SimulError
from simul.common.languages import get_language

if TYPE_CHECKING:
    from sacrebleu.metrics.bleu import BLEU
    from sacrebleu.metrics.chrf import CHRF


@dataclass(frozen=True)
class Score:
    score: float
    signature: str


def bleu_tokenizer(tgt: str) -> str:
    return get_language(tgt).bleu_tokenizer


def reference_streams(references: Sequence[tuple[str, ...]]) -> list[list[str | None]]:
    """Per-segment reference tuples -> sacrebleu's reference streams, padded with ``None``."""
    if any(isinstance(refs, str) for refs in references):
        raise TypeError("references must hold one tuple of reference strings per segment")
    depth = max((len(refs) for refs in references), default=0)
    if depth == 0 or any(not refs for refs in references):
        raise ValueError("every segment needs at least one reference")
    return [[refs[k] if k < len(refs) else None for refs in references] for k in range(depth)]


def bleu_metric(tgt: str) -> BLEU:
    """sacrebleu's BLEU with the target language's tokenizer (zh, ja-mecab, else 13a), sacrebleu's defaults
    otherwise; a SimulError saying what to install when the tokenizer cannot be loaded."""
    from sacrebleu.metrics.bleu import BLEU

    try:
        return BLEU(tokenize=bleu_tokenizer(tgt))
    except (ImportError, RuntimeError) as exc:
        raise SimulError(
            f"BLEU's {bleu_tokenizer(tgt)} tokenizer is not usable ({exc}); `pip install 'sacrebleu[ja]'`"
        ) from None


def chrf_metric() -> CHRF:
    """sacrebleu's default chrF (chrF2: character order 6, word order 0, beta 2), for every language."""
    from sacrebleu.metrics.chrf import CHRF

    return CHRF()


def sacrebleu_metric(name: str, tgt: str) -> BLEU | CHRF:
    """The sacrebleu object of ``bleu`` or ``chrf`` for a target language, as every simul figure uses it."""
    if name == "bleu":
        return bleu_metric(tgt)
    if name == "chrf":
        return chrf_metric()
    raise ValueError(f"sacrebleu_metric: {name!r} is neither 'bleu' nor 'chrf'")


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[tuple[str, ...]], tgt: str) -> Score:
    """Corpus BLEU with the tokenizer of the target language, against every reference of each segment."""
    metric = bleu_metric(tgt)
    result = metric.corpus_score(list(hypotheses), reference_streams(references))  # type: ignore[arg-type]
    return Score(score=float(result.score), signature=str(metric.get_signature()))


def corpus_chrf(hypotheses: Sequence[str], references: Sequence[tuple[str, ...]]) -> Score:
    """Corpus chrF (sacrebleu defaults: chrF2, character order 6, word order 0), every reference."""
    metric = chrf_metric()
    result = metric.corpus_score(list(hypotheses), reference_streams(references))  # type: ignore[arg-type]
    return Score(score=float(result.score), signature=str(metric.get_signature()))


def sentence_chrf(hypothesis: str, references: tuple[str, ...]) -> float:
    """chrF of one sentence (for per-stream comparisons), same settings as the corpus score."""
    if isinstance(references, str):
        raise TypeError("sentence_chrf takes a tuple of references")
    return float(chrf_metric().sentence_score(hypothesis, list(references)).score)

"""Word error rate of recognized transcripts against reference transcripts.

    WER = (S + D + I) / N

with S substitutions, D deletions and I insertions of the minimum word-level edit (Levenshtein) alignment
of the hypothesis to the reference, as jiwer computes it (where several alignments cost the same, jiwer
picks which edits they count as), and N the number of reference words. Over several segments the edits
and reference words are summed first (corpus WER), so long segments weigh more than short ones. WER can
exceed 1 when the hypothesis has many extra words; with an empty reference it is 0 for an empty hypothesis
and counted as all insertions otherwise.

Both sides are normalized here before jiwer compares them, so casing and punctuation (which Whisper adds and a
transcript may lack) are not errors: lower case, hyphens, slashes and dashes become spaces, other
characters that are neither letters, digits nor apostrophes are dropped, and an apostrophe at a word's
edge is dropped too (``"task-oriented,"`` -> ``task oriented``; ``"Let's"`` -> ``let's``). Numbers are not
spelled out (``2022`` and ``twenty twenty-two`` differ).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from simul.common.errors import SimulError

_SPLIT = "-‐‑‒–—/"
_APOSTROPHES = "'’"


def normalize(text: str) -> list[str]:
    """The words WER compares (see the module docstring)."""
    words: list[str] = []
    for raw in text.casefold().translate({ord(c): " " for c in _SPLIT}).split():
        kept = "".join(ch for ch in raw if ch.isalnum() or ch in _APOSTROPHES).strip(_APOSTROPHES)
        if kept:
            words.append(kept.replace("’", "'"))
    return words


@dataclass(frozen=True)
class WordErrors:
    """Edit counts of one or more hypothesis/reference pairs."""

    substitutions: int = 0
    deletions: int = 0
    insertions: int = 0
    reference_words: int = 0

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def wer(self) -> float:
        if self.reference_words == 0:
            return 0.0 if self.errors == 0 else float(self.errors)
        return self.errors / self.reference_words

    def __add__(self, other: WordErrors) -> WordErrors:
        return WordErrors(
            self.substitutions + other.substitutions,
            self.deletions + other.deletions,
            self.insertions + other.insertions,
            self.reference_words + other.reference_words,
        )

    def to_json(self) -> dict[str, float | int]:
        return {
            "wer": round(self.wer, 4),
            "substitutions": self.substitutions,
            "deletions": self.deletions,
            "insertions": self.insertions,
            "reference_words": self.reference_words,
        }


def word_errors(reference: str, hypothesis: str) -> WordErrors:
    """Substitutions, deletions and insertions of the minimum edit alignment of one pair."""
    return corpus_errors([(reference, hypothesis)])


def corpus_errors(pairs: Sequence[tuple[str, str]]) -> WordErrors:
    """Summed edits of (reference, hypothesis) pairs: ``.wer`` is the corpus WER."""
    total = WordErrors()
    references: list[str] = []
    hypotheses: list[str] = []
    for reference, hypothesis in pairs:
        ref, hyp = normalize(reference), normalize(hypothesis)
        if not ref or not hyp:  # nothing to align (jiwer refuses an empty reference): all edits one way
            total = total + WordErrors(deletions=len(ref), insertions=len(hyp), reference_words=len(ref))
        else:
            references.append(" ".join(ref))  # normalized words hold no spaces: jiwer splits them back
            hypotheses.append(" ".join(hyp))
    if references:
        out = _jiwer().process_words(references, hypotheses)
        total = total + WordErrors(
            out.substitutions, out.deletions, out.insertions, out.hits + out.substitutions + out.deletions
        )
    return total


def _jiwer() -> Any:
    try:
        import jiwer
    except ImportError:
        raise SimulError(
            "word error rates need jiwer, which is not installed: install the asr extra with "
            "`pip install 'simul[asr]'` (or `make setup`)"
        ) from None
    return jiwer

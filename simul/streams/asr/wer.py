"""Word error rate of recognized transcripts against reference transcripts.

    WER = (S + D + I) / N

with S substitutions, D deletions and I insertions of the minimum word-level edit (Levenshtein) alignment
of the hypothesis to the reference, and N the number of reference words. Over several segments the edits
and reference words are summed first (corpus WER), so long segments weigh more than short ones. WER can
exceed 1 when the hypothesis has many extra words; with an empty reference it is 0 for an empty hypothesis
and counted as all insertions otherwise.

Both sides are normalized before they are compared, so casing and punctuation (which Whisper adds and a
transcript may lack) are not errors: lower case, hyphens, slashes and dashes become spaces, other
characters that are neither letters, digits nor apostrophes are dropped, and an apostrophe at a word's
edge is dropped too (``"task-oriented,"`` -> ``task oriented``; ``"Let's"`` -> ``let's``). Numbers are not
spelled out (``2022`` and ``twenty twenty-two`` differ).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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
    """Substitutions, deletions and insertions of the minimum edit alignment (ties prefer substitutions)."""
    ref, hyp = normalize(reference), normalize(hypothesis)
    # cost[j] = (edits, subs, dels, ins) to turn ref[:i] into hyp[:j]; one row at a time
    row: list[tuple[int, int, int, int]] = [(j, 0, 0, j) for j in range(len(hyp) + 1)]
    for i in range(1, len(ref) + 1):
        new: list[tuple[int, int, int, int]] = [(i, 0, i, 0)]
        for j in range(1, len(hyp) + 1):
            diag = row[j - 1]
            same = ref[i - 1] == hyp[j - 1]
            best = diag if same else (diag[0] + 1, diag[1] + 1, diag[2], diag[3])
            up = row[j]  # ref word i unmatched: a deletion
            if up[0] + 1 < best[0]:
                best = (up[0] + 1, up[1], up[2] + 1, up[3])
            left = new[j - 1]  # hyp word j extra: an insertion
            if left[0] + 1 < best[0]:
                best = (left[0] + 1, left[1], left[2], left[3] + 1)
            new.append(best)
        row = new
    _, subs, dels, ins = row[-1]
    return WordErrors(subs, dels, ins, len(ref))


def corpus_errors(pairs: Sequence[tuple[str, str]]) -> WordErrors:
    """Summed edits of (reference, hypothesis) pairs: ``.wer`` is the corpus WER."""
    total = WordErrors()
    for reference, hypothesis in pairs:
        total = total + word_errors(reference, hypothesis)
    return total

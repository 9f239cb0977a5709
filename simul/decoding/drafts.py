"""Helpers on drafts: sentence-final tokens (--ending) and n-gram lookup in the previous output (--resync)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

# Sentence-final punctuation and the closing quotes and brackets that may follow it.
ENDING_CHARS = frozenset(".!?\u3002\uff01\uff1f\u2026\"'\u201c\u201d\u300d\u300f)\uff09]\u00bb")


def is_ending_piece(piece: bytes) -> bool:
    text = piece.decode("utf-8", errors="ignore").strip()
    return bool(text) and all(ch in ENDING_CHARS for ch in text)


def ending_length(tokens: Sequence[int], piece: Callable[[int], bytes]) -> int:
    """How many tokens at the end of ``tokens`` are sentence-final punctuation or closing quotes."""
    n = 0
    while n < len(tokens) and is_ending_piece(piece(tokens[len(tokens) - 1 - n])):
        n += 1
    return n


def find_ngram(haystack: Sequence[int], needle: Sequence[int]) -> int:
    """Index of the first occurrence of ``needle`` in ``haystack``, or -1."""
    n = len(needle)
    first = needle[0]
    for i in range(len(haystack) - n + 1):
        if haystack[i] == first and list(haystack[i : i + n]) == list(needle):
            return i
    return -1

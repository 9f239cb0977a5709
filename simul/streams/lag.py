"""Fixed word-lag streams (SPEC "Streams"): step t reveals the first min(t*w, n) words of an n-word source.

Edge cases, as simul defines them:

* Words are maximal runs of non-whitespace characters. Leading, trailing and repeated whitespace (spaces,
  tabs, no-break spaces) is collapsed: a step's source is its words joined by single spaces.
* A sentence of n <= w words becomes a single, final step holding the whole sentence.
* Sources written without spaces (Chinese, Japanese, Thai: ``Language.unspaced``) have no whitespace words,
  so each non-space character counts as one unit and the lag is counted in characters; the prefix keeps the
  characters (and any spaces between them) exactly as written.
* An empty or whitespace-only source has no steps and is an error.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\S+")


def lag_prefixes(text: str, lag: int, unspaced: bool = False) -> list[str]:
    """The source prefixes of a fixed-lag stream, one per step; the last is the whole (normalised) text."""
    if lag < 1:
        raise ValueError(f"lag must be at least 1 word, got {lag}")
    if unspaced:
        return _char_prefixes(text, lag)
    words = _WORD.findall(text)
    if not words:
        raise ValueError("source is empty")
    n = len(words)
    ends = [*range(lag, n, lag), n]
    return [" ".join(words[:end]) for end in ends]


def _char_prefixes(text: str, lag: int) -> list[str]:
    stripped = " ".join(_WORD.findall(text))
    positions = [i for i, ch in enumerate(stripped) if not ch.isspace()]
    if not positions:
        raise ValueError("source is empty")
    n = len(positions)
    ends = [*range(lag, n, lag), n]
    return [stripped[: positions[end - 1] + 1] for end in ends]

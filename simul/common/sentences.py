"""Where a sentence ends in a stream of words (shared by long-form decoding and ASR buffer trimming)."""

from __future__ import annotations

_ENDS = (".", "?", "!", "…", "。", "？", "！")
_CLOSERS = "\"'”’»)]}」』）"
# Words ending in "." that do not end a sentence (lower-cased, closing characters removed).
_ABBREVIATIONS = frozenset(
    {
        "mr.",
        "mrs.",
        "ms.",
        "dr.",
        "prof.",
        "st.",
        "vs.",
        "etc.",
        "e.g.",
        "i.e.",
        "cf.",
        "fig.",
        "no.",
        "al.",
        "approx.",
        "jr.",
        "sr.",
        "inc.",
        "ltd.",
        "u.s.",
        "a.m.",
        "p.m.",
    }
)


def is_sentence_end(unit: str) -> bool:
    """Does this word end a sentence: ``. ? ! …`` (or CJK ones), closing quotes allowed, common abbreviations
    such as ``Dr.`` or ``e.g.`` and list numbers such as ``3.`` excepted."""
    word = unit.rstrip(_CLOSERS)
    if not word.endswith(_ENDS):
        return False
    if word.endswith(".") and word.lower().lstrip("\"'“‘«([{") in _ABBREVIATIONS:
        return False
    # "3." or "2.5." in a list or number: a single digit run before the dot is a numbering, not an end
    return not (word.endswith(".") and word[:-1].isdigit() and len(word) <= 3)

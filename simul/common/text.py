"""Byte and character helpers: model tokens are bytes, and a token boundary may fall inside a character."""

from __future__ import annotations


def complete_prefix(data: bytes) -> bytes:
    """``data`` without a trailing, incomplete UTF-8 character (at most 3 bytes are dropped).

    Byte-level tokens can split a multi-byte character; what is displayed must never show half of one.
    """
    end = len(data)
    # Walk back over at most 3 continuation bytes to the lead byte of the last character.
    i = end - 1
    while i >= 0 and end - i <= 4 and (data[i] & 0xC0) == 0x80:
        i -= 1
    if i < 0 or end - i > 4:
        return data
    lead = data[i]
    if lead < 0x80:
        need = 1
    elif lead >> 5 == 0b110:
        need = 2
    elif lead >> 4 == 0b1110:
        need = 3
    elif lead >> 3 == 0b11110:
        need = 4
    else:  # an invalid lead byte: leave it to the decoder's replacement character
        return data
    return data if end - i >= need else data[:i]


def decode_text(data: bytes) -> str:
    """Decode model output bytes for display: no trailing half character, invalid bytes replaced, trimmed."""
    return complete_prefix(data).decode("utf-8", errors="replace").strip()

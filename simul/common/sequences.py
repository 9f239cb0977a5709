"""Helpers on sequences that several stages share (streams, decoding, metrics, reports)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def common_prefix_length(a: Sequence[T], b: Sequence[T]) -> int:
    """How many leading items ``a`` and ``b`` share (tokens, characters or words): |LCP(a, b)|."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i

"""LocalAgreement-n (Liu et al., 2020; the policy SimulStreaming applies to its LLM stage): show only what the
last n outputs agree on.

    display_t = LCP(Y^(t-n+1), ..., Y^t)    at non-final steps (nothing until n outputs exist)
    display_t = Y^t                          at the final step

LCP is the longest common prefix in words (whitespace-separated) for spaced scripts, and in characters for
languages written without spaces (zh, ja), so a word is never shown half-agreed. It is a display policy only:
the decoder's drafts are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from simul.common.sequences import common_prefix_length


def local_agreement(outputs: Sequence[str], n: int, unspaced: bool) -> str:
    """The longest common prefix of the last ``n`` of ``outputs`` ("" while fewer than n exist)."""
    if n < 1:
        raise ValueError(f"LocalAgreement-n needs n >= 1, got {n}")
    if len(outputs) < n:
        return ""
    last = list(outputs[-n:])
    if unspaced:
        length = min(common_prefix_length(last[0], other) for other in last[1:]) if n > 1 else len(last[0])
        return last[0][:length].rstrip()
    words = [o.split() for o in last]
    length = min(common_prefix_length(words[0], other) for other in words[1:]) if n > 1 else len(words[0])
    return " ".join(words[0][:length])

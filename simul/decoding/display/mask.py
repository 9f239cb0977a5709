"""mask-k (SPEC "Decoding one stream"): hide the last k tokens of a non-final output.

With display-only masking the hidden tokens still form the next draft; with output masking (the decoder's
``mask="output"``) the same cut also shortens the draft.
"""

from __future__ import annotations

from collections.abc import Sequence


def hide_last(tokens: Sequence[int], k: int) -> list[int]:
    """``tokens`` without its last ``k`` (all of them when there are k or fewer)."""
    return list(tokens[: max(0, len(tokens) - k)])

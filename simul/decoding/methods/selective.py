"""How selective an n-gram drafter is (docs/methods.md, "The n-gram drafters"): how long its drafts may be,
how short they may not be, and when it rests after poor drafts.

Why: under exact greedy acceptance a draft whose first token is rejected costs nothing (it is decided on the
row already in hand), but one whose first token is kept is verified in a pass as wide as the draft instead of
a one-token pass. On a CPU a pass of k rows costs more than a one-token pass (a pass of 10 rows was measured
at about three), so a draft pays only when enough of its tokens after the first are kept. Hence short drafts
(``draft_max``), none too short to save a pass (``draft_min``, llama.cpp's ``--draft-min``) and, as
llama.cpp's ``ngram-mod`` does, a look at the drafter's own record: after ``rest_after`` drafts in a row that
cost a wide pass and kept less than half of their tokens, the drafter proposes nothing more until the next
step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class DraftGate:
    """One drafter's gate over one stream (its state lives as long as the drafter)."""

    draft_min: int
    draft_max: int
    rest_after: int = 0  # 0: never rests
    poor: int = 0  # poor drafts in a row so far
    resting: bool = False

    def start(self) -> None:
        """A new step: a resting drafter drafts again, its count of poor drafts kept."""
        self.resting = False

    def admit(self, tokens: Sequence[int], room: int) -> list[int]:
        """The draft as it may be proposed: cut to ``draft_max`` and the room left, empty when it is then
        shorter than ``draft_min`` (or than one token) or the drafter rests."""
        if self.resting:
            return []
        kept = list(tokens[: min(self.draft_max, room)])
        return kept if len(kept) >= max(1, self.draft_min) else []

    def kept(self, n: int, length: int) -> None:
        """``n`` of a ``length``-token draft were kept. A draft whose first token was rejected cost no pass
        and does not count; one that kept less than half of its tokens is poor."""
        if n == 0 or not self.rest_after:
            return
        if 2 * n < length:
            self.poor += 1
            if self.poor >= self.rest_after:
                self.resting, self.poor = True, 0
        else:
            self.poor = 0

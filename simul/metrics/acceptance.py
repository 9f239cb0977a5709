"""Draft acceptance (SPEC "Metrics"; SSBD paper, section 4.1).

    A/D = 100 * sum(accepted draft tokens) / sum(draft tokens), over the steps that had a draft
    A/O = 100 * sum(accepted draft tokens) / sum(output tokens), over all steps
    ideal speedup = 1 / (1 - A/O / 100): the speedup if verifying the draft cost nothing

Output tokens are counted per update: a step that keeps 20 draft tokens and decodes 3 more emits 23.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Acceptance:
    accepted: int
    drafted: int
    output: int

    @property
    def ad(self) -> float | None:
        """A/D in percent (None when no step had a draft, as for RT)."""
        return 100.0 * self.accepted / self.drafted if self.drafted else None

    @property
    def ao(self) -> float:
        """A/O in percent."""
        return 100.0 * self.accepted / self.output if self.output else 0.0

    @property
    def ideal_speedup(self) -> float | None:
        share = self.accepted / self.output if self.output else 0.0
        return 1.0 / (1.0 - share) if share < 1.0 else None


def acceptance(steps: Iterable[tuple[int, int, int]]) -> Acceptance:
    """From (draft tokens, accepted, output tokens) per step."""
    accepted = drafted = output = 0
    for draft_tokens, accepted_tokens, output_tokens in steps:
        if draft_tokens:
            drafted += draft_tokens
        accepted += accepted_tokens
        output += output_tokens
    return Acceptance(accepted=accepted, drafted=drafted, output=output)

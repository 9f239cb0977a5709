"""An example of a decoding method from outside simul (docs/methods.md, "Methods from outside simul").

Re-translation that drafts the previous output, less its last ``hide`` tokens, and keeps the draft only
where the model agrees (exact greedy acceptance): the outputs are RT's, decoded with fewer one-token passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from simul.decoding.methods import api

__version__ = "0.1"


class PreviousDraft:
    """Drafts the previous output at the start of each step (simul asks the first drafter at position 0)."""

    name = "previous-exact"

    def __init__(self, hide: int) -> None:
        self.hide = hide
        self.previous: tuple[int, ...] = ()

    def start(self, step: api.StepStart) -> None:
        self.previous = step.previous

    def propose(self, at: api.Position) -> api.Draft | None:
        tokens = self.previous[: max(0, len(self.previous) - self.hide)]
        return api.Draft.of(self.name, tokens, api.EXACT) if tokens else None

    def kept(self, draft: api.Draft, n: int) -> None:
        pass  # a drafter may learn from what was kept, within one stream


class ExactRetranslation:
    """``simul eval --method simul_example_method:ExactRetranslation --method-option hide=2``"""

    protocol_version = 1  # the version of simul's method interface this was written for
    options: ClassVar[Mapping[str, str]] = {"hide": "0"}  # the options it takes, and their defaults

    def __init__(self, options: Mapping[str, str]) -> None:
        self.hide = int(options["hide"])  # a ValueError names a bad option
        if self.hide < 0:
            raise ValueError(f"hide must be 0 or more, got {self.hide}")

    def shape(self) -> api.MethodShape:
        hide = self.hide
        return api.MethodShape(
            first=lambda vocab: PreviousDraft(hide),  # called once per stream: fresh drafters
            tails=(),
            display=api.MaskDisplay(0),
        )

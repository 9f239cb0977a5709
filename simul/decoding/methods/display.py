"""The display policies (SPEC "Decoding one stream"): mask-k and LocalAgreement-n. Neither feeds back into
decoding; output mask-k, which also shortens the next draft, is the previous-output drafter's ``mask_k``."""

from __future__ import annotations

from dataclasses import dataclass

from simul.decoding.display.local_agreement import local_agreement
from simul.decoding.display.mask import hide_last
from simul.decoding.methods.protocol import DisplayView


@dataclass(frozen=True)
class MaskDisplay:
    """Show the output without its last ``k`` tokens at non-final steps (never cutting a character), all of it
    at the final step; k = 0 shows every output whole."""

    k: int = 0

    @property
    def name(self) -> str:
        return f"mask{self.k}" if self.k else "all"

    def show(self, view: DisplayView) -> str:
        if view.final or not self.k:
            return view.outputs[-1]
        return view.text(hide_last(view.tokens, self.k))


@dataclass(frozen=True)
class AgreementDisplay:
    """LocalAgreement-n (simul.decoding.display.local_agreement): at non-final steps, what the last ``n``
    outputs agree on; at the final step the whole output."""

    n: int = 2

    @property
    def name(self) -> str:
        return f"la{self.n}"

    def show(self, view: DisplayView) -> str:
        if view.final:
            return view.outputs[-1]
        return local_agreement(view.outputs, self.n, view.unspaced)

"""The acceptance rules (SPEC "Decoding one stream" and "Speculative baselines"): SSBD's biased rule, exact
greedy acceptance, and accept-all (CD's draft, taken unverified)."""

from __future__ import annotations

from dataclasses import dataclass

from simul.decoding.acceptance import accepts
from simul.decoding.methods.protocol import Row


@dataclass(frozen=True)
class BiasedRule:
    """SSBD's rule: keep D_i while D_i = argmax of (1 - beta) softmax(p_i) + beta onehot(D_i);
    ties keep it (simul.decoding.acceptance.accepts). With beta >= 0.5 every token is kept whatever p_i says,
    so the rule is blind: the decoder computes no rows for it. beta = 0 decides as exact greedy."""

    beta: float

    @property
    def name(self) -> str:
        return "biased"

    @property
    def bias(self) -> float:
        return self.beta

    @property
    def verifies(self) -> bool:
        return True

    @property
    def blind(self) -> bool:
        return self.beta >= 0.5

    def accepts(self, row: Row, token: int) -> bool:
        return accepts(row, token, self.beta)


@dataclass(frozen=True)
class ExactGreedy:
    """Keep D_i while it is the argmax of p_i (ties keep it): the output equals plain greedy decoding, up to
    the numeric noise between batched and one-token logits (speculative decoding's lossless rule)."""

    @property
    def name(self) -> str:
        return "exact"

    @property
    def bias(self) -> float:
        return 0.0

    @property
    def verifies(self) -> bool:
        return True

    @property
    def blind(self) -> bool:
        return False

    def accepts(self, row: Row, token: int) -> bool:
        return accepts(row, token, 0.0)


@dataclass(frozen=True)
class AcceptAll:
    """Keep every token without looking (CD: the previous output is kept unchanged and only re-encoded)."""

    @property
    def name(self) -> str:
        return "accept-all"

    @property
    def bias(self) -> float:
        return 0.0

    @property
    def verifies(self) -> bool:
        return False

    @property
    def blind(self) -> bool:
        return True

    def accepts(self, row: Row, token: int) -> bool:
        return True


EXACT = ExactGreedy()
ACCEPT_ALL = AcceptAll()

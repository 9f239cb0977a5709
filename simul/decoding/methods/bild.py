"""BiLD's rollback policy as an acceptance rule (Kim et al. 2023, "Speculative Decoding with Big Little
Decoder", NeurIPS; section 3.4 and appendix 7.1.2).

BiLD lets the small model decode while its top-1 probability stays at or above the fallback threshold
alpha_FB (section 3.3: the draft model drafter's confidence bound, simul.decoding.methods.model_drafter's
``p_min``); the large model then reads the small model's tokens in one pass and rolls back from the first
token y_m whose distance to its own prediction exceeds the rollback threshold alpha_RB, replacing y_m with
its own pick. The distance is the cross entropy of the small model's hard label under the large model's
distribution (appendix 7.1.2):

    d_m = -log softmax(p_L,m)[y_m]        keep y_m while d_m <= alpha_RB

The defaults (simul.request.method_settings: alpha_FB 0.5, alpha_RB 2, at most 10 draft tokens) lie in
the paper's machine-translation sweep (fallback thresholds in [0.5, 0.9], rollback thresholds in [1, 10],
the small model generating at most 10 tokens at a time). A kept token need not be the large model's
argmax, so BiLD is not greedy-exact: its outputs may differ from the target's, and its quality loss
against RT is part of its result.

simul's flow differs from the paper's Algorithm 1 in one place: the target's own token comes first at a
step (from the prompt pass, which computes its row anyway) and after every verification, and the draft
model drafts after it; BiLD's small model would start the step itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simul.decoding.methods.protocol import Row


def cross_entropy(row: Row, token: int) -> float:
    """-log softmax(row)[token], in nats (float64 log-sum-exp)."""
    values = np.asarray(row, dtype=np.float64)
    top = values.max()
    return float(top + np.log(np.exp(values - top).sum()) - values[token])


@dataclass(frozen=True)
class RollbackRule:
    """Keep D_i while -log softmax(p_i)[D_i] <= ``threshold`` (BiLD's rollback policy, alpha_RB)."""

    threshold: float

    @property
    def name(self) -> str:
        return "rollback"

    @property
    def bias(self) -> float:
        return self.threshold  # recorded with each decision: tests/claims.py checks against it

    @property
    def verifies(self) -> bool:
        return True

    @property
    def blind(self) -> bool:
        return False

    def accepts(self, row: Row, token: int) -> bool:
        return cross_entropy(row, token) <= self.threshold

"""A test-only record of every decision the decoders take from a logits row.

Tests (and tools/logit_margin.py) turn it on with :func:`recording`; the decoders then report each decision
through :func:`record`: a draft token checked by an acceptance rule (``verify``: a draft verified in a forward
pass, SSBD's and CD's previous output, re-synchronised proposals; ``steer``: a one-token draft decided on the
row in hand, the target bias after a rejection) and each greedy pick (``greedy``). Each draft decision names
its rule (simul.decoding.methods.rules: ``biased``, ``exact``, ``accept-all``) and the drafter that proposed
the token (``previous``, ``resync``, ``target``), so that every kept token can be checked against the rule of
its own drafter. Every decision keeps what any acceptance rule needs from its row (the two best tokens, the
draft token's own logit and the row's log-sum-exp, so that softmax probabilities follow), and the whole row
when asked for, so that a test can check a rule against the row it was applied to, independently of the
rule's own code.

Off (the default), the decoders test one module attribute (``current is None``) per decision and do nothing
else; nothing is recorded in real runs. The logits a decoder holds are only valid until its next forward pass,
so everything is copied when recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from simul.decoding.backend import Logits

# Where a decision was taken: (stream id, step index, method key); a long-form window reports step 0 of its
# talk.
Where = tuple[str, int, str]

VERIFY = "verify"  # a draft token under its acceptance rule (the previous output, a re-synchronised proposal)
STEER = "steer"  # a one-token draft decided on the row in hand (the target bias toward the rejected draft)
GREEDY = "greedy"  # the argmax pick of greedy decoding (its row's margin is what near-ties flip)


@dataclass(frozen=True)
class RowFacts:
    """What an acceptance rule needs from one logits row p (and the margin of its greedy choice)."""

    best: int  # argmax p (the first, as numpy picks it)
    second: int  # argmax of p without ``best``
    top: float  # p[best]
    runner_up: float  # p[second]
    own: float  # p[token] for the token decided on
    logsumexp: float  # log sum exp p, so that softmax(p)[i] = exp(p[i] - logsumexp)
    logits: npt.NDArray[np.float32] | None = None  # the whole row, when the recording keeps rows

    @property
    def margin(self) -> float:
        """Top-1 minus top-2 logit: how far the greedy choice is from a tie."""
        return self.top - self.runner_up

    @staticmethod
    def of(row: Logits, token: int, keep_row: bool) -> RowFacts:
        values = np.asarray(row, dtype=np.float32)
        best = int(np.argmax(values))
        others = values.copy()
        others[best] = -np.inf
        second = int(np.argmax(others))
        top = float(values[best])
        lse = top + float(np.log(np.exp(values.astype(np.float64) - top).sum()))
        return RowFacts(
            best=best,
            second=second,
            top=top,
            runner_up=float(values[second]),
            own=float(values[token]),
            logsumexp=lse,
            logits=values.copy() if keep_row else None,
        )


@dataclass(frozen=True)
class Decision:
    """One decision: ``token`` (the draft token, or the greedy pick) was ``accepted`` under ``rule`` with
    ``bias``, proposed by ``drafter`` (None for greedy picks) as the ``index``-th token of its draft.

    ``row`` is None when the rule accepted without logits (a blind rule: SSBD with beta >= 0.5 computes none
    for the biased part of a draft, CD's accept-all none at all).
    """

    kind: str
    where: Where | None
    token: int
    bias: float
    accepted: bool
    row: RowFacts | None
    rule: str = ""
    drafter: str | None = None
    index: int = 0


@dataclass
class DecisionTrace:
    """The decisions recorded while :func:`recording` was on, in the order they were taken."""

    keep_rows: bool = False
    decisions: list[Decision] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[Decision]:
        return [d for d in self.decisions if d.kind == kind]

    def at(self, where: Where) -> list[Decision]:
        return [d for d in self.decisions if d.where == where]


# The recording in progress; None (the default) turns recording off.
current: DecisionTrace | None = None


@contextmanager
def recording(keep_rows: bool = False) -> Iterator[DecisionTrace]:
    """Record every decision taken inside the block (``keep_rows``: with a copy of each whole row)."""
    global current
    previous = current
    current = trace = DecisionTrace(keep_rows=keep_rows)
    try:
        yield trace
    finally:
        current = previous


def record(
    kind: str,
    where: Where | None,
    row: Logits | None,
    token: int,
    bias: float,
    accepted: bool,
    rule: str = "",
    drafter: str | None = None,
    index: int = 0,
) -> None:
    """Add one decision to the recording in progress; callers test ``current is not None`` first."""
    trace = current
    if trace is None:
        return
    facts = None if row is None else RowFacts.of(row, token, trace.keep_rows)
    trace.decisions.append(Decision(kind, where, token, bias, accepted, facts, rule, drafter, index))

"""Checks of the acceptance claims against a decision trace (simul.decoding.trace), shared by the tiny-model
and gemma tests and meant for later drafters and acceptance rules as well.

The reference rule is computed here from the recorded row, independently of simul.decoding.acceptance:
SPEC "Decoding one stream": keep D_i while D_i = argmax of p' = (1 - beta) softmax(p_i) + beta onehot(D_i),
ties keeping it.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from simul.decoding import trace as tr
from simul.decoding.records import StreamResult


def biased_rule(decision: tr.Decision) -> bool:
    """Does the SPEC's biased rule keep ``decision.token`` against its own row?"""
    facts = decision.row
    assert facts is not None
    beta, token = decision.bias, decision.token
    if facts.logits is not None:  # the whole row: build the mixture itself
        logits = facts.logits.astype(np.float64)
        q = np.exp(logits - logits.max())
        q /= q.sum()
        mixture = (1.0 - beta) * q
        mixture[token] += beta
        return bool(mixture[token] >= mixture.max())
    # from the facts: the best rival of the token is the top-1 row entry, or the top-2 when the token is top-1
    own = np.exp(facts.own - facts.logsumexp)
    rival = np.exp((facts.runner_up if facts.best == token else facts.top) - facts.logsumexp)
    if facts.own >= facts.top:
        return True
    return bool((1.0 - beta) * own + beta >= (1.0 - beta) * rival)


def check_decisions(recorded: tr.DecisionTrace, results: list[StreamResult]) -> Counter[str]:
    """Assert the claims on every recorded decision of ``results`` and return what was seen, counted:

    * every verified draft token is kept exactly when the biased rule keeps it against its own row (and one
      kept without logits has beta >= 0.5); at beta 0, every kept token is the argmax of its row;
    * every greedy pick is the argmax of its row; every target-biased token follows the same rule;
    * the trace is the decoding: per step, the draft tokens verified are kept up to the first rejection, which
      ends the verification, and the kept ones are the step's accepted output tokens.
    """
    seen: Counter[str] = Counter()
    for decision in recorded.decisions:
        facts = decision.row
        if facts is None:
            assert decision.kind == tr.VERIFY and decision.accepted and decision.bias >= 0.5, decision
            seen["kept without logits"] += 1
            continue
        if decision.kind == tr.GREEDY:
            assert decision.token == facts.best and facts.own == facts.top, decision
            seen["greedy"] += 1
            continue
        assert biased_rule(decision) == decision.accepted, decision
        if decision.accepted and decision.bias == 0.0:
            assert facts.own >= facts.top, f"kept at beta 0 but not the argmax: {decision}"
        argmax = facts.own >= facts.top
        what = "kept" if decision.accepted else "rejected"
        seen[f"{decision.kind} {what}{'' if argmax else ' (not the argmax)'}"] += 1
    for result in results:
        for record in result.steps:
            where = (result.stream_id, record.step, result.method.key)
            verified = [d for d in recorded.at(where) if d.kind == tr.VERIFY]
            if record.resync_drafted:
                continue  # proposals after a divergence mix with greedy picks; the rule was checked above
            kept = [d.token for d in verified if d.accepted]
            assert [d.accepted for d in verified] == [True] * len(kept) + [False] * (
                len(verified) - len(kept)
            )
            assert len(kept) == record.accepted and kept == record.output_ids[: record.accepted], where
            assert len(verified) == record.draft_tokens or (
                len(verified) == record.accepted + 1 and record.accepted < record.draft_tokens
            ), (where, len(verified), record.accepted, record.draft_tokens)
    return seen

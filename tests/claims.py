"""Checks of the acceptance claims against a decision trace (simul.decoding.trace), shared by the tiny-model
and gemma tests and meant for every drafter and acceptance rule (simul.decoding.methods).

The reference rules are computed here from the recorded row, independently of simul.decoding.acceptance and
simul.decoding.methods.rules:
* ``biased`` (SPEC "Decoding one stream"): keep D_i while D_i = argmax of
  p' = (1 - beta) softmax(p_i) + beta onehot(D_i), ties keeping it;
* ``exact`` (SPEC "Speculative baselines"): keep D_i while D_i = argmax p_i, ties keeping it;
* ``accept-all`` (CD): keep every token, reading no logits;
* ``rollback`` (BiLD, Kim et al. 2023, section 3.4): keep D_i while its cross entropy under p_i,
  -log softmax(p_i)[D_i], is at most alpha_RB (recorded as the decision's bias).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from simul.decoding import trace as tr
from simul.decoding.records import StepRecord, StreamResult


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


def exact_rule(decision: tr.Decision) -> bool:
    """Is ``decision.token`` the argmax of its own row (ties count)?"""
    facts = decision.row
    assert facts is not None
    if facts.logits is not None:
        return bool(facts.logits[decision.token] >= facts.logits.max())
    return facts.own >= facts.top


def rollback_rule(decision: tr.Decision) -> bool:
    """Is ``decision.token``'s cross entropy under its own row at most alpha_RB (``decision.bias``)?"""
    facts = decision.row
    assert facts is not None
    if facts.logits is not None:
        logits = facts.logits.astype(np.float64)
        top = logits.max()
        lse = top + np.log(np.exp(logits - top).sum())
        return bool(lse - logits[decision.token] <= decision.bias)
    return facts.logsumexp - facts.own <= decision.bias


REFERENCE_RULES = {"biased": biased_rule, "exact": exact_rule, "rollback": rollback_rule}
# The rule each n-gram drafter's tokens are verified by (docs/methods.md, "The n-gram drafters"): exact greedy
# acceptance, whichever method they serve (SSBD's biased rule is the previous output's and --resync's)
DRAFTER_RULES = {"lookup": "exact", "ngram-cache": "exact"}


def check_decisions(recorded: tr.DecisionTrace, results: list[StreamResult]) -> Counter[str]:
    """Assert the claims on every recorded decision of ``results`` and return what was seen, counted:

    * every draft decision names its drafter and rule; every token it keeps or rejects is kept or rejected by
      the reference rule of that name against its own row; a token kept without a row has a blind rule
      (accept-all, or the biased rule at beta >= 0.5); at beta 0, every kept token is the argmax of its row;
    * every greedy pick is the argmax of its row;
    * the trace is the decoding: per step, replaying the decisions (kept draft and steered tokens, greedy
      picks) gives the step's output tokens (plus the stop token when one ended it) and the drafter of each;
      a draft's tokens are decided in order, each after a kept one; a rejection is always followed by the
      model's own pick; a draft starts only at the step's start or after the model's own or a steered
      token, never right after another draft; the first draft's decisions are kept up to the first
      rejection, which ends it, and the kept ones are the step's accepted tokens;
    * each drafter's tokens are decided by its own rule (the n-gram drafters': exact greedy, DRAFTER_RULES),
      and no drafter has more tokens decided than it offered, nor other kept tokens than those marked its own.
    """
    seen: Counter[str] = Counter()
    for decision in recorded.decisions:
        facts = decision.row
        if decision.kind == tr.GREEDY:
            assert facts is not None and decision.drafter is None, decision
            assert decision.token == facts.best and facts.own == facts.top, decision
            seen["greedy"] += 1
            continue
        assert decision.kind in (tr.VERIFY, tr.STEER) and decision.drafter and decision.rule, decision
        if facts is None:
            blind = decision.rule == "accept-all" or (decision.rule == "biased" and decision.bias >= 0.5)
            assert decision.kind == tr.VERIFY and decision.accepted and blind, decision
            seen["accept-all" if decision.rule == "accept-all" else "kept without logits"] += 1
            continue
        assert decision.rule in REFERENCE_RULES, decision
        assert DRAFTER_RULES.get(decision.drafter, decision.rule) == decision.rule, decision
        assert REFERENCE_RULES[decision.rule](decision) == decision.accepted, decision
        if decision.accepted and decision.bias == 0.0:
            assert facts.own >= facts.top, f"kept at beta 0 but not the argmax: {decision}"
        argmax = facts.own >= facts.top
        what = "kept" if decision.accepted else "rejected"
        seen[f"{decision.kind} {what}{'' if argmax else ' (not the argmax)'}"] += 1
    for result in results:
        for record in result.steps:
            if record.talk is not None:
                continue  # a talk's windows all report step 0 of the talk
            _check_step(recorded.at((result.stream_id, record.step, result.method.key)), result, record)
    return seen


def _check_step(decisions: list[tr.Decision], result: StreamResult, record: StepRecord) -> None:
    where = (result.stream_id, record.step, result.method.key)
    replayed: list[int] = []
    drafters: list[str] = []
    for before, decision in zip([None, *decisions], decisions, strict=False):
        if decision.kind == tr.VERIFY and decision.index > 0:
            assert before is not None and before.kind == tr.VERIFY and before.accepted, (where, decision)
            assert (before.drafter, before.index + 1) == (decision.drafter, decision.index), (where, decision)
        elif decision.kind == tr.VERIFY:
            assert before is None or before.kind in (tr.GREEDY, tr.STEER), (where, before, decision)
    for decision, after in zip(decisions, [*decisions[1:], None], strict=True):
        if decision.kind == tr.GREEDY or decision.accepted:
            replayed.append(decision.token)
            drafters.append(decision.drafter or "")
        else:  # a rejection: the model's own pick comes next
            assert after is not None and after.kind == tr.GREEDY, (where, decision, after)
    ids = record.output_ids
    stopped = 1 if record.stop in ("eog", "newline") else 0
    assert replayed[: len(ids)] == ids and len(replayed) == len(ids) + stopped, (where, replayed, ids)
    assert drafters[: len(ids)] == record.drafted_by, where
    first = [d for d in decisions if d.drafter == "previous"]
    kept = [d.token for d in first if d.accepted]
    assert [d.accepted for d in first] == [True] * len(kept) + [False] * (len(first) - len(kept)), where
    assert len(kept) == record.accepted and kept == ids[: record.accepted], where
    assert len(first) == record.draft_tokens or (
        len(first) == record.accepted + 1 and record.accepted < record.draft_tokens
    ), (where, len(first), record.accepted, record.draft_tokens)
    for name, offered in record.offered.items():  # a drafter's decisions stop at its first rejection
        decided = [d for d in decisions if d.drafter == name and d.kind == tr.VERIFY]
        assert sum(d.accepted for d in decided) == record.drafted_by.count(name), (where, name)
        assert len(decided) <= offered, (where, name, len(decided), offered)
    resynced = [d for d in decisions if d.drafter == "resync"]
    assert sum(d.accepted for d in resynced) == record.resync_accepted <= record.resync_drafted, where

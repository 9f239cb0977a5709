"""RT, SSBD(beta) and CD with their options (simul.request.method_settings) as parts (docs/methods.md):

    method              first drafter                       later drafters                 display
    RT                  none                                none                           mask-k / LA-n
    SSBD(beta)          previous output, biased rule beta   --resync N: lookup in the      mask-k / LA-n
                        (--ending unbiased: its sentence-    rest of the previous output,
                        final tokens under exact greedy)     biased rule beta;
                                                            --target-bias-beta B: steer
                                                            toward it, biased rule B
    CD                  previous output, accept-all         none                           mask-k / LA-n
    spec                none                                the draft model (eager), exact  mask-k / LA-n
                                                            greedy (model_drafter.py)
    SSBD, --tail-draft  previous output, biased rule B     the draft model (eager after   mask-k / LA-n
    model                                                   the divergence), exact greedy
    bild                none                                the draft model (eager, falls  mask-k / LA-n
                                                            back below alpha_FB), BiLD's
                                                            rollback rule (bild.py)

Output mask-k and ``--ending reopen`` shorten the previous-output draft.
"""

from __future__ import annotations

from simul.common.errors import UsageError
from simul.decoding.methods.bild import RollbackRule
from simul.decoding.methods.display import AgreementDisplay, MaskDisplay
from simul.decoding.methods.drafters import PreviousOutput, Resync, TargetBias
from simul.decoding.methods.model_drafter import DraftModelDrafter, StopVocabulary
from simul.decoding.methods.protocol import (
    AcceptanceRule,
    DisplayPolicy,
    Drafter,
    DrafterFactory,
    MethodShape,
    Vocabulary,
)
from simul.decoding.methods.rules import ACCEPT_ALL, BiasedRule
from simul.request.method_settings import METHOD_NAMES, MethodSettings


def shape_of(method: MethodSettings) -> MethodShape:
    """The parts of a built-in method."""
    if method.name not in METHOD_NAMES:
        raise UsageError(
            f"{method.name!r} is not a method simul decodes (choose one of {', '.join(METHOD_NAMES)})"
        )
    rule: AcceptanceRule | None = None
    if method.name == "ssbd":
        assert method.beta is not None
        rule = BiasedRule(method.beta)
    elif method.name == "cd":
        rule = ACCEPT_ALL
    first: DrafterFactory | None = None
    if rule is not None:
        draft_rule = rule
        output_mask = method.mask_k if method.mask == "output" else 0

        def previous(vocab: Vocabulary) -> Drafter:
            return PreviousOutput(draft_rule, vocab, mask_k=output_mask, ending=method.ending)

        first = previous
    tails: list[DrafterFactory] = []
    if method.uses_draft_model:
        assert method.draft_max is not None

        def model(vocab: Vocabulary) -> Drafter:
            if not isinstance(vocab, StopVocabulary):
                raise TypeError("the draft-model drafter needs a vocabulary that knows its stop tokens")
            if method.name == "bild":  # BiLD: fallback below alpha_FB, rollback above alpha_RB
                assert method.fallback is not None and method.rollback is not None
                return DraftModelDrafter(
                    vocab,
                    method.draft_max or 1,
                    method.draft_min,
                    method.fallback,
                    RollbackRule(method.rollback),
                )
            return DraftModelDrafter(vocab, method.draft_max or 1, method.draft_min, method.draft_p_min)

    if method.resync:
        resync_rule = BiasedRule(method.beta or 0.0)
        tails.append(lambda vocab: Resync(method.resync, resync_rule))
    if method.uses_draft_model:  # after --resync's drafts (SSBD's --tail-draft model)
        tails.append(model)
    if method.target_bias:
        target_rule = BiasedRule(method.target_bias)
        tails.append(lambda vocab: TargetBias(target_rule))
    display: DisplayPolicy = (
        AgreementDisplay(method.agreement)
        if method.display == "local-agreement"
        else MaskDisplay(method.mask_k)
    )
    return MethodShape(first, tuple(tails), display)

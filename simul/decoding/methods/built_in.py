"""RT, SSBD(beta) and CD with their options (simul.request.method_settings) as parts (docs/methods.md):

    method              first drafter                       later drafters                 display
    RT                  none                                none                           mask-k / LA-n
    SSBD(beta)          previous output, biased rule beta   --resync N: lookup in the      mask-k / LA-n
                        (--ending unbiased: its sentence-    rest of the previous output,
                        final tokens under exact greedy)     biased rule beta;
                                                            --target-bias-beta B: steer
                                                            toward it, biased rule B
    CD                  previous output, accept-all         none                           mask-k / LA-n
    lookup              none                                prompt lookup, exact greedy    mask-k / LA-n
    ngram-cache         none                                n-gram cache, exact greedy     mask-k / LA-n
    spec                none                                the draft model (eager), exact  mask-k / LA-n
                                                            greedy (model_drafter.py)
    SSBD, --tail-draft  previous output, biased rule B     the draft model (eager after   mask-k / LA-n
    model                                                   the divergence), exact greedy
    bild                none                                the draft model (eager, falls  mask-k / LA-n
                                                            back below alpha_FB), BiLD's
                                                            rollback rule (bild.py)

Output mask-k and ``--ending reopen`` shorten the previous-output draft. SSBD's ``--tail-draft lookup`` or
``ngram-cache`` adds that drafter after ``--resync``'s, under exact greedy acceptance.
"""

from __future__ import annotations

from pathlib import Path

from simul.common.errors import SimulError, UsageError
from simul.decoding.methods.bild import RollbackRule
from simul.decoding.methods.display import AgreementDisplay, MaskDisplay
from simul.decoding.methods.drafters import PreviousOutput, Resync, TargetBias
from simul.decoding.methods.lookup import Lookup
from simul.decoding.methods.model_drafter import DraftModelDrafter, StopVocabulary
from simul.decoding.methods.ngram_cache import Counts, NgramCache, read_static
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
from simul.request.ngram_settings import NgramDraft

# The drafters of RT, SSBD and CD (with --resync and the target bias): which drafter proposed each token is
# written to steps.jsonl only for methods with another one (docs/methods.md, "What is recorded").
BUILT_IN_DRAFTERS = frozenset({"previous", "resync", "target"})
# the drafters that search the step's source (StepStart.source is tokenized for them)
SOURCE_DRAFTERS = frozenset({"lookup", "ngram-cache"})


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
    if method.ngram is not None:
        tails.append(ngram_drafter(method.ngram))
    display: DisplayPolicy = (
        AgreementDisplay(method.agreement)
        if method.display == "local-agreement"
        else MaskDisplay(method.mask_k)
    )
    return MethodShape(first, tuple(tails), display)


def ngram_drafter(settings: NgramDraft) -> DrafterFactory:
    """The factory of an n-gram drafter. A static cache file is read once, when the first stream asks for
    it, and shared by every stream (it never changes, so no stream's result depends on another's)."""
    if settings.kind == "lookup":
        return lambda vocab: Lookup(settings)
    built: dict[int, Counts] = {}  # by vocabulary (one model per decoder)

    def make(vocab: Vocabulary) -> Drafter:
        static: Counts | None = None
        if settings.cache_file is not None and settings.cache_sha256 is not None:
            if id(vocab) not in built:
                # a text file is tokenized by the model (the decoder's vocabulary is its backend)
                tokenize = getattr(vocab, "tokenize", None)
                if tokenize is None:
                    raise SimulError(
                        "an n-gram cache file needs the model's tokenizer; this vocabulary has none"
                    )
                built[id(vocab)] = read_static(Path(settings.cache_file), settings.cache_sha256, tokenize)
            static = built[id(vocab)]
        return NgramCache(settings, static)

    return make

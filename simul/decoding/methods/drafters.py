"""The built-in drafters: the previous output (SSBD, CD), re-synchronisation after a divergence (--resync)
and the SSBD reference's target bias (--target-bias-beta). Their interface is in protocol.py."""

from __future__ import annotations

from simul.decoding.display.mask import hide_last
from simul.decoding.drafts import ending_length, find_ngram
from simul.decoding.methods.protocol import AcceptanceRule, Draft, Position, StepStart, Vocabulary
from simul.decoding.methods.rules import EXACT
from simul.request.method_settings import Ending


class PreviousOutput:
    """SSBD's and CD's drafter (SPEC "Decoding one stream"): at the start of each step, the previous output
    D = Y^(t-1), every token under ``rule``.

    ``mask_k`` (output mask-k) drops its last k tokens first; the draft is then cut to the step's length cap.
    While the source is not final, ``ending`` decides what happens to sentence-final tokens at its end
    (simul.request.method_settings): ``reopen`` leaves them out, ``unbiased`` puts them under exact greedy
    acceptance instead of ``rule``, ``keep`` (the paper) treats them like any token.
    """

    name = "previous"

    def __init__(self, rule: AcceptanceRule, vocab: Vocabulary, mask_k: int = 0, ending: Ending = "keep"):
        self.rule = rule
        self.vocab = vocab
        self.mask_k = mask_k
        self.ending = ending
        self._step: StepStart | None = None

    def start(self, step: StepStart) -> None:
        self._step = step

    def propose(self, at: Position) -> Draft | None:
        step = self._step
        assert step is not None, "propose before start"
        tokens = hide_last(step.previous, self.mask_k) if self.mask_k else list(step.previous)
        tokens = tokens[: step.room]
        if not tokens:
            return None
        rules = [self.rule] * len(tokens)
        ending = 0
        if not step.final and self.ending != "keep":
            ending = ending_length(tokens, self.vocab.piece)
            if self.ending == "reopen":
                del tokens[len(tokens) - ending :], rules[len(rules) - ending :]
            else:
                rules[len(rules) - ending :] = [EXACT] * ending
        return Draft(self.name, tuple(tokens), tuple(rules), ending_tokens=ending)

    def kept(self, draft: Draft, n: int) -> None:
        pass


class Resync:
    """``--resync N`` (prompt-lookup style, in the rest of the previous output): once the step's first draft
    is rejected, whenever the last N output tokens occur in what remains of it (from the rejected token on,
    less what earlier proposals used), propose what followed them there, under ``rule`` (SSBD's bias)."""

    name = "resync"

    def __init__(self, n: int, rule: AcceptanceRule):
        self.n = n
        self.rule = rule
        self.rest: list[int] = []

    def start(self, step: StepStart) -> None:
        self.rest = list(step.rejected)

    def propose(self, at: Position) -> Draft | None:
        n, rest, output = self.n, self.rest, at.output
        if not rest or len(output) < n:
            return None
        found = find_ngram(rest, output[-n:])
        if found < 0:
            return None
        proposal = rest[found + n : found + n + at.room]
        self.rest = rest[found + n :]
        return Draft.of(self.name, proposal, self.rule) if proposal else None

    def kept(self, draft: Draft, n: int) -> None:
        self.rest = self.rest[n:]


class TargetBias:
    """The SSBD reference's ``--target-bias-beta`` (docs/scoring.md#target-bias): after the step's first draft
    is rejected at D_d, the model's own token replaces D_d, and each later token is steered toward D_d,
    D_(d+1), ... in turn under ``rule`` (the biased rule with the target beta), until one is rejected or the
    rejected draft is used up."""

    name = "target"

    def __init__(self, rule: AcceptanceRule):
        self.rule = rule
        self.target: tuple[int, ...] = ()
        self.next: int | None = None  # index into ``target`` of the token to steer toward (None: done)

    def start(self, step: StepStart) -> None:
        self.target = step.rejected
        self.next = 0 if self.target else None

    def propose(self, at: Position) -> Draft | None:
        if self.next is None:
            return None
        return Draft(self.name, (self.target[self.next],), (self.rule,), steer=True)

    def kept(self, draft: Draft, n: int) -> None:
        if n and self.next is not None and self.next + 1 < len(self.target):
            self.next += 1
        else:
            self.next = None

"""What a decoding method is made of (docs/methods.md; SPEC "Speculative baselines"): *drafters* that propose
tokens at a position of the output, *acceptance rules* that decide on each proposed token from its logits
row, and a *display policy* that says what the viewer sees.

The decoder (simul.decoding.stream) runs every method through these types alone: it asks the first drafter
for a draft at the start of each step (position 0: SSBD's and CD's previous output), verifies it, and once
that draft is used up or rejected asks the other drafters, in order, wherever the model would pick the next
token itself (``--resync``, the target bias); the first proposal wins. A draft carries the rule of each of
its tokens, so the decoder never needs to know which method it runs.

``PROTOCOL_VERSION`` numbers this interface. docs/methods.md says what a version may change; methods from
outside simul (plugins, simul.decoding.methods.plugins) state the version they were written for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from simul.decoding.backend.sequence import KVSequence
from simul.decoding.passes import Passes

PROTOCOL_VERSION = 1

# One logits row: the model's score for every vocabulary token at one position (valid only during the call
# that receives it; copy it to keep it).
Row = npt.NDArray[np.float32]


class AcceptanceRule(Protocol):
    """Decides whether a proposed token is kept, from the logits row of its position.

    ``blind`` is True for a rule that keeps every token whatever its row says (accept-all; SSBD's biased rule
    at beta >= 0.5): the decoder computes no rows for a leading run of such tokens and does not call
    ``accepts`` for them. ``verifies`` is False for a rule that does not verify at all but takes the draft as
    it is (accept-all, CD's; such a rule must be blind): a draft whose rules all say so gets no row at all,
    not even p_0 from the prompt pass, and is never cut into ``--verify-chunk`` parts. ``bias`` is the
    strength the decision trace records (the biased rule's beta; 0 for the others).
    """

    @property
    def name(self) -> str: ...
    @property
    def bias(self) -> float: ...
    @property
    def verifies(self) -> bool: ...
    @property
    def blind(self) -> bool: ...

    def accepts(self, row: Row, token: int) -> bool: ...


@dataclass(frozen=True)
class Draft:
    """Tokens a drafter proposes at one position of the output, each with the rule that decides it.

    The first token is decided on the row already in hand (the logits for this position); the others on the
    rows of one forward pass over the draft (``--verify-chunk``: several), stopping at the first rejection.
    After a draft, rejected or used up, the next token is always the model's own pick from the row the
    verification computed last (no drafter is asked there), as in speculative decoding.

    ``steer``: a one-token draft decided on the row in hand and then decoded like the model's own pick (one
    one-token pass, counted as decoding, not as a verified draft): how the SSBD reference's target bias biases
    decoding toward the rejected draft. A rejected steer leaves the model's own pick.

    ``ending_tokens``: sentence-final tokens the drafter reopened (left out) or verifies without its bias
    (``--ending``), recorded as the step's ``ending_tokens``.
    """

    drafter: str
    tokens: tuple[int, ...]
    rules: tuple[AcceptanceRule, ...]
    steer: bool = False
    ending_tokens: int = 0

    def __post_init__(self) -> None:
        if len(self.rules) != len(self.tokens):
            raise ValueError(
                f"drafter {self.drafter!r}: {len(self.tokens)} tokens but {len(self.rules)} rules"
            )
        if self.steer and len(self.tokens) != 1:
            raise ValueError(f"drafter {self.drafter!r}: a steering draft is one token")
        if not all(rule.blind for rule in self.rules if not rule.verifies):
            raise ValueError(f"drafter {self.drafter!r}: a rule that does not verify must be blind")

    @classmethod
    def of(cls, drafter: str, tokens: Sequence[int], rule: AcceptanceRule, **options: int | bool) -> Draft:
        """A draft whose tokens all follow ``rule``."""
        return cls(drafter, tuple(tokens), (rule,) * len(tokens), **options)  # type: ignore[arg-type]

    def cut(self, n: int) -> Draft:
        """The first ``n`` tokens (all of them when there are fewer)."""
        if n >= len(self.tokens):
            return self
        return Draft(self.drafter, self.tokens[:n], self.rules[:n], self.steer, self.ending_tokens)


@dataclass(frozen=True)
class StepStart:
    """What drafters are told when a step begins (the first drafter) or when they take over (the others).

    ``previous`` is the stream's previous output as decoded (of the open window, for a whole talk; empty at
    the first step), ``final`` whether the source is complete, ``room`` the step's output length cap,
    ``prompt`` its prompt tokens (the source among them). ``rejected`` is given to the drafters after the
    first: what was left of the step's first draft from its first rejected token on (empty when there was no
    draft or all of it was kept). ``source`` is the step's source text (the open window's, for a whole talk)
    tokenized on its own, without special tokens (version 1 gained it with the n-gram drafters).
    """

    previous: tuple[int, ...]
    final: bool
    room: int
    prompt: tuple[int, ...]
    rejected: tuple[int, ...] = ()
    source: tuple[int, ...] = ()


@dataclass(frozen=True)
class Position:
    """A position of the output where a draft may start: ``output`` is the step's output so far (the decoder's
    own list: read it during the call, do not keep it) and ``room`` how many tokens the length cap leaves."""

    output: Sequence[int]
    room: int


class Drafter(Protocol):
    """Proposes drafts. One instance serves one stream (a whole talk counts as one), its steps in order, so it
    may learn within the stream; it must not carry anything from one stream to the next (SPEC "Determinism":
    a stream's result depends only on the stream, the method, the model and the settings).

    ``start`` is called at each step (see :class:`StepStart` for when), ``propose`` at each position the
    decoder offers it (the first drafter: position 0 only), and ``kept`` after each of its drafts has been
    decided, with how many of its tokens were kept (a prefix).
    """

    @property
    def name(self) -> str: ...

    def start(self, step: StepStart) -> None: ...
    def propose(self, at: Position) -> Draft | None: ...
    def kept(self, draft: Draft, n: int) -> None: ...


class ModelDrafter(Drafter, Protocol):
    """A drafter that runs a draft model to propose (simul.decoding.methods.model_drafter; an addition within
    version 1: drafters without these members are run as before).

    The decoder drives ``propose_passes`` instead of ``propose``: a step machine (simul.decoding.passes) that
    yields the draft model's forward passes, each an ``Eval(..., draft=True)``, and returns the draft (or
    None). ``seq`` is the stream's sequence of the draft model (None when no draft model is loaded); the
    drafter may truncate it and keep its longest common prefix with what it evaluates next (KV reuse across
    steps), but must not keep a reference to it past the call.

    ``eager``: the drafter is asked at a position before the model's own pick there is evaluated, so that the
    pick and the draft after it go through one forward pass (speculative decoding's verification batch: the
    last token and the draft). A drafter may be eager only when its proposals do not depend on the row of
    the position (the target's logits); see docs/methods.md.
    """

    @property
    def eager(self) -> bool: ...

    def propose_passes(self, at: Position, seq: KVSequence | None) -> Passes[Draft | None]: ...


class Vocabulary(Protocol):
    """What drafters may ask of the model's vocabulary."""

    def piece(self, token: int, special: bool = False) -> bytes: ...


DrafterFactory = Callable[[Vocabulary], Drafter]


@dataclass(frozen=True)
class DisplayView:
    """What a display policy sees at a step: the texts of this stream's outputs so far (the open window's, for
    a whole talk), the current one last; the current output's tokens; whether the source is complete;
    whether the target language is written without spaces; and ``text`` to turn tokens into display text
    (never cutting a character)."""

    outputs: Sequence[str]
    tokens: Sequence[int]
    final: bool
    unspaced: bool
    text: Callable[[Sequence[int]], str]


class DisplayPolicy(Protocol):
    """What the viewer is shown at a step. It never feeds back into decoding."""

    @property
    def name(self) -> str: ...

    def show(self, view: DisplayView) -> str: ...


@dataclass(frozen=True)
class MethodShape:
    """A decoding method as the decoder runs it: the factory of the drafter that drafts at the start of each
    step (None: no draft, as RT), the factories of the drafters that take over once that draft is used up or
    rejected, and the display policy."""

    first: DrafterFactory | None
    tails: tuple[DrafterFactory, ...]
    display: DisplayPolicy

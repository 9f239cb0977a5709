"""The drafters of one stream and whose turn it is (docs/methods.md): the first drafter proposes at the start
of each step; once its draft is used up or rejected the others take over, asked in order wherever the model
would pick the next token itself, the first proposal winning."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from simul.decoding.backend.sequence import KVSequence
from simul.decoding.methods.protocol import (
    Draft,
    Drafter,
    MethodShape,
    ModelDrafter,
    Position,
    StepStart,
    Vocabulary,
)
from simul.decoding.passes import Passes


class DraftChain:
    """The drafters of one stream (a whole talk counts as one), fresh for it (see protocol.Drafter)."""

    def __init__(self, first: Drafter | None, tails: Sequence[Drafter] = ()) -> None:
        self.first = first
        self.tails = tuple(tails)
        self._owner: Drafter | None = None  # the drafter of the draft being decided

    @classmethod
    def of(cls, shape: MethodShape, vocab: Vocabulary) -> DraftChain:
        first = shape.first(vocab) if shape.first is not None else None
        return cls(first, [make(vocab) for make in shape.tails])

    def names(self) -> list[str]:
        """The names of the drafters, the first one first."""
        return [d.name for d in ([self.first] if self.first is not None else []) + list(self.tails)]

    def first_draft(self, step: StepStart) -> Draft | None:
        """The draft at position 0 of the step (it may be empty and still report ``ending_tokens``)."""
        if self.first is None:
            return None
        self.first.start(step)
        self._owner = self.first
        draft = self.first.propose(Position((), step.room))
        return None if draft is None else draft.cut(step.room)

    def take_over(self, step: StepStart) -> None:
        """The first draft is used up or rejected (``step.rejected``: what was left of it), or there was none:
        the other drafters start."""
        for drafter in self.tails:
            drafter.start(step)

    def propose(self, at: Position) -> Draft | None:
        """The first non-empty proposal of the other drafters at this position, cut to the room left."""
        for drafter in self.tails:
            draft = drafter.propose(at)
            if draft is not None and draft.tokens:
                self._owner = drafter
                return draft.cut(at.room)
        return None

    @property
    def drafts_with_model(self) -> bool:
        """Some later drafter runs a draft model (protocol.ModelDrafter)."""
        return any(hasattr(drafter, "propose_passes") for drafter in self.tails)

    @property
    def eager(self) -> bool:
        """Every later drafter is eager (protocol.ModelDrafter): they are asked before the model's own pick
        at a position is evaluated, so that the pick and their draft share one forward pass."""
        return bool(self.tails) and all(getattr(drafter, "eager", False) for drafter in self.tails)

    def propose_passes(self, at: Position, seq: KVSequence | None) -> Passes[Draft | None]:
        """As :meth:`propose`, with the draft model's forward passes of the drafters that run one
        (protocol.ModelDrafter) yielded on the way; ``seq`` is the stream's sequence of the draft model."""
        for drafter in self.tails:
            passes = getattr(drafter, "propose_passes", None)
            if passes is not None:
                draft = yield from cast(ModelDrafter, drafter).propose_passes(at, seq)
            else:
                draft = drafter.propose(at)
            if draft is not None and draft.tokens:
                self._owner = drafter
                return draft.cut(at.room)
        return None

    def kept(self, draft: Draft, n: int) -> None:
        """Tell the drafter of ``draft`` (the last one proposed) how many of its tokens were kept."""
        assert self._owner is not None and self._owner.name == draft.drafter
        self._owner.kept(draft, n)

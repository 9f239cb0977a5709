"""The forward passes a decoder asks for, and how one decoder runs them on its own.

Decoders are step machines (generators): they yield an :class:`Eval` for each forward pass they need and are
sent its logits back. :func:`run_alone` performs the passes one at a time on one sequence;
simul.decoding.scheduler performs the passes of many streams in one batch. The decoders cannot tell the
difference.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from simul.common.errors import SimulError
from simul.decoding.backend import Logits
from simul.decoding.backend.sequence import KVSequence

T = TypeVar("T")


@dataclass(frozen=True)
class Eval:
    """Append ``tokens`` to the stream's sequence; logits for its tokens ``logits_from``.. (None: no logits).

    ``draft``: a pass of the draft model, on the stream's sequence of the draft model's context (the target
    sequence's ``partner``) rather than on the target's.

    The logits sent back are valid until the decoder yields its next pass: it must read them first.
    """

    tokens: Sequence[int]
    logits_from: int | None
    draft: bool = False


Passes = Generator[Eval, Logits | None, T]


def sequence_for(request: Eval, seq: KVSequence) -> KVSequence:
    """The sequence ``request`` is for: ``seq`` (the stream's target sequence) or its draft partner."""
    if not request.draft:
        return seq
    if seq.partner is None:
        raise SimulError("a drafter asked for a pass of the draft model, but no draft model is loaded")
    return seq.partner


def run_alone(machine: Passes[T], seq: KVSequence) -> T:
    """Drive a step machine on ``seq`` (and its draft partner), one forward pass per request, and return what
    it returns."""
    try:
        request = next(machine)
        while True:
            request = machine.send(sequence_for(request, seq).eval(request.tokens, request.logits_from))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]

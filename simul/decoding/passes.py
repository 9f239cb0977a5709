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

from simul.decoding.backend import Logits
from simul.decoding.backend.sequence import KVSequence

T = TypeVar("T")


@dataclass(frozen=True)
class Eval:
    """Append ``tokens`` to the stream's sequence; logits for its tokens ``logits_from``.. (None: no logits).

    The logits sent back are valid until the decoder yields its next pass: it must read them first.
    """

    tokens: Sequence[int]
    logits_from: int | None


Passes = Generator[Eval, Logits | None, T]


def run_alone(machine: Passes[T], seq: KVSequence) -> T:
    """Drive a step machine on ``seq``, one forward pass per request, and return what it returns."""
    try:
        request = next(machine)
        while True:
            request = machine.send(seq.eval(request.tokens, request.logits_from))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]

"""The draft-model drafter: a small model (or an early-exit copy of the target) drafts greedily, the target
verifies (``spec``; SPEC "Speculative baselines").

Speculative decoding (Leviathan, Kalman and Matias 2023, "Fast Inference from Transformers via Speculative
Decoding"): the draft model proposes up to K tokens, greedily, one forward pass of its own per token; the
target verifies them in one forward pass and keeps them while each is its own argmax (exact greedy
acceptance), so the output is the target's greedy output. This is llama.cpp's ``draft-simple`` speculative
decoding (common/speculative.cpp), with its options:

* ``--draft-max K``: at most K tokens per draft (llama.cpp's default, 16);
* ``--draft-min M``: a draft shorter than M tokens is not worth a verification and is dropped (0: none is);
* ``--draft-p-min P``: drafting stops before a token whose probability under the draft model is below P
  (the confidence bound of llama.cpp's ``--draft-p-min`` and of SpecBound, Wen and Feng: a draft runs as long
  as the draft model is sure of it). simul takes the probability from the draft's full softmax; llama.cpp's
  draft sampler normalises over its top-k candidates first, which reads slightly higher. 0 turns it off.

The drafter never drafts a token at which the decoder stops (end of generation, or a newline, which stops
the few-shot template): the target picks those itself, so a kept draft never runs past a stop.

It is eager (protocol.ModelDrafter): asked at the position after the target's own token, before that token
is evaluated, so that the verification pass is [that token, D_0 .. D_(K-1)], as in llama.cpp.

The draft model's sequence keeps the longest common prefix of its cache with the prompt and output it is
given next (across drafts and steps), so each draft evaluates only what is new: the accepted tokens and the
target's own token since the last draft, or the new source words at a new step.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from simul.common.errors import SimulError
from simul.decoding.backend.sequence import KVSequence
from simul.decoding.methods.protocol import AcceptanceRule, Draft, Position, Row, StepStart
from simul.decoding.methods.rules import EXACT
from simul.decoding.passes import Eval, Passes

NEWLINE = b"\n"


@runtime_checkable
class StopVocabulary(Protocol):
    """What the drafter asks of the target's vocabulary (LlamaBackend has it)."""

    def piece(self, token: int, special: bool = False) -> bytes: ...
    def is_eog(self, token: int) -> bool: ...


def top_probability(row: Row) -> float:
    """max softmax(row): the model's probability of its own greedy pick."""
    values = np.asarray(row, dtype=np.float64)
    return float(1.0 / np.exp(values - values.max()).sum())


class DraftModelDrafter:
    """Drafts with the draft model (see the module's docstring): one instance per stream."""

    name = "model"
    eager = True

    def __init__(
        self,
        vocab: StopVocabulary,
        draft_max: int,
        draft_min: int = 0,
        p_min: float = 0.0,
        rule: AcceptanceRule = EXACT,
    ) -> None:
        self.vocab = vocab
        self.draft_max = draft_max
        self.draft_min = draft_min
        self.p_min = p_min
        self.rule = rule
        self._prompt: tuple[int, ...] = ()

    def start(self, step: StepStart) -> None:
        self._prompt = step.prompt

    def propose(self, at: Position) -> Draft | None:
        raise TypeError("the draft-model drafter runs forward passes: call propose_passes")

    def stops(self, token: int) -> bool:
        return self.vocab.is_eog(token) or NEWLINE in self.vocab.piece(token)

    def propose_passes(self, at: Position, seq: KVSequence | None) -> Passes[Draft | None]:
        if seq is None:
            raise SimulError(
                "the draft-model drafter needs a draft model: pass --draft-model or --draft-layers"
            )
        limit = min(self.draft_max, at.room)
        if limit < max(1, self.draft_min):
            return None
        context = [*self._prompt, *at.output]
        reused = seq.reuse_prefix(context)
        pending = context[reused:]
        rows = yield Eval(pending, len(pending) - 1, draft=True)
        assert rows is not None
        row = rows[0]
        tokens: list[int] = []
        while True:
            token = int(np.argmax(row))
            if self.stops(token) or (self.p_min > 0 and top_probability(row) < self.p_min):
                break
            tokens.append(token)
            if len(tokens) >= limit:
                break
            rows = yield Eval([token], 0, draft=True)
            assert rows is not None
            row = rows[0]
        if not tokens or len(tokens) < self.draft_min:
            return None
        return Draft.of(self.name, tokens, self.rule)

    def kept(self, draft: Draft, n: int) -> None:
        pass

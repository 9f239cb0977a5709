"""One sequence of a llama.cpp context (its ``seq_id``): the tokens whose keys and values it holds.

A context with ``n_seq_max`` sequences decodes several streams in one forward pass (see
simul.decoding.scheduler); each stream owns one sequence while it is decoded. The cache contents are tracked
as tokens, so that the longest common prefix with the next prompt is kept, and truncation is exact
(``llama_memory_seq_rm`` with the sequence id, which leaves the other sequences untouched).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Logits = npt.NDArray[np.float32]


class SequenceHost(Protocol):
    """What a sequence needs of the context that holds it (simul.decoding.backend.llama.LlamaBackend): the
    backend imports this module, never the other way round."""

    def remove(self, seq_id: int, p0: int) -> bool: ...

    def eval_many(
        self, requests: Sequence[tuple[KVSequence, Sequence[int], int | None]]
    ) -> list[Logits | None]: ...


class KVSequence:
    """The cache of one sequence: ``cache`` lists the tokens at positions 0, 1, ... of this sequence."""

    def __init__(self, backend: SequenceHost, seq_id: int, n_ctx: int) -> None:
        self.backend = backend
        self.seq_id = seq_id
        self.n_ctx = n_ctx  # positions this sequence may hold (its share of the context)
        self.cache: list[int] = []
        # The stream's sequence of the draft model, when one is loaded beside this (target) model: the
        # engine pairs the i-th sequences of the two contexts, so that a stream holds both at once.
        self.partner: KVSequence | None = None
        # The canonical start state (see start_from): the prefix last evaluated there, and how many leading
        # cache positions still hold it exactly as that evaluation left them.
        self._canonical: list[int] = []
        self._canonical_len = 0

    def forget(self) -> None:
        """Called by the backend after it cleared this sequence's memory."""
        self.cache.clear()
        self._canonical_len = 0

    def clear(self) -> None:
        self.backend.remove(self.seq_id, 0)
        self.forget()

    def truncate(self, n: int) -> bool:
        """Drop every cached position >= n, exactly.

        Returns False when the model's memory cannot drop part of a sequence (recurrent architectures); the
        sequence is then cleared and the caller must evaluate again from position 0.
        """
        if n >= len(self.cache):
            return True
        if not self.backend.remove(self.seq_id, n):
            self.clear()
            return False
        del self.cache[n:]
        self._canonical_len = min(self._canonical_len, n)
        return True

    def start_from(self, prefix: Sequence[int]) -> None:
        """Bring the cache to the canonical start state of a stream: exactly ``prefix``, evaluated on its own
        in one forward pass from an empty sequence.

        llama.cpp's keys and values (and so the logits after them) differ in the last bits with the shape of
        the batch that computed them, so a prompt prefix kept from another stream's evaluation is not the
        same state as the prefix evaluated afresh, and greedy choices at near-ties flip. Starting every
        stream from this one state makes its outputs a function of the stream alone: whatever ran before,
        the prefix is either the very evaluation kept (truncated back to it, which is exact) or the same
        evaluation made again. The evaluation is a forward pass of its own even when other sequences of
        the context are being decoded.
        """
        prefix = list(prefix)
        n = len(prefix)
        if self._canonical == prefix and self._canonical_len == n and self.truncate(n):
            return
        self.clear()
        if prefix:
            self.eval(prefix, logits_from=None)
        self._canonical = prefix
        self._canonical_len = n

    def reuse_prefix(self, tokens: Sequence[int], keep_last: bool = True) -> int:
        """Keep the longest common prefix of the cache and ``tokens``; returns how many positions were kept.

        With ``keep_last`` at least the last token of ``tokens`` is left to evaluate, so that its logits
        can be asked for.
        """
        limit = min(len(self.cache), len(tokens) - (1 if keep_last else 0))
        n = 0
        cache = self.cache
        while n < limit and cache[n] == tokens[n]:
            n += 1
        self.truncate(n)
        return len(self.cache)

    def eval(self, tokens: Sequence[int], logits_from: int | None = None) -> Logits | None:
        """Append ``tokens`` to this sequence in a forward pass of its own (see LlamaBackend.eval_many)."""
        return self.backend.eval_many([(self, tokens, logits_from)])[0]

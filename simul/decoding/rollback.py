"""Which methods need to roll a sequence back, and the refusal of those on models that cannot.

SSBD, CD, the n-gram drafters, speculative decoding and BiLD evaluate tokens past what they keep (a draft, a
continuation) and then drop the positions after the first divergence: with a KV cache that is one
``llama_memory_seq_rm``, exact at any position. A model whose memory is recurrent (Mamba, RWKV) or hybrid
(Jamba, Falcon-H1, the gated-delta-net Qwen3-Next / Qwen3.5 family) keeps one state per sequence that every
token updates in place; llama.cpp refuses to drop part of it (0.3.36 keeps no per-token snapshots by default),
so these methods would have to start every step again from position 0, and any engine that took the
removal for granted would verify against the wrong state. simul refuses them on such a model before
decoding, naming the architecture. Re-translation starts every update from the canonical start of the
stream (simul.decoding.backend.sequence: a failed truncation clears the sequence and evaluates again), so
it is decoded correctly on any model, only without the reuse of the prompt's cache.

A method from outside simul (a plug-in) is refused too: simul cannot know whether it drafts.
"""

from __future__ import annotations

from collections.abc import Sequence

from simul.common.errors import UsageError
from simul.request.method_settings import EXTERNAL
from simul.request.methods import Method

#: the methods that never evaluate a token they may have to take back
NO_ROLLBACK = frozenset({"rt", EXTERNAL})

WHY = {
    "recurrent": "its memory is a recurrent state (one per sequence, updated in place by every token)",
    "hybrid": "its memory is hybrid: attention layers beside recurrent layers whose state every token "
    "updates in place",
}


def needs_rollback(method: Method) -> bool:
    return method.name not in NO_ROLLBACK or method.uses_draft_model


def check_rollback(
    methods: Sequence[Method], memory: str, architecture: str, what: str = "the model"
) -> None:
    """Refuse (a usage error, exit 2) every method that rolls back on a model whose memory cannot."""
    if memory == "attention":
        return
    refused = [m.label for m in methods if needs_rollback(m)]
    if not refused:
        return
    reason = WHY.get(memory, f"its memory is {memory}")
    raise UsageError(
        f"{what} is a {architecture} model: {reason}, which llama.cpp cannot roll back to the first "
        f"divergence of a draft. {', '.join(refused)} need(s) that; run re-translation alone (--method rt "
        "--no-baseline), which starts every update again from the start, or use a transformer model"
    )

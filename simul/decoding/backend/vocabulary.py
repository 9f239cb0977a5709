"""Whether a draft model's vocabulary is the target's, judged as llama.cpp's speculative decoding judges it.

llama.cpp (``common/speculative.cpp``, ``common_speculative_are_compatible``) lets a draft model propose
tokens to a target when

1. both vocabularies are of the same type (SentencePiece, BPE, ...);
2. they agree on adding BOS and on its id, and likewise on EOS (the ids are compared even where neither
   model adds the token: llama.cpp compares llama_token_bos and llama_token_eos unconditionally);
3. their sizes differ by at most ``SPEC_VOCAB_MAX_SIZE_DIFFERENCE`` = 128 tokens (padding: Qwen2.5 0.5B and
   7B differ only there);
4. every token from id ``SPEC_VOCAB_CHECK_START_TOKEN_ID`` = 5 up to the smaller size has the same text in
   both (the first few ids are special tokens that families renumber freely).

simul applies the same rules, in the same order, and names the first one that fails: a draft token is then
the target token of the same id, which is what verifying it against the target's logits assumes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

MAX_SIZE_DIFFERENCE = 128  # SPEC_VOCAB_MAX_SIZE_DIFFERENCE in llama.cpp's common/speculative.cpp
CHECK_START_TOKEN_ID = 5  # SPEC_VOCAB_CHECK_START_TOKEN_ID

# llama.cpp's enum llama_vocab_type
VOCAB_TYPES = {0: "none", 1: "SPM", 2: "BPE", 3: "WPM", 4: "UGM", 5: "RWKV", 6: "PLaMo-2"}


@dataclass(frozen=True)
class VocabularyFacts:
    """What the compatibility rules read of a vocabulary, besides the token texts."""

    kind: int  # llama_vocab_type
    n_tokens: int
    add_bos: bool
    bos: int
    add_eos: bool
    eos: int


class VocabularySource(Protocol):
    """A model's vocabulary as the check reads it (simul.decoding.backend.llama.LlamaBackend has it)."""

    def vocabulary_facts(self) -> VocabularyFacts: ...
    def token_text(self, token: int) -> bytes: ...


def _kind(kind: int) -> str:
    return f"{VOCAB_TYPES.get(kind, 'unknown')} ({kind})"


def _text(text: bytes) -> str:
    return repr(text.decode("utf-8", errors="replace"))


def first_difference(target: VocabularySource, draft: VocabularySource) -> str | None:
    """The first rule of llama.cpp's check that the two vocabularies break, in words (None: compatible)."""
    t, d = target.vocabulary_facts(), draft.vocabulary_facts()
    if t.kind != d.kind:
        return f"the vocabulary types differ (the target's is {_kind(t.kind)}, the draft's {_kind(d.kind)})"
    for name, (t_add, t_id, d_add, d_id) in (
        ("BOS", (t.add_bos, t.bos, d.add_bos, d.bos)),
        ("EOS", (t.add_eos, t.eos, d.add_eos, d.eos)),
    ):
        if t_add != d_add:
            return (
                f"the target {'adds' if t_add else 'does not add'} {name} and the draft "
                f"{'does' if d_add else 'does not'}"
            )
        if t_id != d_id:
            return f"the {name} tokens differ (id {t_id} in the target, {d_id} in the draft)"
    if abs(t.n_tokens - d.n_tokens) > MAX_SIZE_DIFFERENCE:
        return (
            f"the vocabulary sizes differ by more than {MAX_SIZE_DIFFERENCE} tokens of padding "
            f"({t.n_tokens} in the target, {d.n_tokens} in the draft)"
        )
    for token in range(CHECK_START_TOKEN_ID, min(t.n_tokens, d.n_tokens)):
        t_text, d_text = target.token_text(token), draft.token_text(token)
        if t_text != d_text:
            return f"token {token} is {_text(t_text)} in the target and {_text(d_text)} in the draft"
    return None

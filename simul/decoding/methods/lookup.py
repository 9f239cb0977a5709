"""Prompt-lookup drafts (docs/methods.md, "The n-gram drafters"; SPEC "Speculative baselines"): the method
``lookup`` and SSBD's ``--tail-draft lookup``.

The search is llama-cpp-python's ``LlamaPromptLookupDecoding.find_candidate_pred_tokens`` (llama_cpp/
llama_speculative.py, after Saxena 2023, github.com/apoorvumang/prompt-lookup-decoding), token for token:
for n from ``min(max_ngram_size, len - 1)`` down to 1, the last n tokens of the searched sequence are looked
for in it from its start; the first occurrence followed by at least one token gives the draft, the (up to
``num_pred_tokens``) tokens after it, stopping at the end of the sequence; no match, no draft.

The searched sequence is the step's source tokens, then the previous output, then the output so far, in that
order (llama-cpp-python searches its whole context, prompt first, then what it generated): for equally long
matches the source comes first, then the previous output. Before the first output token there is nothing to
look up, so no draft is proposed at position 0. ``--ngram-min`` stops the search before 1-grams (1: as the
reference), and the gate (simul.decoding.methods.selective) decides which drafts are proposed.
"""

from __future__ import annotations

from collections.abc import Sequence

from simul.decoding.methods.protocol import Draft, Position, StepStart
from simul.decoding.methods.rules import EXACT
from simul.decoding.methods.selective import DraftGate
from simul.request.ngram_settings import NgramDraft


def prompt_lookup(
    sequence: Sequence[int], ngram_max: int, draft_max: int, ngram_min: int = 1
) -> tuple[list[int], int]:
    """``LlamaPromptLookupDecoding.find_candidate_pred_tokens(sequence, ngram_max, draft_max)`` (n-grams down
    to ``ngram_min`` instead of 1) and the size n of the match (0: none)."""
    length = len(sequence)
    for n in range(min(ngram_max, length - 1), ngram_min - 1, -1):
        tail = list(sequence[length - n :])
        last = tail[-1]
        # windows at 0 .. length - n - 1 (the one at length - n is the tail itself, followed by nothing)
        for start in range(length - n):
            if sequence[start + n - 1] == last and list(sequence[start : start + n]) == tail:
                end = min(start + n + draft_max, length)
                if start + n < end:
                    return list(sequence[start + n : end]), n
    return [], 0


class Lookup:
    """The prompt-lookup drafter: a later drafter (asked wherever the model would pick the next token
    itself), every token under exact greedy acceptance."""

    name = "lookup"

    def __init__(self, settings: NgramDraft) -> None:
        self.settings = settings
        self.gate = DraftGate(settings.draft_min, settings.draft_max, settings.rest_after)
        self.searched: list[int] = []  # the step's source and previous output

    def start(self, step: StepStart) -> None:
        self.searched = [*step.source, *step.previous]
        self.gate.start()

    def propose(self, at: Position) -> Draft | None:
        if not at.output:
            return None
        s = self.settings
        tokens, _ = prompt_lookup([*self.searched, *at.output], s.ngram_max, s.draft_max, s.ngram_min)
        admitted = self.gate.admit(tokens, at.room)
        return Draft.of(self.name, admitted, EXACT) if admitted else None

    def kept(self, draft: Draft, n: int) -> None:
        self.gate.kept(n, len(draft.tokens))

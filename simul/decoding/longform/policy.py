"""Where a talk's source is cut into windows (the long-form policy's segmentation).

The source of a long-form stream is cut into windows as it arrives:

* at sentence ends in the source (the recognizer's or the transcript's punctuation): a word ending in ``.``,
  ``?``, ``!``, ``…`` (or ``。？！`` for unspaced scripts), possibly followed by closing quotes or brackets,
  and not a common abbreviation. A sentence end closes its window only once a later word has arrived (or the
  talk is over): the last word of a partial transcript may still be revised, and "Mr." or "3." followed by
  more words of the same sentence are the usual abbreviation errors of punctuated ASR, which a following
  capitalised word does not rule out, so the window simply waits for the next word;
* at ``max_window`` units when no sentence end comes (unpunctuated ASR): the open window never holds more
  than ``max_window`` source units, so the prompt, the output cap and the cost of an update stay bounded
  whatever the talk's length.

Units are whitespace-separated words, or characters for sources in unspaced scripts (zh, ja).

Sources: SimulStreaming (Macháček and Polák, 2025; ufal/SimulStreaming) trims its LLM translator's context
at sentence boundaries ("sentence trimming") and keeps a bounded number of previous sentences as context;
whisper_streaming's LocalAgreement (Macháček et al., 2023) commits what consecutive updates agree on. simul's
policy commits at the windows' ends and applies mask-k or LocalAgreement inside the open window.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from simul.common.errors import UsageError
from simul.common.languages import get_language
from simul.common.sentences import is_sentence_end
from simul.streams.format import Stream


@dataclass(frozen=True)
class WindowPolicy:
    """The long-form decoding policy's options (recorded in every run on long-form streams)."""

    max_window: int = 30  # source units (words) at most in the open window
    context_sentences: int = 1  # committed (source, target) pairs put before the window in the prompt

    def check(self) -> None:
        if self.max_window < 1:
            raise UsageError(
                f"--max-window must be at least 1 source word, got {self.max_window} (a window of "
                "0 words could never translate anything; 20-40 suits talks)"
            )
        if self.context_sentences < 0:
            raise UsageError(f"--context-sentences must be 0 or more, got {self.context_sentences}")

    def to_json(self) -> dict[str, Any]:
        return {
            "policy": "sentence-window",
            "max_window": self.max_window,
            "context_sentences": self.context_sentences,
            "cut": "sentence ends in the source (once a later word has arrived), else every max_window units",
            "commit": "a closed window gets a final translation and is never revised",
        }


def source_units(text: str, unspaced: bool) -> list[str]:
    """A source text as the units windows are counted in."""
    if unspaced:
        return [ch for ch in text if not ch.isspace()]
    return text.split()


def join_units(units: Sequence[str], unspaced: bool) -> str:
    return ("" if unspaced else " ").join(units)


def closed_windows(
    units: Sequence[str], start: int, final: bool, policy: WindowPolicy, closable: int | None = None
) -> list[tuple[int, int]]:
    """The windows ``[a, b)`` that close now, the open window starting at unit ``start``.

    A sentence end at unit i closes ``[start, i + 1)`` when a later unit exists or the talk is final; a window
    reaching more than ``max_window`` units closes after ``max_window``; at the talk's end what is left closes
    (in pieces of at most ``max_window``). Before the end, no window closes past unit ``closable`` (the
    recognizer's committed words, when the step says how many: the rest may still be revised)."""
    windows: list[tuple[int, int]] = []
    n = len(units)
    bound = n if final or closable is None else min(n, closable)
    a = start
    while a < n:
        limit = min(n, a + policy.max_window)
        end = None
        for i in range(a, min(limit, bound)):
            if is_sentence_end(units[i]) and (i + 1 < n or final):
                end = i + 1
                break
        if end is None:
            if (n - a > policy.max_window and a + policy.max_window <= bound) or (final and n > a):
                end = limit
            else:
                break
        windows.append((a, end))
        a = end
    return windows


@dataclass(frozen=True)
class WindowUpdate:
    """What the policy does at one step of a talk: the windows it closes, and the open window after them."""

    units: list[str]  # the step's source units
    closed: list[tuple[int, int]]  # windows [a, b) closed at this step, in order
    start: int  # the open window's first unit, after the closes
    final: bool
    unspaced: bool

    def source(self, a: int, b: int | None = None) -> str:
        return join_units(self.units[a:b], self.unspaced)

    @property
    def open_source(self) -> str | None:
        """The open window's source, re-translated at this step (None when there is none, or at the end)."""
        return None if self.final or self.start >= len(self.units) else self.source(self.start)


def window_updates(stream: Stream, policy: WindowPolicy) -> Iterator[WindowUpdate]:
    """The policy's windows step by step: a function of the transcript and the policy alone, so the decoder
    (simul.decoding.longform.talk) and the context bound before decoding walk the same windows."""
    unspaced = get_language(stream.src).unspaced
    start = 0
    for step in stream.steps:
        units = source_units(step.source, unspaced)
        committed = step.extra.get("committed_chars")  # simul streams asr --audio --longform's steps
        closable = None
        if type(committed) is int and 0 <= committed <= len(step.source):
            closable = len(source_units(step.source[:committed], unspaced))
        closed = closed_windows(units, start, step.final, policy, closable)
        if closed:
            start = closed[-1][1]
        yield WindowUpdate(units, closed, start, step.final, unspaced)

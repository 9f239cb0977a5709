"""LocalAgreement-2 over timed words: what two consecutive recognitions of a growing buffer agree on is final.

This is the hypothesis buffer of ufal/whisper_streaming (``HypothesisBuffer`` in ``whisper_online.py``,
Macháček et al., 2023), written anew for simul:

* :meth:`AgreementBuffer.insert` takes the words of a new recognition on the talk's clock. Words that start
  before the last committed word ended (100 ms of slack) are old audio and dropped; and when the first new
  word starts within a second of that end, a run of 1 to 5 words that repeats the last committed words is
  dropped too (Whisper, prompted with committed text, often says its last words again).
* :meth:`AgreementBuffer.flush` commits the longest common prefix of this recognition and the previous one
  and keeps the rest as the unconfirmed tail.

One difference: words are compared case- and punctuation-insensitively (whisper_streaming compares the
strings; :func:`agreement_key`), so ``to.`` at the end of one hypothesis and ``to`` inside the next agree;
the newer spelling is committed, as ``simul streams asr --stable local-agreement`` does with the same key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from simul.streams.partials import normalize_word

# Words starting this much before the end of the last committed word are still taken as new (ms).
OVERLAP_SLACK_MS = 100.0
# A new recognition whose first word starts within this of the last committed end may repeat its words (ms).
REPEAT_WINDOW_MS = 1000.0
REPEAT_MAX_WORDS = 5


@dataclass(frozen=True)
class TimedWord:
    """A recognized word and its audio span on the talk's clock (ms)."""

    start_ms: float
    end_ms: float
    text: str

    @property
    def key(self) -> str:
        return agreement_key(self.text)


def agreement_key(word: str) -> str:
    """What LocalAgreement compares a word by, on both paths (a whole recording's buffer here, a segment's
    growing audio in :func:`simul.streams.asr.growing.agreed_prefix`): lower case without punctuation
    (:func:`simul.streams.partials.normalize_word`, as recognized words are aligned to transcripts), the
    word itself when nothing is left of it (a dash)."""
    return normalize_word(word) or word


@dataclass
class AgreementBuffer:
    """The committed words still inside the audio buffer and the unconfirmed tail of the last recognition."""

    committed_in_buffer: list[TimedWord] = field(default_factory=list)
    unconfirmed: list[TimedWord] = field(default_factory=list)
    last_committed_end_ms: float = 0.0
    _new: list[TimedWord] = field(default_factory=list)

    def insert(self, words: Sequence[TimedWord]) -> int:
        """Take a new recognition (talk-clock words); returns how many repeated words were dropped."""
        new = [w for w in words if w.start_ms > self.last_committed_end_ms - OVERLAP_SLACK_MS]
        dropped = 0
        if (
            new
            and self.committed_in_buffer
            and abs(new[0].start_ms - self.last_committed_end_ms) < (REPEAT_WINDOW_MS)
        ):
            limit = min(len(self.committed_in_buffer), len(new), REPEAT_MAX_WORDS)
            for size in range(1, limit + 1):
                tail = [w.key for w in self.committed_in_buffer[-size:]]
                if tail == [w.key for w in new[:size]]:
                    new = new[size:]
                    dropped = size
                    break
        self._new = new
        return dropped

    def flush(self) -> list[TimedWord]:
        """Commit the words this recognition and the previous one start with alike (LocalAgreement-2)."""
        commit: list[TimedWord] = []
        while self._new and self.unconfirmed and self._new[0].key == self.unconfirmed[0].key:
            word = self._new.pop(0)
            self.unconfirmed.pop(0)
            commit.append(word)
        if commit:
            self.last_committed_end_ms = commit[-1].end_ms
        self.unconfirmed = self._new
        self._new = []
        self.committed_in_buffer.extend(commit)
        return commit

    def force(self, until_ms: float) -> list[TimedWord]:
        """Commit the unconfirmed words that end by ``until_ms`` without agreement (the buffer must be cut
        there); the unconfirmed words reaching past it are dropped, their audio is cut."""
        commit = [w for w in self.unconfirmed if w.end_ms <= until_ms]
        self.unconfirmed = [w for w in self.unconfirmed if w.start_ms >= until_ms]
        if commit:
            self.last_committed_end_ms = commit[-1].end_ms
        self.last_committed_end_ms = max(self.last_committed_end_ms, until_ms)
        self.committed_in_buffer.extend(commit)
        return commit

    def pop_committed(self, time_ms: float) -> None:
        """Forget the committed words that end by ``time_ms`` (their audio left the buffer)."""
        self.committed_in_buffer = [w for w in self.committed_in_buffer if w.end_ms > time_ms]

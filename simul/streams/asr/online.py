"""A whole recording as it arrives: re-recognize a trimmed audio buffer every chunk, commit what agrees.

The loop of ufal/whisper_streaming's ``OnlineASRProcessor`` (``whisper_online.py``, Macháček et al., 2023),
written anew for simul and bounded:

1. Every chunk (``interval_ms``, at least 1 s as whisper_streaming recommends) the new audio is appended to
   the buffer and the whole buffer is recognized with word timestamps (:meth:`WordRecognizer.words`).
2. The longest common prefix of this recognition and the previous one is committed (LocalAgreement-2,
   :mod:`simul.streams.asr.agreement`); the rest is the unconfirmed tail.
3. Whisper is prompted with the last ~200 characters (:data:`PROMPT_CHARS`) of committed text whose audio
   has left the buffer.
4. Once the buffer is longer than ``trim_after_ms`` (15 s) it is cut at the end of a committed Whisper
   segment (``trim="segment"``: the last segment but one that ends within the committed words) or of a
   committed sentence (``trim="sentence"``: the last sentence end among the committed words but the last
   word), and its committed words leave it.

whisper_streaming leaves the buffer as it is when no such point exists ("last segment not within committed
area"), and a long pause then lets it grow to 30 s and beyond; its issue #102 reports the repeated and
invented text that follows. Here the buffer is bounded:

* when neither rule finds a point, the buffer is cut at the end of its last committed word (everything
  before it is final anyway);
* a pause of 2 s or more after the last committed word, with nothing unconfirmed, cuts the buffer at that
  word's end; when the gate then hears no speech in the buffer, all but its last second is dropped, and
  when Whisper hears it and finds no words (noise, a breath, the tail of a committed word), all but its
  last 3 s: committed speech followed by silence, where Whisper invents and repeats text, is not
  recognized again, and silence does not pile up;
* **the buffer Whisper hears is never longer than** ``limit_ms``: before a recognition, a longer buffer is
  cut from the front: after the first committed word that ends past the excess; failing that, after the
  first unconfirmed word that does, the unconfirmed words up to it then committed without agreement
  (*forced* words); failing that, at the excess itself. Cuts at the limit and forced words are counted.

Times are on the talk's clock in ms. Each update records when its audio ended (computation-unaware
emission), how long the recognition took (measured on this machine) and the buffer it heard.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

import numpy as np

from simul.common.errors import UsageError
from simul.common.sentences import is_sentence_end
from simul.streams.asr import schedule
from simul.streams.asr.agreement import AgreementBuffer, TimedWord
from simul.streams.asr.audio import SAMPLE_RATE, Samples

Trim = Literal["segment", "sentence"]
TRIMS: tuple[Trim, ...] = get_args(Trim)
Timing = Literal["auto", "measured", "audio", "online"]
TIMINGS: tuple[Timing, ...] = get_args(Timing)
PROMPT_CHARS = 200
DEFAULT_CHUNK_MS = 1000.0
DEFAULT_TRIM_AFTER_MS = 15_000.0
DEFAULT_LIMIT_MS = 25_000.0
# A buffer in which Whisper found no words keeps this much of its end: speech may be starting there (ms).
NO_WORDS_KEEP_MS = 3000.0
# A pause this long after the last committed word, with nothing unconfirmed, cuts the buffer there (ms).
PAUSE_CUT_MS = 2000.0
# In a silent buffer this much of its end is kept, in case a word is starting (ms).
SILENCE_KEEP_MS = 1000.0
# The longest buffer Whisper can hear in one window (30 s) less room for its last timestamps.
MAX_LIMIT_MS = 29_000.0


@dataclass(frozen=True)
class Recognition:
    """One recognition of a buffer: its words and Whisper's segment ends, both relative to the buffer start
    (ms); ``heard`` is False when the gate found no speech and Whisper did not run."""

    words: tuple[TimedWord, ...]
    segment_ends_ms: tuple[float, ...]
    heard: bool = True
    capped: bool = False  # the decoding reached its token cap (recognizer.DecodingBounds)
    loops_dropped: int = 0  # Whisper segments dropped as loops (their compression ratio)


class WordRecognizer(Protocol):
    def words(self, samples: Samples, prompt: str) -> Recognition: ...


@dataclass(frozen=True)
class OnlineOptions:
    """How the buffer is fed, trimmed and bounded (recorded in the stream's provenance)."""

    interval_ms: float = DEFAULT_CHUNK_MS
    trim: str = "segment"
    trim_after_ms: float = DEFAULT_TRIM_AFTER_MS
    limit_ms: float = DEFAULT_LIMIT_MS
    timing: str = "auto"
    prompt_chars: int = PROMPT_CHARS

    def check(self) -> None:
        if self.interval_ms <= 0:
            raise UsageError(f"--interval-ms must be positive, got {self.interval_ms:g}")
        if self.trim not in TRIMS:
            raise UsageError(f"unknown --trim {self.trim!r}: use one of {', '.join(TRIMS)}")
        if self.timing not in TIMINGS:
            raise UsageError(f"unknown --timing {self.timing!r}: use one of {', '.join(TIMINGS)}")
        if not 0 < self.limit_ms <= MAX_LIMIT_MS:
            raise UsageError(
                f"--buffer-limit-s must be above 0 and at most {MAX_LIMIT_MS / 1000:g} (Whisper hears 30 s "
                f"at once), got {self.limit_ms / 1000:g}"
            )
        if self.interval_ms >= self.limit_ms:
            raise UsageError(
                f"--interval-ms ({self.interval_ms:g}) must be shorter than --buffer-limit-s "
                f"({self.limit_ms / 1000:g} s)"
            )
        if not 0 < self.trim_after_ms <= self.limit_ms:
            raise UsageError(
                f"--buffer-trim-s must be above 0 and at most --buffer-limit-s ({self.limit_ms / 1000:g}), "
                f"got {self.trim_after_ms / 1000:g}"
            )
        if self.prompt_chars < 0:
            raise UsageError(f"the prompt length must be 0 or more characters, got {self.prompt_chars}")


@dataclass(frozen=True)
class Update:
    """One recognition of the buffer and what it left committed and unconfirmed."""

    audio_ms: float  # the talk's audio heard so far (computation-unaware emission time)
    compute_ms: float  # measured: gate, Whisper and the bookkeeping
    cpu_ms: float  # the process's CPU time (all threads) in that time: the work, whatever else runs
    buffer_start_ms: float
    buffer_ms: float  # the length of the buffer Whisper heard
    committed: int  # how many words are committed so far (the loop's ``committed[:n]``; never fewer later)
    unconfirmed: tuple[TimedWord, ...]
    newly_committed: int
    heard: bool
    limit_cut: bool  # the buffer was cut at its limit before this recognition
    trimmed: str | None  # how it was cut after: segment, sentence, committed, pause, silence, no-words
    final: bool = False
    capped: bool = False  # Whisper's decoding stopped at its token cap
    loops_dropped: int = 0


@dataclass
class OnlineRecognizer:
    """The loop's state for one recording; :meth:`process` is one update, :meth:`finish` the end."""

    recognizer: WordRecognizer
    options: OnlineOptions = field(default_factory=OnlineOptions)
    audio: Samples = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    offset_ms: float = 0.0  # talk time of the buffer's first sample
    heard_ms: float = 0.0  # talk time of the end of the audio inserted so far
    committed: list[TimedWord] = field(default_factory=list)
    agreement: AgreementBuffer = field(default_factory=AgreementBuffer)
    limit_cuts: int = 0
    forced_words: int = 0
    trims: dict[str, int] = field(default_factory=dict)
    repeated_words_dropped: int = 0
    late_updates: int = 0  # updates that started after their chunk end (the recognizer was busy)
    cancelled_updates: int = 0  # late updates that the end of the recording overtook (``auto``)

    def state(self) -> dict[str, Any]:
        """A copy of everything an update changes, for :meth:`restore` (the recognizer is left out: a
        recognition changes nothing in it)."""
        return {k: copy.deepcopy(v) for k, v in vars(self).items() if k not in ("recognizer", "options")}

    def restore(self, state: dict[str, Any]) -> None:
        """Back to :meth:`state`'s copy, as if the updates since had not run; the copy is taken over, not
        copied again (use each copy once)."""
        vars(self).update(state)

    def insert_audio(self, samples: Samples) -> None:
        self.audio = np.concatenate([self.audio, np.asarray(samples, dtype=np.float32)])
        self.heard_ms += 1000.0 * len(samples) / SAMPLE_RATE

    @property
    def buffer_ms(self) -> float:
        return 1000.0 * len(self.audio) / SAMPLE_RATE

    def prompt(self) -> str:
        """The last ``prompt_chars`` characters (whole words) of committed text that left the buffer."""
        words: list[str] = []
        size = 0
        for word in reversed(self.committed):
            if word.end_ms > self.offset_ms:
                continue
            if size >= self.options.prompt_chars:
                break
            words.append(word.text)
            size += len(word.text) + 1
        return " ".join(reversed(words))

    def process(self) -> Update:
        """Recognize the buffer (after cutting it to its limit), commit what agrees, trim."""
        started, cpu_started = time.perf_counter(), time.process_time()
        limit_cut = self._enforce_limit()
        buffer_start, buffer_ms = self.offset_ms, self.buffer_ms
        recognition = self.recognizer.words(self.audio, self.prompt())
        words = [
            TimedWord(self.offset_ms + w.start_ms, self.offset_ms + w.end_ms, w.text)
            for w in recognition.words
        ]
        self.repeated_words_dropped += self.agreement.insert(words)
        new = self.agreement.flush()
        self.committed.extend(new)
        trimmed = self._trim(recognition)
        compute_ms = 1000.0 * (time.perf_counter() - started)
        cpu_ms = 1000.0 * (time.process_time() - cpu_started)
        return Update(
            audio_ms=self.heard_ms,
            compute_ms=compute_ms,
            cpu_ms=cpu_ms,
            buffer_start_ms=buffer_start,
            buffer_ms=buffer_ms,
            committed=len(self.committed),
            unconfirmed=tuple(self.agreement.unconfirmed),
            newly_committed=len(new),
            heard=recognition.heard,
            limit_cut=limit_cut,
            trimmed=trimmed,
            capped=recognition.capped,
            loops_dropped=recognition.loops_dropped,
        )

    def finish(self, last: Update) -> Update:
        """The end of the recording: the unconfirmed tail of the last recognition is committed as it is."""
        rest = self.agreement.unconfirmed
        self.committed.extend(rest)
        self.agreement.unconfirmed = []
        return Update(
            audio_ms=last.audio_ms,
            compute_ms=0.0,
            cpu_ms=0.0,
            buffer_start_ms=last.buffer_start_ms,
            buffer_ms=last.buffer_ms,
            committed=len(self.committed),
            unconfirmed=(),
            newly_committed=len(rest),
            heard=last.heard,
            limit_cut=False,
            trimmed=None,
            final=True,
        )

    # --- cutting the buffer ---------------------------------------------------------------------------

    def cut_at(self, time_ms: float) -> None:
        """Drop the buffer's audio before talk time ``time_ms`` and the committed words that end by it."""
        if time_ms <= self.offset_ms:
            return
        samples = min(len(self.audio), round((time_ms - self.offset_ms) * SAMPLE_RATE / 1000.0))
        self.audio = self.audio[samples:]
        self.offset_ms += 1000.0 * samples / SAMPLE_RATE
        self.agreement.pop_committed(self.offset_ms)

    def _enforce_limit(self) -> bool:
        """Cut a buffer longer than the limit from the front, before Whisper hears it."""
        if self.buffer_ms <= self.options.limit_ms + 1e-6:
            return False
        excess_end = self.heard_ms - self.options.limit_ms
        committed_ends = [w.end_ms for w in self.agreement.committed_in_buffer if w.end_ms >= excess_end]
        if committed_ends:
            cut = min(committed_ends)
        else:
            ends = [w.end_ms for w in self.agreement.unconfirmed if w.end_ms >= excess_end]
            cut = min(ends) if ends else excess_end
            cut = min(cut, self.heard_ms)
            forced = self.agreement.force(cut)
            self.committed.extend(forced)
            self.forced_words += len(forced)
        self.cut_at(cut)
        if self.buffer_ms > self.options.limit_ms + 1e-6:  # the word end lay past the excess: cut exactly
            self.cut_at(excess_end)
        self.limit_cuts += 1
        return True

    def _trim(self, recognition: Recognition) -> str | None:
        """Cut the buffer after a recognition: in silence, or once it is longer than ``trim_after_ms``."""
        if not recognition.words and not self.agreement.unconfirmed:
            # nothing to wait for: the gate heard no speech, or Whisper heard the buffer and said nothing
            silent = not recognition.heard
            keep, kind = (SILENCE_KEEP_MS, "silence") if silent else (NO_WORDS_KEEP_MS, "no-words")
            if self.heard_ms - keep > self.offset_ms:
                self.cut_at(self.heard_ms - keep)
                return self._count(kind)
            return None
        if not self.agreement.committed_in_buffer:
            return None
        last_end = self.agreement.committed_in_buffer[-1].end_ms
        if not self.agreement.unconfirmed and self.heard_ms - last_end >= PAUSE_CUT_MS:
            self.cut_at(last_end)  # a pause after words that are all committed: keep only the pause
            return self._count("pause")
        if self.buffer_ms <= self.options.trim_after_ms:
            return None
        if self.options.trim == "segment":
            ends = [self.offset_ms + e for e in recognition.segment_ends_ms[:-1]]
            points = [e for e in ends if self.offset_ms < e <= last_end]
        else:
            inside = self.agreement.committed_in_buffer[:-1]
            points = [w.end_ms for w in inside if is_sentence_end(w.text) and w.end_ms > self.offset_ms]
        if points:
            self.cut_at(max(points))
            return self._count(self.options.trim)
        if last_end > self.offset_ms:
            self.cut_at(last_end)
            return self._count("committed")
        return None

    def _count(self, kind: str) -> str:
        self.trims[kind] = self.trims.get(kind, 0) + 1
        return kind


NEAR_END_UPDATES = 3.0  # an update may be stopped at the end only this many slowest updates before it
UpdateWatch = Callable[[Update, float], None]  # (the update, when its result is ready on the talk clock)


def recognize_recording(
    recognizer: WordRecognizer,
    samples: Samples,
    options: OnlineOptions,
    watch: UpdateWatch | None = None,
) -> tuple[list[Update], OnlineRecognizer]:
    """Every update of one recording, the last one final, and the loop (for its counts, among them
    ``late_updates``). :class:`simul.streams.asr.schedule.Schedule` decides where each update's audio ends
    (``--timing``); ``watch`` sees every update as it is done, with its ready time."""
    options.check()
    loop = OnlineRecognizer(recognizer, options)
    plan = schedule.Schedule(options.timing, len(samples), options.interval_ms, SAMPLE_RATE)
    updates: list[Update] = []
    heard = 0
    ready = 0.0
    duration_ms = 1000.0 * len(samples) / SAMPLE_RATE
    slowest = 0.0
    while heard < len(samples):
        late = plan.late
        end = plan.next_end(heard, ready)
        # ``auto`` behind the audio: an update that the end of the recording overtakes is stopped there.
        # Its state is kept only near the end (within a few of the slowest updates so far), where that can
        # happen: a copy at every late update would grow with the talk's committed words.
        near_end = duration_ms - 1000.0 * end / SAMPLE_RATE <= NEAR_END_UPDATES * slowest
        cancellable = options.timing == "auto" and plan.late > late and end < len(samples) and near_end
        state = loop.state() if cancellable else None
        loop.insert_audio(samples[heard:end])
        update = loop.process()
        done = max(ready, update.audio_ms) + update.compute_ms
        if state is not None and done > duration_ms:
            loop.restore(state)
            loop.cancelled_updates += 1
            ready = duration_ms
            continue
        heard = end
        ready = done
        slowest = max(slowest, update.compute_ms)
        updates.append(update)
        if watch is not None:
            watch(update, ready)
    if updates:
        updates.append(loop.finish(updates[-1]))
    loop.late_updates = plan.late
    return updates, loop


def emission_times(updates: Sequence[Update]) -> list[float]:
    """Computation-aware emission of the updates (:func:`simul.streams.asr.schedule.emission_times`)."""
    return schedule.emission_times([u.audio_ms for u in updates], [u.compute_ms for u in updates])

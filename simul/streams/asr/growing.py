"""Partial transcripts of one segment: re-recognize its growing audio at fixed intervals, then all of it.

At audio times ``interval, 2*interval, ...`` before the segment's end, the recognizer hears the segment's
audio up to that time and gives a hypothesis; at the segment's end it hears all of it and gives the final
transcript. Each hypothesis has two times, both recorded:

* ``audio_ms``: how much audio it heard (kept in the step's ``extra``);
* ``time_ms``: when it would have been emitted by one recognizer working through the steps in order, as
  audio arrives: a step starts when its audio is there and the previous step is done, and takes the
  measured compute time, so ``time_ms = max(audio_ms, previous time_ms) + compute_ms``
  (:mod:`simul.streams.asr.schedule`, as for a whole recording). Times never decrease. A recognizer
  slower than real time falls behind within a segment (``waited`` steps started late); each segment starts
  afresh at its own offset, as if it had the recognizer to itself.

Steps (:func:`segment_steps`) are the hypotheses shown to the translator: the raw hypothesis (``raw``) or,
with ``local-agreement``, only what the last two hypotheses agree on (LocalAgreement-2: the longest common
prefix of their words, compared without case and punctuation, in the newer hypothesis's spelling, without
punctuation after its last word). The first hypothesis shows nothing under local agreement. Empty
hypotheses (no speech yet) give no step, consecutive identical steps are one step at the earlier time,
and the final step is the final transcript; when the last partial already equals it, that partial is the
final step (the stream format's rule for every importer).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

from simul.common.errors import UsageError
from simul.common.sequences import common_prefix_length
from simul.streams.asr.agreement import agreement_key
from simul.streams.asr.audio import SAMPLE_RATE, Samples
from simul.streams.asr.schedule import chunk_ends, emission_times
from simul.streams.format import Step

StablePolicy = Literal["none", "local-agreement"]
STABLE_POLICIES: tuple[StablePolicy, ...] = get_args(StablePolicy)
DEFAULT_INTERVAL_MS = 500.0
_TRAILING_MARKS = ".,;:!?…"


class Recognizer(Protocol):
    def recognize(self, samples: Samples) -> str: ...


@dataclass(frozen=True)
class Hypothesis:
    """One recognition of the audio heard so far."""

    audio_ms: float
    compute_ms: float
    text: str
    final: bool


def recognize_growing(recognizer: Recognizer, samples: Samples, interval_ms: float) -> list[Hypothesis]:
    """Hypotheses of the growing audio of one segment, the last one on all of it (final)."""
    duration_ms = 1000.0 * len(samples) / SAMPLE_RATE
    marks = chunk_ends(duration_ms, interval_ms)
    hypotheses: list[Hypothesis] = []
    for index, audio_ms in enumerate(marks):
        final = index == len(marks) - 1
        end = len(samples) if final else round(audio_ms * SAMPLE_RATE / 1000.0)
        started = time.perf_counter()
        text = recognizer.recognize(samples[:end])
        compute_ms = 1000.0 * (time.perf_counter() - started)
        hypotheses.append(Hypothesis(audio_ms, compute_ms, text, final))
    return hypotheses


def agreed_prefix(older: str, newer: str) -> str:
    """LocalAgreement-2: the words both hypotheses start with (compared by
    :func:`simul.streams.asr.agreement.agreement_key`, as the long-form loop compares them), spelled as in
    ``newer``.

    Punctuation after the last agreed word is dropped: Whisper ends every hypothesis with a full stop.
    """
    old_words, new_words = older.split(), newer.split()
    count = common_prefix_length([agreement_key(w) for w in old_words], [agreement_key(w) for w in new_words])
    if count == 0:
        return ""
    words = new_words[:count]
    words[-1] = words[-1].rstrip(_TRAILING_MARKS) or words[-1]
    return " ".join(words)


def shown_texts(hypotheses: Sequence[Hypothesis], stable: str) -> list[str]:
    """What each hypothesis shows under the policy (the final one always shows the final transcript)."""
    if stable not in STABLE_POLICIES:
        raise UsageError(f"unknown --stable {stable!r}: use one of {', '.join(STABLE_POLICIES)}")
    shown: list[str] = []
    previous: str | None = None
    for hypothesis in hypotheses:
        if hypothesis.final or stable == "none":
            shown.append(hypothesis.text)
        else:
            shown.append("" if previous is None else agreed_prefix(previous, hypothesis.text))
        previous = hypothesis.text
    return shown


@dataclass(frozen=True)
class SegmentSteps:
    steps: list[Step]
    waited: int  # steps that started after their audio was there (the recognizer was still busy)


def segment_steps(
    hypotheses: Sequence[Hypothesis], stable: str, offset_ms: float | None = None
) -> SegmentSteps:
    """The stream steps of one segment; no steps when the final transcript is empty (nothing heard)."""
    if not hypotheses or not hypotheses[-1].final:
        raise ValueError("the last hypothesis must be the final one")
    texts = shown_texts(hypotheses, stable)
    times = emission_times([h.audio_ms for h in hypotheses], [h.compute_ms for h in hypotheses])
    waited = 0
    ready = 0.0
    for hypothesis, emitted in zip(hypotheses, times, strict=True):
        waited += ready > hypothesis.audio_ms
        ready = emitted
    final_text = texts[-1]
    if not final_text.strip():
        return SegmentSteps([], waited)
    steps: list[Step] = []
    for index, (hypothesis, text, emitted) in enumerate(zip(hypotheses, texts, times, strict=True)):
        final = index == len(hypotheses) - 1
        if not text.strip() or (steps and steps[-1].source == text):
            continue
        extra: dict[str, float] = {
            "audio_ms": round(hypothesis.audio_ms, 1),
            "compute_ms": round(hypothesis.compute_ms, 1),
        }
        if offset_ms is not None:
            extra["talk_time_ms"] = round(offset_ms + emitted, 1)
        steps.append(Step(source=text, final=final, time_ms=emitted, extra=extra))
    last = steps[-1]
    if not last.final:  # the last partial already said the final text: it is the final step
        steps[-1] = Step(source=last.source, final=True, time_ms=last.time_ms, extra=last.extra)
    return SegmentSteps(steps, waited)

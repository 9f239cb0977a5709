"""A recording without Whisper, for the properties of `simul streams asr --audio FILE --longform`.

The talk is the first 12 reference segments of ACL 60/60 dev talk 2022.acl-long.110 (the shipped long-form
fixture: English source lines, German references and their times on the talk's clock). The recognizer is
the scripted one of tests/test_asr_online.py: it "hears" the words it is given, at their times, inside
each buffer the online loop hands it (a word cut by the buffer's end is misheard); the audio it reads is
its own clock (sample k is the number k), so only the WAV file's header matters, and the speech mask is
given. :func:`recognizing` installs all three for one command.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from simul.common.paths import fixtures_dir
from simul.streams.asr.agreement import TimedWord
from simul.streams.asr.audio import FRAME_MS, Samples, write_wav
from simul.streams.asr.online import Recognition
from tests.test_asr_online import FakeClock, ScriptedRecognizer, clock_audio

TALK_FILE = fixtures_dir() / "streams" / "acl6060-dev-110-first12-en-de-longform.jsonl"
WAV_RATE = 1000  # the header's rate: the recognizer reads its clock, not these samples


@dataclass(frozen=True)
class Line:
    source: str
    reference: str
    offset_ms: float
    duration_ms: float


@cache
def talk() -> tuple[tuple[Line, ...], float]:
    """The talk's lines and the recording's length (ms)."""
    record = json.loads(TALK_FILE.read_text(encoding="utf-8").splitlines()[0])
    lines = tuple(
        Line(s["source"], s["references"][0], float(s["offset_ms"]), float(s["duration_ms"]))
        for s in record["segments"]
    )
    return lines, float(record["duration_ms"])


def spoken(lines: Sequence[Line], texts: Sequence[str] | None = None) -> list[TimedWord]:
    """The words of each line (or of ``texts``, one per line) spread over the line's time, each word 80 % of
    its share."""
    words: list[TimedWord] = []
    for k, line in enumerate(lines):
        said = (line.source if texts is None else texts[k]).split()
        if not said:
            continue
        slot = line.duration_ms / len(said)
        for index, word in enumerate(said):
            start = line.offset_ms + index * slot
            words.append(TimedWord(start, start + 0.8 * slot, word))
    return words


def write_recording(path: Path, duration_ms: float) -> Path:
    """A WAV file of the recording's length (a quiet tone; its samples are never recognized)."""
    frames = round(duration_ms * WAV_RATE / 1000.0)
    write_wav(path, 0.1 * np.sin(np.arange(frames) / 3.0), rate=WAV_RATE)
    return path


class StandIn:
    """The scripted recognizer as simul.streams.asr.recognizer.load_recognizer returns one."""

    def __init__(self, words: Sequence[TimedWord]) -> None:
        self.inner = ScriptedRecognizer(list(words), FakeClock())
        self.load_seconds = 0.0

    def words(self, samples: Samples, prompt: str) -> Recognition:
        return self.inner.words(samples, prompt)

    def describe(self) -> dict[str, Any]:
        return {"model": "scripted", "window": "trimmed"}


def speech_frames(duration_ms: float, spans: Sequence[tuple[float, float]] | None) -> npt.NDArray[np.bool_]:
    """The speech mask of the recording: speech everywhere (``None``) or inside ``spans`` (ms) only."""
    frames = int(np.ceil(duration_ms / FRAME_MS))
    if spans is None:
        return np.ones(frames, dtype=bool)
    mask = np.zeros(frames, dtype=bool)
    for start, end in spans:
        mask[max(0, int(start // FRAME_MS)) : max(0, int(end // FRAME_MS))] = True
    return mask


@contextmanager
def recognizing(
    words: Sequence[TimedWord],
    duration_ms: float,
    speech: Sequence[tuple[float, float]] | None = None,
) -> Iterator[None]:
    """While inside: the recording is ``duration_ms`` long, holds ``words`` and speech where ``speech`` says
    (everywhere by default), and no model is loaded."""
    mask = speech_frames(duration_ms, speech)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("simul.streams.asr.talk.read_audio", lambda path: clock_audio(duration_ms / 1000.0))
        patch.setattr("simul.streams.asr.talk.speech_mask", lambda samples: mask)
        patch.setattr("simul.streams.asr.recognizer.load_recognizer", lambda model, options: StandIn(words))
        yield

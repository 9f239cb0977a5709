"""The part of ``simul streams asr --audio`` and ``simul streams acl6060 --audio-dir`` below the CLI.

Loads the recognizer (Whisper base from its PyPI packages, or ``--asr-model DIR``), recognizes every
segment step by step and returns the streams with their figures; the CLI writes and reports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from simul.common.errors import UsageError
from simul.streams.asr.build import AudioImport, AudioSegment, Progress, audio_streams, check_spans
from simul.streams.asr.growing import DEFAULT_INTERVAL_MS, STABLE_POLICIES
from simul.streams.asr.recognizer import RecognizerOptions, load_recognizer


@dataclass(frozen=True)
class AudioSettings:
    """Everything the audio path of the two commands takes from the command line."""

    model: Path | None = None
    interval_ms: float = DEFAULT_INTERVAL_MS
    stable: str = "none"
    options: RecognizerOptions = field(default_factory=RecognizerOptions)

    def check(self) -> None:
        if self.interval_ms <= 0:
            raise UsageError(f"--interval-ms must be positive, got {self.interval_ms:g}")
        if self.stable not in STABLE_POLICIES:
            raise UsageError(f"unknown --stable {self.stable!r}: use one of {', '.join(STABLE_POLICIES)}")
        self.options.check()


def recognize_segments(
    items: Sequence[AudioSegment],
    settings: AudioSettings,
    src: str,
    tgt: str,
    progress: Progress | None = None,
) -> AudioImport:
    settings.check()
    check_spans(items)  # audio errors before the model is loaded
    recognizer = load_recognizer(settings.model, settings.options)
    result = audio_streams(
        items,
        recognizer,
        src,
        tgt,
        settings.interval_ms,
        settings.stable,
        recognizer.describe(),
        progress,
    )
    result.load_seconds = recognizer.load_seconds
    return result

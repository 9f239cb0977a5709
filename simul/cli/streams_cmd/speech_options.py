"""The option groups of `simul streams acl6060` and `simul streams asr` (speech.py), and the settings record
(:class:`AudioRequest`) that the two paths of `simul streams asr --audio` take: per segment
(segment_audio.py) and the whole recording as one long-form stream (talk_audio.py).

Each mode of the commands has its own group; the options of the modes not chosen are refused (exit 2),
every one named (:func:`only_with`, :func:`not_with`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from simul.streams.asr.build import AudioSettings
from simul.streams.asr.growing import StablePolicy
from simul.streams.asr.recognizer import AsrWindow, ComputeType, RecognizerOptions, Vad
from simul.streams.partials import DEFAULT_MAX_GAP_MS
from simul.streams.partials.formats import AlignMode, PartialsFormat, TimeUnit
from simul.streams.simulate import DEFAULT_INTERVAL_MS


@dataclass(frozen=True)
class PartialsOptions:
    """Reading a recognizer's output (--partials) and fitting its words to the segments."""

    partials: Annotated[
        list[str] | None,
        typer.Option(
            "--partials",
            metavar="<file>",
            help="Recognizer output, FILE or TALK=FILE (repeatable; a talk id in the file name also works).",
        ),
    ] = None
    partials_format: Annotated[
        PartialsFormat | None,
        typer.Option("--partials-format", help="Format of --partials (default: from the file suffix)."),
    ] = None
    time_unit: Annotated[
        TimeUnit | None,
        typer.Option("--time-unit", help="Unit of the times in --partials (default: sltev cs, else ms)."),
    ] = None
    align: Annotated[
        AlignMode, typer.Option("--align", help="Assign recognized words to segments by text or by time.")
    ] = "text"
    max_gap_ms: Annotated[
        float, typer.Option(help="Words up to this far (ms) outside every segment go to the nearest one.")
    ] = DEFAULT_MAX_GAP_MS


@dataclass(frozen=True)
class AsrOptions:
    """Recognizing audio (acl6060 --audio-dir, asr --audio): the recognizer and the partials it shows."""

    stable: Annotated[
        StablePolicy,
        typer.Option(
            "--stable",
            help="Partials shown: all, or what the last two agree on (local-agreement: LocalAgreement-2).",
        ),
    ] = "none"
    asr_model: Annotated[
        Path | None,
        typer.Option(
            help="faster-whisper (CTranslate2) model folder. Default: Whisper base from the simul[asr] "
            "packages."
        ),
    ] = None
    asr_window: Annotated[
        AsrWindow,
        typer.Option(
            "--asr-window", help="Encoder input: the audio so far + 3 s (trimmed) or 30 s windows (padded)."
        ),
    ] = "trimmed"
    vad: Annotated[Vad, typer.Option("--vad", help="Speech gate before Whisper.")] = "silero"
    asr_compute_type: Annotated[
        ComputeType, typer.Option("--asr-compute-type", help="CTranslate2 compute type.")
    ] = "int8"
    asr_beam_size: Annotated[int, typer.Option(help="Whisper beam size (1: greedy).")] = 1
    asr_threads: Annotated[int, typer.Option(help="CPU threads for Whisper (0: min(4, cores)).")] = 0

    def settings(self, interval_ms: float | None, language: str) -> AudioSettings:
        options = RecognizerOptions(
            language=language,
            beam_size=self.asr_beam_size,
            compute_type=self.asr_compute_type,
            threads=self.asr_threads,
            window=self.asr_window,
            vad=self.vad,
        )
        settings = AudioSettings(
            model=self.asr_model,
            interval_ms=DEFAULT_INTERVAL_MS if interval_ms is None else interval_ms,
            stable=self.stable,
            options=options,
        )
        settings.check()
        return settings


@dataclass(frozen=True)
class SimulateOptions:
    """Partials simulated from the segment times (acl6060 --simulate, and its --longform talks)."""

    simulate: Annotated[
        bool, typer.Option("--simulate", help="Simulate recognizer partials from the segment times.")
    ] = False
    word_times: Annotated[
        list[str] | None,
        typer.Option(
            "--word-times",
            metavar="<file>",
            help="Word-timed transcript of a talk for --simulate, FILE or TALK=FILE (repeatable).",
        ),
    ] = None
    revise_rate: Annotated[
        float | None,
        typer.Option(
            "--revise-rate", help="Share of simulated partials whose last word is first misrecognized."
        ),
    ] = None
    seed: Annotated[int, typer.Option("--seed", help="Seed of the simulated revisions.")] = 0


def only_with(mode: str, options: list[str]) -> list[str]:
    """The problem of options given outside the mode they belong to (none when the list is empty)."""
    return [f"options that only apply with {mode}: {', '.join(options)}"] if options else []


def not_with(mode: str, options: list[str], why: str = "") -> list[str]:
    """The problem of options that the mode ``mode`` has no use for (none when the list is empty)."""
    return [f"options that do not apply with {mode}{why}: {', '.join(options)}"] if options else []


@dataclass(frozen=True)
class AudioRequest:
    """What `simul streams asr --audio FILE` was asked, whichever path (per segment or long-form) runs it."""

    out: Path
    audio: Path
    source: Path | None
    refs: list[Path]
    name: str | None
    talk: str | None
    segments: Path | None
    interval_ms: float | None
    split_silence_ms: float | None
    start: int
    limit: int | None
    src_lang: str
    tgt_lang: str
    as_json: bool

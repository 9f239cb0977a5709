"""`simul streams asr --audio FILE --longform`: a whole recording as one long-form stream.

The options of the buffer loop (:class:`TalkAsrOptions`) belong to this mode only; `speech.py` refuses them
elsewhere. The recognizer options (model, VAD, compute type, beam, threads) are the ASR group's. The stream
per segment (`--audio FILE` without --longform) is segment_audio.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from simul.cli.common import err_console, print_json
from simul.cli.ignored import refuse
from simul.cli.option_groups import changed
from simul.cli.streams_cmd.common import warn, write_output
from simul.cli.streams_cmd.speech_options import AsrOptions, AudioRequest, PartialsOptions, not_with
from simul.common.languages import get_language
from simul.common.safe_text import markup, visible
from simul.streams.asr.online import (
    DEFAULT_CHUNK_MS,
    DEFAULT_LIMIT_MS,
    DEFAULT_TRIM_AFTER_MS,
    OnlineOptions,
    Timing,
    Trim,
)
from simul.streams.asr.recognizer import (
    EXTRA_UPDATE_TOKENS,
    UPDATE_TOKENS_PER_SECOND,
    DecodingBounds,
    RecognizerOptions,
)


@dataclass(frozen=True)
class TalkAsrOptions:
    """The buffer loop of --audio --longform (whisper_streaming's options, bounded)."""

    trim: Annotated[
        Trim,
        typer.Option(
            "--trim",
            help="With --audio --longform: cut the buffer at the end of a committed Whisper segment or "
            "sentence.",
        ),
    ] = "segment"
    buffer_trim_s: Annotated[
        float,
        typer.Option(
            "--buffer-trim-s", help="With --audio --longform: trim the buffer once it is longer than this."
        ),
    ] = DEFAULT_TRIM_AFTER_MS / 1000.0
    buffer_limit_s: Annotated[
        float,
        typer.Option(
            "--buffer-limit-s",
            help="With --audio --longform: Whisper never hears a longer buffer (cut before recognizing).",
        ),
    ] = DEFAULT_LIMIT_MS / 1000.0
    timing: Annotated[
        Timing,
        typer.Option(
            "--timing",
            help="With --audio --longform: auto (an update every chunk while the recognizer keeps up, then "
            "all the audio that arrived while it ran: a bounded lag), measured (an update every chunk, "
            "compute included: the same transcript on any machine), audio (chunk ends, nothing measured in "
            "the stream: the same file on any thread count) or online (whisper_streaming's live schedule).",
        ),
    ] = "auto"

    tokens_per_s: Annotated[
        float,
        typer.Option(
            "--asr-tokens-per-s",
            help="With --audio --longform: cap each update's Whisper decoding at this many tokens per "
            f"second of buffer + {EXTRA_UPDATE_TOKENS} (0: no cap).",
        ),
    ] = UPDATE_TOKENS_PER_SECOND
    no_repeat_ngram: Annotated[
        int,
        typer.Option(
            "--asr-no-repeat-ngram",
            help="With --audio --longform: faster-whisper's no_repeat_ngram_size (0: off).",
        ),
    ] = 0
    repetition_penalty: Annotated[
        float,
        typer.Option(
            "--asr-repetition-penalty",
            help="With --audio --longform: faster-whisper's repetition_penalty (1: off).",
        ),
    ] = 1.0
    compression_ratio: Annotated[
        float | None,
        typer.Option(
            "--asr-compression-ratio",
            help="With --audio --longform: drop a Whisper segment whose gzip compression ratio is above "
            "this (a loop; default: keep every segment).",
        ),
    ] = None
    seek_again: Annotated[
        bool,
        typer.Option(
            "--asr-seek-again",
            help="With --audio --longform: let faster-whisper decode the buffer a second time from its last "
            "timestamp when the first decoding does not close its segment (default: one pass an update).",
        ),
    ] = False

    def bounds(self) -> DecodingBounds:
        bounds = DecodingBounds(
            tokens_per_s=self.tokens_per_s,
            no_repeat_ngram_size=self.no_repeat_ngram,
            repetition_penalty=self.repetition_penalty,
            compression_ratio=self.compression_ratio,
            seek_again=self.seek_again,
        )
        bounds.check()
        return bounds

    def online(self, interval_ms: float | None) -> OnlineOptions:
        options = OnlineOptions(
            interval_ms=DEFAULT_CHUNK_MS if interval_ms is None else interval_ms,
            trim=self.trim,
            trim_after_ms=1000.0 * self.buffer_trim_s,
            limit_ms=1000.0 * self.buffer_limit_s,
            timing=self.timing,
        )
        options.check()
        return options


def asr_longform_audio(
    request: AudioRequest, partials: PartialsOptions, asr: AsrOptions, talk_asr: TalkAsrOptions
) -> None:
    """--audio --longform: the whole recording as one stream, recognized as it arrives."""
    refuse(
        not_with(
            "--audio --longform",
            changed(partials)
            + changed(asr, ("stable", "asr_window"))
            + (["--talk"] if request.talk is not None else [])
            + (["--split-silence-ms"] if request.split_silence_ms is not None else [])
            + (["--start"] if request.start != 1 else [])
            + (["--limit"] if request.limit is not None else []),
            " (the recording is one stream; its words are committed by LocalAgreement-2)",
        )
    )
    src, tgt = get_language(request.src_lang).short, get_language(request.tgt_lang).short
    settings = asr.settings(None, src)
    online = talk_asr.online(request.interval_ms)
    bounds = talk_asr.bounds()
    summary = recognize_talk_audio(request, settings.model, settings.options, online, bounds, src, tgt)
    if request.as_json:
        print_json(summary)


def recognize_talk_audio(
    request: AudioRequest,
    model: Path | None,
    recognizer_options: RecognizerOptions,
    online: OnlineOptions,
    bounds: DecodingBounds,
    src: str,
    tgt: str,
) -> dict[str, Any]:
    """Recognize the recording, write its long-form stream and report it; returns the JSON summary."""
    from simul.streams.asr.audio import audio_info
    from simul.streams.asr.build import _talk_of
    from simul.streams.asr.recognizer import load_recognizer
    from simul.streams.asr.talk import FallingBehind, recognize_talk, talk_segments

    out, audio, source, name = request.out, request.audio, request.source, request.name
    audio_info(audio)  # an unreadable or empty file is an error before anything else
    talk = _talk_of(audio)
    dataset = name or (source.name.split(".")[0] if source is not None else talk)
    # every mismatch of the text files is an error before the model loads
    reference_segments = talk_segments(audio, dataset, request.segments, request.refs, source)
    recognizer = load_recognizer(model, recognizer_options)
    recognizer.bounds = bounds
    names = (dataset, f"{dataset}-{talk}" if dataset != talk else talk)
    describe = {
        **recognizer.describe(),
        "condition_on_previous_text": True,
        "timestamps": "words",
        "decoding_bounds": bounds.to_json(),
    }
    describe.pop("window", None)

    def behind(event: FallingBehind) -> None:
        warn(event.message())

    if err_console.is_terminal:
        with err_console.status("recognizing") as status:

            def progress(count: int, heard_ms: float, total_ms: float) -> None:
                text = f"update {count}: {heard_ms / 1000:.0f} of {total_ms / 1000:.0f} s"
                status.update(markup(text, newlines=False))

            result = recognize_talk(
                audio, reference_segments, recognizer, online, names, src, tgt, describe, progress, behind
            )
    else:
        result = recognize_talk(
            audio, reference_segments, recognizer, online, names, src, tgt, describe, behind=behind
        )
    result.load_seconds = recognizer.load_seconds
    summary = {**result.summary(), "asr_threads": recognizer_options.cpu_threads}
    if summary["forced_words"]:
        warn(
            f"{summary['forced_words']} words were committed without agreement when the buffer reached its "
            f"limit ({online.limit_ms / 1000:g} s); a larger --buffer-limit-s gives them time to agree",
            label="note",
        )
    write_output(out, [result.stream])
    quarters = "/".join(f"{q:.0f}" for q in summary["update_ms_by_quarter"])
    what = (
        f"wrote 1 long-form talk ({summary['steps']} steps) to {out} ({dataset} {src}->{tgt}, "
        f"{summary['recognitions']} updates every {online.interval_ms:g} ms, buffer at most "
        f"{summary['buffer_max_s']:.1f} s; RTF {result.real_time_factor:.2f}, ms per update by quarter "
        f"{quarters} (median {summary['update_ms_median']:.0f}, {summary['updates_over_2x_median']} over "
        f"twice it, {summary['capped_updates']} at the token cap), final lag {summary['final_lag_s']:.1f} s"
    )
    if result.errors is not None:
        what += f", committed WER {result.errors.wer:.1%}"
    if not summary["keeps_up"]:
        helps = "a larger --interval-ms, " + (
            "" if online.timing in ("auto", "online") else "--timing auto, "
        )
        warn(
            f"the last result came {summary['final_lag_s']:.1f} s after the audio ended (RTF "
            f"{result.real_time_factor:.2f}, --timing {online.timing}): this recognizer does not keep up at "
            f"this interval on this machine; {helps}or a smaller --asr-model brings the lag down"
        )
    # the data set name (--name) and the paths are the user's text: shown, never obeyed by the terminal
    err_console.print(visible(what + ")"), soft_wrap=True, highlight=False, markup=False)
    times = summary.get("segment_times")
    if times:
        warn(
            f"the times of the {len(reference_segments)} reference lines were derived from the recognized "
            f"words ({times['matched_words']} of {times['source_words']} source words matched, "
            f"{times['interpolated_segments']} lines interpolated between their neighbours)",
            label="note",
        )
    return {"output": str(out), **summary}

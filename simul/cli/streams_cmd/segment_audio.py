"""`simul streams acl6060 --audio-dir` and `simul streams asr --audio FILE`: a stream per segment, each
segment's growing audio recognized again and again (simul.streams.asr.growing).

The whole recording as one long-form stream (`--audio FILE --longform`) is talk_audio.py's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simul.cli.common import err_console, print_json
from simul.cli.ignored import refuse
from simul.cli.option_groups import changed
from simul.cli.streams_cmd.common import summary_line, warn, write_output
from simul.cli.streams_cmd.speech_options import AsrOptions, AudioRequest, PartialsOptions, only_with
from simul.common.errors import UsageError
from simul.common.languages import get_language
from simul.common.safe_text import markup
from simul.streams.asr.build import (
    AudioImport,
    AudioSegment,
    AudioSettings,
    dataset_segments,
    file_segments,
    recognize_segments,
)
from simul.streams.segments import Segment, select


def _recognize(items: list[AudioSegment], settings: AudioSettings, src: str, tgt: str) -> AudioImport:
    """Recognize with a transient progress line on a terminal (nothing in logs: the summary says it all)."""
    if not err_console.is_terminal:
        return recognize_segments(items, settings, src, tgt)
    with err_console.status("loading the recognizer") as status:

        def progress(number: int, total: int, segment: Any) -> None:
            status.update(markup(f"recognizing segment {number}/{total} ({segment.id})", newlines=False))

        return recognize_segments(items, settings, src, tgt, progress)


def _audio_what(result: AudioImport, settings: AudioSettings) -> str:
    """The end of the summary line: recognizer, interval, speed and (with transcripts) the final WER."""
    model = settings.model.name if settings.model is not None else "whisper-base"
    stable = "" if settings.stable == "none" else f", {settings.stable}"
    what = f"{model} partials every {settings.interval_ms:g} ms{stable}; RTF {result.real_time_factor:.2f}"
    if result.errors is not None:
        what += f", final WER {result.errors.wer:.1%}"
    return what


def _report_audio(result: AudioImport) -> None:
    if result.real_time_factor > 1.0:
        warn(
            f"the recognizer took {result.real_time_factor:.2f} s of compute per second of audio "
            f"({result.waited_steps} steps started after their audio was there): it does not keep up at "
            "this interval on this machine; a larger --interval-ms or a smaller --asr-model keeps up"
        )
    if result.segments_without_speech:
        ids = ", ".join(result.segments_without_speech[:20])
        more = "" if len(result.segments_without_speech) <= 20 else ", ..."
        warn(
            f"{len(result.segments_without_speech)} segments gave no transcript (no speech heard) and "
            f"have no stream: {ids}{more}"
        )


def acl6060_audio(
    out: Path, chosen: list[Segment], audio_dir: Path, settings: AudioSettings, tgt: str, what: str
) -> tuple[int, dict[str, Any]]:
    """--audio-dir: recognize the chosen segments in their talks' audio."""
    items, without_audio = dataset_segments(chosen, audio_dir)
    if without_audio:
        talks = sorted({s.talk for s in without_audio})
        warn(
            f"{len(without_audio)} selected segments belong to talks without audio in {audio_dir} and "
            f"were skipped (talks {', '.join(talks[:5])}{', ...' if len(talks) > 5 else ''})",
            label="note",
        )
    return write_recognized(out, items, settings, "en", tgt, what)


def write_recognized(
    out: Path, items: list[AudioSegment], settings: AudioSettings, src: str, tgt: str, what: str
) -> tuple[int, dict[str, Any]]:
    """Recognize the segments' audio (acl6060 --audio-dir, asr --audio) and write a stream per segment."""
    recognized = _recognize(items, settings, src, tgt)
    _report_audio(recognized)
    count = write_output(out, recognized.streams)
    summary_line(count, out, 0, f"{what}, {_audio_what(recognized, settings)}")
    return count, recognized.summary()


def asr_segment_audio(request: AudioRequest, partials: PartialsOptions, asr: AsrOptions) -> None:
    """--audio: recognize one audio file, cut by --segments or at pauses, or whole; a stream per segment."""
    refuse(only_with("--partials", changed(partials) + (["--talk"] if request.talk is not None else [])))
    if request.segments is not None and request.split_silence_ms is not None:
        raise UsageError("--split-silence-ms only applies without --segments (the YAML gives the segments)")
    src, tgt = get_language(request.src_lang).short, get_language(request.tgt_lang).short
    settings = asr.settings(request.interval_ms, src)
    source, audio = request.source, request.audio
    dataset = request.name or (source.name.split(".")[0] if source is not None else audio_name(audio))
    items = file_segments(audio, dataset, request.segments, request.refs, source, request.split_silence_ms)
    by_id = {item.segment.id: item for item in items}
    chosen = [by_id[s.id] for s in select([i.segment for i in items], request.start, request.limit)]
    count, summary = write_recognized(request.out, chosen, settings, src, tgt, f"{dataset} {src}->{tgt}")
    if request.as_json:
        print_json({"output": str(request.out), **summary, "streams": count})


def audio_name(audio: Path) -> str:
    """Stream id prefix for an audio file: its name without the audio suffix (talk ids contain dots)."""
    name = audio.name
    for suffix in (".wav", ".flac", ".ogg", ".opus", ".mp3"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return audio.stem

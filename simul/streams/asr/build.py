"""Streams from audio: pick each segment's audio, recognize it step by step, and report what it cost.

Where the segments come from:

* ``simul streams acl6060 --audio-dir DIR``: the ACL 60/60 segments
  (:func:`simul.streams.acl6060.acl6060_segments`) with their YAML offsets and durations; each talk's audio
  is ``DIR/<talk>.wav`` (the YAML's ``wav``; other audio suffixes are accepted too).
* ``simul streams asr --audio FILE``: the rows of ``--segments YAML`` (rows naming another talk's audio
  are skipped when the YAML lists several talks), else the whole file as one segment, or with
  ``split_silence_ms`` the file cut at pauses at least that long
  (:func:`simul.streams.asr.audio.split_on_silence`).
  ``--ref`` gives one reference translation per segment (repeatable: several references, the first one
  first), ``--source`` one reference transcript per segment (for WER), all line-aligned with the segments.

Every stream keeps the reference transcript (when known) in ``provenance.transcript`` and the recognizer's
settings, audio file and timing in ``provenance.asr``, so WER and the real-time factor can be recomputed
from the stream file. :func:`recognize_segments` is what the two commands call: it checks the settings and
the audio, loads the recognizer and runs :func:`audio_streams`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError, UsageError
from simul.common.hashing import sha256_file
from simul.streams.asr.audio import SAMPLE_RATE, AudioInfo, audio_info, read_audio, split_on_silence
from simul.streams.asr.growing import (
    DEFAULT_INTERVAL_MS,
    STABLE_POLICIES,
    Hypothesis,
    Recognizer,
    recognize_growing,
    segment_steps,
)
from simul.streams.asr.recognizer import RecognizerOptions, load_recognizer
from simul.streams.asr.wer import WordErrors, corpus_errors
from simul.streams.format import Step, Stream
from simul.streams.segments import (
    Segment,
    SegmentTime,
    read_segment_yaml,
    read_utf8_lines,
    stream_from_segment,
)

AUDIO_SUFFIXES = (".wav", ".flac", ".ogg", ".opus", ".mp3")
# A segment may end a little after the audio does (rounding in the YAML): up to this much is cut silently.
END_TOLERANCE_MS = 500.0


@dataclass(frozen=True)
class AudioSegment:
    """A segment and where its audio is."""

    segment: Segment
    audio: Path


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


@dataclass
class AudioImport:
    """The streams built from audio and the figures about them (for the summary line and ``--json``)."""

    streams: list[Stream]
    segments: int = 0
    audio_ms: float = 0.0
    compute_ms: float = 0.0
    recognitions: int = 0
    waited_steps: int = 0
    segments_without_speech: list[str] = field(default_factory=list)
    load_seconds: float = 0.0
    errors: WordErrors | None = None

    @property
    def real_time_factor(self) -> float:
        return self.compute_ms / self.audio_ms if self.audio_ms > 0 else 0.0

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "streams": len(self.streams),
            "segments": self.segments,
            "unaligned_partials": 0,
            "audio_s": round(self.audio_ms / 1000.0, 3),
            "compute_s": round(self.compute_ms / 1000.0, 3),
            "real_time_factor": round(self.real_time_factor, 4),
            "recognitions": self.recognitions,
            "waited_steps": self.waited_steps,
            "segments_without_speech": self.segments_without_speech,
            "model_load_s": round(self.load_seconds, 3),
        }
        if self.errors is not None:
            out["final_wer"] = self.errors.to_json()
        return out


def talk_audio(audio_dir: Path, talk: str) -> Path | None:
    """``DIR/<talk>.wav`` (or another audio suffix), or None."""
    for suffix in AUDIO_SUFFIXES:
        path = audio_dir / f"{talk}{suffix}"
        if path.is_file():
            return path
    return None


def find_talk_audio(audio_dir: Path, talk: str) -> Path:
    """``DIR/<talk>.wav`` (or another audio suffix); the error lists what was looked for."""
    if not audio_dir.is_dir():
        raise SimulError(f"--audio-dir {audio_dir} is not a directory")
    path = talk_audio(audio_dir, talk)
    if path is None:
        raise SimulError(
            f"no audio for talk {talk} in {audio_dir} (looked for {talk}.wav and "
            f"{', '.join(AUDIO_SUFFIXES[1:])}); put the talk's audio there, named like the YAML's wav field, "
            f"or create it with `python tools/speak_acl6060.py --talk {talk} ...`"
        )
    return path


def _aligned_lines(path: Path, what: str, count: int, rows_from: str) -> list[str]:
    lines = read_utf8_lines(path, what)
    if len(lines) != count:
        raise SimulError(
            f"{path} has {len(lines)} lines but there are {count} segments ({rows_from}); {what} must have "
            "one line per segment, in order"
        )
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise SimulError(f"{path}:{number}: empty line; every segment needs its {what.split()[0]}")
    return [" ".join(line.split()) for line in lines]


def file_segments(
    audio: Path,
    name: str,
    segments_yaml: Path | None = None,
    references: Sequence[Path] = (),
    source: Path | None = None,
    split_silence_ms: float | None = None,
) -> list[AudioSegment]:
    """The segments of one audio file for ``simul streams asr --audio``; ids ``<name>-<n>``."""
    info = audio_info(audio)
    talk = _talk_of(audio)
    rows: list[SegmentTime | None]
    files: dict[str, Any] = {"audio_file": audio.name}
    picked: list[int] | None = None  # which lines of --ref/--source belong to the used YAML rows
    if segments_yaml is not None:
        all_rows = read_segment_yaml(segments_yaml)
        talks = sorted({row.talk for row in all_rows})
        picked = list(range(len(all_rows)))
        if len(talks) > 1:
            picked = [i for i, row in enumerate(all_rows) if row.talk == talk]
            if not picked:
                listed = ", ".join(talks[:5]) + (", ..." if len(talks) > 5 else "")
                raise SimulError(
                    f"{segments_yaml} lists talks {listed} but none is {talk} (the audio file's name); name "
                    "the audio file after its talk or use `simul streams acl6060 --audio-dir`"
                )
        rows = [all_rows[i] for i in picked]
        spans = [(all_rows[i].offset_ms, all_rows[i].offset_ms + all_rows[i].duration_ms) for i in picked]
        files["segments_file"] = segments_yaml.name
        count, rows_from = len(all_rows), f"rows of {segments_yaml}"
    elif split_silence_ms is not None:
        if split_silence_ms <= 0:
            raise SimulError(f"--split-silence-ms must be positive, got {split_silence_ms:g}")
        spans = split_on_silence(read_audio(audio), min_silence_ms=split_silence_ms)
        if not spans:
            raise SimulError(f"{audio} holds no speech loud enough to split on; pass --segments YAML")
        rows = [None] * len(spans)
        count, rows_from = len(spans), f"found by splitting {audio.name} at pauses of {split_silence_ms:g} ms"
    else:
        spans = [(0.0, info.duration_ms)]
        rows = [None]
        count, rows_from = 1, "without --segments the whole audio file is one segment"
    lines = picked if picked is not None else list(range(count))
    translations = [_aligned_lines(path, "reference file", count, rows_from) for path in references]
    transcripts = _aligned_lines(source, "source transcript", count, rows_from) if source else None
    if references:
        files["reference_file"] = references[0].name
    if len(references) > 1:
        files["more_reference_files"] = [path.name for path in references[1:]]
    if source is not None:
        files["source_file"] = source.name
    out: list[AudioSegment] = []
    for index, (start, end) in enumerate(spans):
        line = lines[index] + 1
        row = rows[index]
        provenance: dict[str, Any] = {"dataset": name, "line": line, "talk": talk, **files}
        if row is not None:
            provenance["yaml_line"] = row.line
        provenance["offset_s"] = round(start / 1000.0, 3)
        provenance["duration_s"] = round((end - start) / 1000.0, 3)
        segment = Segment(
            id=f"{name}-{line}",
            line=line,
            talk=talk,
            source=transcripts[line - 1] if transcripts else "",
            reference=translations[0][line - 1] if translations else None,
            offset_ms=start,
            duration_ms=end - start,
            provenance=provenance,
            more_references=tuple(other[line - 1] for other in translations[1:]),
        )
        out.append(AudioSegment(segment, audio))
    return out


def _talk_of(audio: Path) -> str:
    name = audio.name
    for suffix in AUDIO_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return audio.stem


def dataset_segments(
    segments: Sequence[Segment], audio_dir: Path
) -> tuple[list[AudioSegment], list[Segment]]:
    """ACL 60/60 segments with their talks' audio files, and the segments of talks without audio in DIR.

    Like recognizer partials that cover only some talks, talks without audio are skipped (and reported);
    it is an error only when none of the selected talks has audio.
    """
    untimed = [s for s in segments if not s.timed]
    if untimed:
        raise SimulError(
            f"segment {untimed[0].id} has no audio offset/duration: --audio-dir needs the segment YAML "
            "(put it next to the text files or pass --segments FILE)"
        )
    if not audio_dir.is_dir():
        raise SimulError(f"--audio-dir {audio_dir} is not a directory")
    found: dict[str, Path | None] = {}
    items: list[AudioSegment] = []
    skipped: list[Segment] = []
    for segment in segments:
        if segment.talk not in found:
            found[segment.talk] = talk_audio(audio_dir, segment.talk)
        path = found[segment.talk]
        if path is None:
            skipped.append(segment)
        else:
            items.append(AudioSegment(segment, path))
    if not items:
        find_talk_audio(audio_dir, segments[0].talk)  # raises, naming what was looked for
    return items, skipped


Progress = Callable[[int, int, Segment], None]


def audio_streams(
    items: Sequence[AudioSegment],
    recognizer: Recognizer,
    src: str,
    tgt: str,
    interval_ms: float,
    stable: str,
    describe: dict[str, Any],
    progress: Progress | None = None,
) -> AudioImport:
    """One stream per segment that holds speech, with real recognizer partials."""
    result = AudioImport(streams=[], segments=len(items))
    infos = check_spans(items)
    hashes = {path: sha256_file(path) for path in infos}
    pairs: list[tuple[str, str]] = []
    for number, item in enumerate(items, start=1):
        segment = item.segment
        if progress is not None:
            progress(number, len(items), segment)
        samples = read_audio(item.audio, segment.offset_ms or 0.0, segment.end_ms)
        if len(samples) == 0:
            raise SimulError(f"segment {segment.id} has no audio in {item.audio}")
        started = time.perf_counter()
        hypotheses = recognize_growing(recognizer, samples, interval_ms)
        elapsed = time.perf_counter() - started
        done = segment_steps(hypotheses, stable, segment.offset_ms)
        result.audio_ms += 1000.0 * len(samples) / SAMPLE_RATE
        result.compute_ms += 1000.0 * elapsed
        result.recognitions += len(hypotheses)
        result.waited_steps += done.waited
        if segment.source:
            # a segment without speech counts too: all its reference words are deletions
            pairs.append((segment.source, done.steps[-1].source if done.steps else ""))
        if not done.steps:
            result.segments_without_speech.append(segment.id)
            continue
        result.streams.append(
            _stream(segment, done.steps, hypotheses, src, tgt, interval_ms, stable, describe, item, hashes)
        )
    if pairs:
        result.errors = corpus_errors(pairs)
    return result


def check_spans(items: Sequence[AudioSegment]) -> dict[Path, AudioInfo]:
    """Check, before any recognition, that every audio file is readable and holds its segments."""
    infos: dict[Path, AudioInfo] = {}
    for item in items:
        if item.audio not in infos:
            infos[item.audio] = audio_info(item.audio)
        info, segment = infos[item.audio], item.segment
        start = segment.offset_ms or 0.0
        end = segment.end_ms if segment.end_ms is not None else info.duration_ms
        if end > info.duration_ms + END_TOLERANCE_MS or start >= info.duration_ms:
            where = segment.provenance.get("segments_file", "the segment list")
            raise SimulError(
                f"segment {segment.id} ({where}, {start / 1000.0:.3f}-{end / 1000.0:.3f} s) lies past "
                f"the end of {item.audio} ({info.duration_ms / 1000.0:.3f} s); the segment times and the "
                "audio belong to different recordings"
            )
    return infos


def _stream(
    segment: Segment,
    steps: Sequence[Step],
    hypotheses: Sequence[Hypothesis],
    src: str,
    tgt: str,
    interval_ms: float,
    stable: str,
    describe: dict[str, Any],
    item: AudioSegment,
    hashes: dict[Path, str],
) -> Stream:
    compute = sum(h.compute_ms for h in hypotheses)
    duration = hypotheses[-1].audio_ms
    asr: dict[str, Any] = {
        **describe,
        "audio_file": item.audio.name,
        "audio_sha256": hashes[item.audio],
        "interval_ms": interval_ms,
        "stable": stable,
        "recognitions": len(hypotheses),
        "compute_ms": round(compute, 1),
        "real_time_factor": round(compute / duration, 4) if duration > 0 else 0.0,
    }
    provenance: dict[str, Any] = {
        "simulated": False,
        "asr": asr,
        "time_origin": "segment_offset",
        "time_origin_ms": round(segment.offset_ms or 0.0, 1),
    }
    if segment.source:
        provenance["transcript"] = segment.source
    return stream_from_segment(segment, src, tgt, steps, provenance)


def recognize_segments(
    items: Sequence[AudioSegment],
    settings: AudioSettings,
    src: str,
    tgt: str,
    progress: Progress | None = None,
) -> AudioImport:
    """Recognize every segment's growing audio (Whisper base from its PyPI packages, or ``settings.model``)
    and return the streams with their figures; audio errors come before the model is loaded."""
    settings.check()
    check_spans(items)
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

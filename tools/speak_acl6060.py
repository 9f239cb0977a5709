#!/usr/bin/env python3
"""Speak the English segments of one ACL 60/60 talk with espeak-ng into one talk WAV (16 kHz mono).

Each segment is rendered by espeak-ng and placed at its ``offset`` from the segment YAML, with silence
between segments, so the file can stand in for the talk's real audio with the same YAML:

    python tools/speak_acl6060.py --data-dir ../shared/data/acl6060 --talk 2022.acl-long.110 --out-dir talks/
    simul streams acl6060 --data-dir ../shared/data/acl6060 --audio-dir talks/ --tgt-lang de -o streams.jsonl

espeak-ng often speaks slower than the speaker did. A rendering longer than its segment's ``duration`` is
spoken again faster (words per minute scaled by the ratio, up to ``--max-rate``); if it still does not fit,
it is cut at the segment end with a short fade and counted as truncated. With ``--min-rate``, a rendering
shorter than its segment is spoken again slower (down to that rate), so that its speech fills the segment
as the YAML's duration says (as forced alignment of the real talk gives it). Leading and trailing silence of
each rendering is trimmed first. The report on stderr lists the rate each segment needed.

Needs espeak-ng (Debian: ``apt-get install espeak-ng``). ``--limit N`` renders only the first N segments
of the talk and ends the file after the last of them (the shipped fixture ``fixtures/audio/acl6060`` is
``--limit 2``); ``--yaml-out``, ``--text-out`` write the matching YAML rows and English lines.
"""

from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simul.common.errors import SimulError
from simul.streams.acl6060 import acl6060_segments
from simul.streams.asr.audio import SAMPLE_RATE, Samples, read_audio, speech_mask, write_wav
from simul.streams.segments import Segment

DEFAULT_RATE = 175  # espeak-ng's own default, words per minute
MAX_RATE = 450
FADE_MS = 20.0
TAIL_MS = 1000.0  # silence after the last segment


@dataclass(frozen=True)
class Rendered:
    segment: Segment
    samples: Samples
    rate: int
    truncated: bool


def espeak(text: str, rate: int, voice: str, workdir: Path) -> Samples:
    """One rendering at ``rate`` words per minute, as 16 kHz mono with the edge silence trimmed."""
    text_file, wav_file = workdir / "text.txt", workdir / "speech.wav"
    text_file.write_text(text + "\n", encoding="utf-8")
    command = ["espeak-ng", "-v", voice, "-s", str(rate), "-w", str(wav_file), "-f", str(text_file)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SimulError(f"espeak-ng failed ({done.stderr.strip() or done.returncode}) on: {text[:80]}")
    samples = read_audio(wav_file)
    voiced = np.flatnonzero(speech_mask(samples))
    if len(voiced) == 0:
        return samples
    frame = SAMPLE_RATE // 50  # speech_mask's 20 ms frames
    keep = frame  # one frame of edge silence on each side
    return samples[max(0, voiced[0] * frame - keep) : (voiced[-1] + 1) * frame + keep]


def fit(
    segment: Segment, voice: str, rate: int, max_rate: int, workdir: Path, min_rate: int | None = None
) -> Rendered:
    """Render a segment, faster when needed so that it ends within the segment's duration (and, with
    ``min_rate``, slower when it is shorter, down to that rate, so that it fills its segment)."""
    assert segment.duration_ms is not None
    limit = round(segment.duration_ms * SAMPLE_RATE / 1000.0)
    samples = espeak(segment.source, rate, voice, workdir)
    if min_rate is not None and len(samples) < limit:
        slower = max(min_rate, math.floor(rate * len(samples) / limit))
        if slower < rate:
            rate = slower
            samples = espeak(segment.source, rate, voice, workdir)
    for _ in range(4):
        if len(samples) <= limit or rate >= max_rate:
            break
        rate = min(max_rate, math.ceil(rate * len(samples) / limit * 1.02))
        samples = espeak(segment.source, rate, voice, workdir)
    truncated = len(samples) > limit
    if truncated:
        samples = samples[:limit].copy()
        fade = min(len(samples), round(FADE_MS * SAMPLE_RATE / 1000.0))
        samples[len(samples) - fade :] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
    return Rendered(segment, samples, rate, truncated)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="ACL 60/60 folder (text and YAML)")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--talk", required=True, help="talk id, e.g. 2022.acl-long.110")
    parser.add_argument("--out-dir", type=Path, required=True, help="writes <talk>.wav here")
    parser.add_argument("--segments", type=Path, help="segment YAML (default: found next to the text)")
    parser.add_argument(
        "--tgt-lang",
        "--tgt",  # the old spelling, as simul streams still takes it
        dest="tgt",
        default="de",
        help="a target language present in the data (files are read)",
    )
    parser.add_argument("--limit", type=int, help="only the first N segments of the talk")
    parser.add_argument("--voice", default="en-us", help="espeak-ng voice (default en-us)")
    parser.add_argument("--rate", type=int, default=DEFAULT_RATE, help="words per minute to start from")
    parser.add_argument("--max-rate", type=int, default=MAX_RATE, help="fastest rate used to fit a segment")
    parser.add_argument(
        "--min-rate",
        type=int,
        help="speak a segment that is shorter than its duration slower, down to this rate, so that the "
        "speech fills it as the YAML says (default: never slower than --rate)",
    )
    parser.add_argument("--yaml-out", type=Path, help="also write the talk's YAML rows (the rendered ones)")
    parser.add_argument("--text-out", type=Path, help="also write the rendered English lines")
    args = parser.parse_args(argv)
    if shutil.which("espeak-ng") is None:
        print("error: espeak-ng is not installed (Debian: apt-get install espeak-ng)", file=sys.stderr)
        return 1
    try:
        segments, _ = acl6060_segments(args.data_dir, args.split, args.tgt, args.segments)
        talk = [s for s in segments if s.talk == args.talk]
        if not talk:
            talks = ", ".join(sorted({s.talk for s in segments})[:10])
            raise SimulError(f"no segments of talk {args.talk!r} in {args.data_dir} (talks: {talks}, ...)")
        if not all(s.timed for s in talk):
            raise SimulError("the segments have no offsets: pass the segment YAML with --segments")
        if args.limit is not None:
            talk = talk[: args.limit]
        end_ms = max(s.end_ms or 0.0 for s in talk) + (TAIL_MS if args.limit is None else 0.0)
        audio = np.zeros(math.ceil(end_ms * SAMPLE_RATE / 1000.0), dtype=np.float32)
        with tempfile.TemporaryDirectory() as tmp:
            for segment in talk:
                rendered = fit(segment, args.voice, args.rate, args.max_rate, Path(tmp), args.min_rate)
                assert segment.offset_ms is not None
                start = round(segment.offset_ms * SAMPLE_RATE / 1000.0)
                piece = rendered.samples[: len(audio) - start]
                audio[start : start + len(piece)] += piece
                note = " TRUNCATED" if rendered.truncated else ""
                spoken, slot = len(rendered.samples) / SAMPLE_RATE, (segment.duration_ms or 0.0) / 1000.0
                print(
                    f"{segment.id}: {spoken:6.2f} s of {slot:6.2f} s at {rendered.rate} wpm{note}",
                    file=sys.stderr,
                )
        out = args.out_dir / f"{args.talk}.wav"
        write_wav(out, audio)
        if args.yaml_out is not None:
            rows = [
                f"- {{duration: {s.provenance['duration_s']}, offset: {s.provenance['offset_s']}, "
                f"speaker_id: {s.talk}, wav: {s.talk}.wav}}"
                for s in talk
            ]
            args.yaml_out.write_text("\n".join(rows) + "\n", encoding="utf-8")
        if args.text_out is not None:
            args.text_out.write_text("".join(s.source + "\n" for s in talk), encoding="utf-8")
    except SimulError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {out} ({len(audio) / SAMPLE_RATE:.1f} s, {len(talk)} segments)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

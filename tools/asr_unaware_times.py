#!/usr/bin/env python3
"""Computation-unaware times for ASR streams: each step's ``time_ms`` becomes the audio it had heard.

``simul streams asr --audio`` and ``simul streams acl6060 --audio-dir`` time a step by when one recognizer
would have emitted it (audio heard, then the measured compute time). To compare with a long-form stream
built with ``--timing audio``, or to take the recognizer's speed out of the latency, this rewrites every
step's ``time_ms`` to ``extra.audio_ms`` (kept as it was in ``extra``, with ``measured_time_ms`` added):

    python tools/asr_unaware_times.py segments.jsonl segments-unaware.jsonl
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from simul.common.errors import SimulError
from simul.streams.format import Stream, read_streams, write_streams


def unaware(stream: Stream) -> Stream:
    steps = []
    for number, step in enumerate(stream.steps):
        if "audio_ms" not in step.extra:
            raise SimulError(f"stream {stream.id}, step {number}: no extra.audio_ms (not built from audio)")
        extra = {**step.extra, "measured_time_ms": step.time_ms}
        steps.append(replace(step, time_ms=float(step.extra["audio_ms"]), extra=extra))
    return replace(stream, steps=tuple(steps))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("streams", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    try:
        streams = [unaware(s) for s in read_streams(args.streams)]
        write_streams(args.out, streams)
    except SimulError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {len(streams)} streams with audio times to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

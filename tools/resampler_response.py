#!/usr/bin/env python3
"""The frequency response of simul's resampler (simul.streams.asr.audio.resample), as docs/asr.md gives it.

Resamples pure tones from ``--rate`` (44,100 Hz) to 16 kHz and compares the level of the middle of each output
(0.25 s from each end left out) with the tone's own level:

* passband: the highest frequency up to which every tone (every 50 Hz from 100 Hz) is within 0.05 dB;
* the -6 dB point: where the gain crosses -6 dB (interpolated between the two tones on either side);
* stopband: the highest level, over tones from 8 kHz to the input's Nyquist frequency (every 50 Hz), of
  what comes out (a tone above 8 kHz cannot exist at 16 kHz: whatever is left of it has aliased).

    python tools/resampler_response.py [--rate 44100] [--json]

No timing is taken: the figures depend only on the filter.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass

import numpy as np

from simul.streams.asr.audio import SAMPLE_RATE, resample

STEP_HZ = 50.0
SECONDS = 1.0
EDGE_S = 0.25  # left out at both ends of the output (the filter's start-up and end)


@dataclass(frozen=True)
class Response:
    rate: int
    flat_to_hz: float  # every tone up to here is within 0.05 dB
    minus_6db_hz: float  # where the gain crosses -6 dB
    stopband_db: float  # the loudest output of a tone from 8 kHz up, relative to the tone (dB)
    worst_stopband_hz: float


def gain_db(rate: int, freq: float) -> float:
    """Output level over input level (RMS, dB) of a tone at ``freq`` resampled from ``rate`` to 16 kHz."""
    t = np.arange(round(rate * SECONDS)) / rate
    tone = (0.5 * np.sin(2.0 * np.pi * freq * t)).astype(np.float32)
    out = resample(tone, rate)
    edge = round(EDGE_S * SAMPLE_RATE)
    middle = out[edge:-edge].astype(np.float64)
    rms_out = math.sqrt(float(np.mean(middle**2)))
    return 20.0 * math.log10(max(rms_out, 1e-15) / (0.5 / math.sqrt(2.0)))


def response(rate: int) -> Response:
    nyquist_out = SAMPLE_RATE / 2.0
    flat_to, flat = 0.0, True
    minus_6 = previous = math.nan
    freq = 100.0
    while freq < nyquist_out:
        gain = gain_db(rate, freq)
        flat = flat and abs(gain) <= 0.05
        if flat:
            flat_to = freq
        if gain < -6.0:  # where the gain crosses -6 dB, between this tone and the one before
            minus_6 = freq - STEP_HZ * (-6.0 - gain) / (previous - gain)
            break
        previous = gain
        freq += STEP_HZ
    worst, worst_hz = -math.inf, math.nan
    freq = nyquist_out
    while freq < rate / 2.0:
        gain = gain_db(rate, freq)
        if gain > worst:
            worst, worst_hz = gain, freq
        freq += STEP_HZ
    return Response(rate, flat_to, round(minus_6, 1), round(worst, 1), worst_hz)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=44_100, help="input sample rate (default 44100)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if args.rate <= SAMPLE_RATE:
        parser.error(f"--rate must be above {SAMPLE_RATE} (the response is that of a downsampler)")
    result = response(args.rate)
    if args.json:
        print(json.dumps(asdict(result)))
    else:
        print(
            f"{args.rate} Hz -> {SAMPLE_RATE} Hz: flat (0.05 dB) to {result.flat_to_hz:.0f} Hz, "
            f"-6 dB at {result.minus_6db_hz:.0f} Hz, tones from 8 kHz at most {result.stopband_db:.1f} dB "
            f"(loudest at {result.worst_stopband_hz:.0f} Hz)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

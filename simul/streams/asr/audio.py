"""Audio in: read any file soundfile can open, as 16 kHz mono float32, whole or one span of it.

Channels are averaged to mono. Other sample rates are converted by scipy's polyphase resampler
(``scipy.signal.resample_poly``, in the ``asr`` extra) with simul's own low-pass: the rational factor
``up/down`` comes from the greatest common divisor of the two rates, and the filter (:func:`_lowpass`) is a
Kaiser-windowed sinc (beta :data:`KAISER_BETA`) at the upsampled rate with its cutoff at :data:`ROLLOFF` of
the lower Nyquist frequency and :data:`ZERO_CROSSINGS` zero crossings on each side, a much steeper filter than
resample_poly's default (Kaiser beta 5, cutoff at the Nyquist frequency, where a tone just above 8 kHz would
alias at about -7 dB). Measured at 44.1 kHz in, 16 kHz out by ``tools/resampler_response.py``: flat (within
0.05 dB) to 6.7 kHz, -6 dB at 7.2 kHz, and tones above 8 kHz, which would alias, at least 89 dB down.

Spans are read with a margin of input samples on both sides, from an input sample on the output grid, so a
segment cut from a talk is sample-for-sample what the same span of the whole resampled talk would be.

:func:`speech_mask` is an energy gate (frame RMS against a level derived from the file's loud frames),
used to skip recognizing silence and, without a segment list, to split a long file at pauses.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from simul.common.errors import SimulError

Samples = npt.NDArray[np.float32]

SAMPLE_RATE = 16_000
ZERO_CROSSINGS = 32
ROLLOFF = 0.90
KAISER_BETA = 8.6


@dataclass(frozen=True)
class AudioInfo:
    """What a file holds before conversion."""

    path: Path
    sample_rate: int
    channels: int
    frames: int

    @property
    def duration_ms(self) -> float:
        return 1000.0 * self.frames / self.sample_rate

    @property
    def frames_16k(self) -> int:
        """Length of the file once resampled to 16 kHz."""
        return output_length(self.frames, self.sample_rate, SAMPLE_RATE)


def _soundfile() -> Any:
    import soundfile

    return soundfile


def _unreadable(path: Path, exc: Exception) -> SimulError:
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return SimulError(
        f"cannot read audio file {path} ({reason}); pass a WAV, FLAC or OGG file (convert others with "
        f"e.g. `ffmpeg -i IN -ac 1 -ar 16000 OUT.wav`), or re-create the file if it is damaged"
    )


def audio_info(path: Path) -> AudioInfo:
    """Sample rate, channels and length of an audio file; errors say what is wrong with it."""
    if not path.exists():
        raise SimulError(f"audio file {path} does not exist")
    if path.is_dir():
        raise SimulError(f"audio file {path} is a directory; pass a .wav file")
    soundfile = _soundfile()
    try:
        info = soundfile.info(str(path))
    except (RuntimeError, OSError, ValueError) as exc:  # soundfile.LibsndfileError is a RuntimeError
        raise _unreadable(path, exc) from None
    if info.frames <= 0:
        raise SimulError(f"audio file {path} holds no samples; re-create it")
    if info.samplerate <= 0 or info.channels <= 0:
        raise SimulError(
            f"audio file {path} has a broken header (rate {info.samplerate}, {info.channels} ch)"
        )
    return AudioInfo(path, int(info.samplerate), int(info.channels), int(info.frames))


def read_audio(path: Path, start_ms: float = 0.0, end_ms: float | None = None) -> Samples:
    """The file (or the span ``start_ms..end_ms``) as 16 kHz mono float32 in [-1, 1].

    ``end_ms`` past the end of the file is cut to the file's end; a span starting at or after it is an
    error.
    """
    info = audio_info(path)
    total = info.frames_16k
    first = max(0, round(start_ms * SAMPLE_RATE / 1000.0))
    last = total if end_ms is None else min(total, round(end_ms * SAMPLE_RATE / 1000.0))
    if first >= total:
        raise SimulError(
            f"audio file {path} lasts {info.duration_ms / 1000.0:.3f} s but a span starting at "
            f"{start_ms / 1000.0:.3f} s was asked for; do the segment times belong to this recording?"
        )
    if last <= first:
        return np.zeros(0, dtype=np.float32)
    if info.sample_rate == SAMPLE_RATE:
        return _read_frames(info, first, last)
    up, down = _ratio(info.sample_rate, SAMPLE_RATE)
    # Read the span with a margin, starting on an input sample that lies on the output grid (a multiple of
    # ``down``, which is output sample ``lo * up / down``), so the span's outputs are those of the whole file.
    margin = _span_margin(up, down)
    lo = max(0, (first * down // up - margin) // down * down)
    hi = min(info.frames, -(-last * down // up) + margin)
    block = _resample_poly(_read_frames(info, lo, hi), up, down)
    offset = lo * up // down
    return block[first - offset : last - offset]


def _read_frames(info: AudioInfo, start: int, stop: int) -> Samples:
    soundfile = _soundfile()
    try:
        data = soundfile.read(str(info.path), start=start, stop=stop, dtype="float32", always_2d=True)[0]
    except (RuntimeError, OSError, ValueError) as exc:
        raise _unreadable(info.path, exc) from None
    return to_mono(np.asarray(data, dtype=np.float32))


def to_mono(data: npt.NDArray[np.floating[Any]]) -> Samples:
    """Average the channels of a (frames, channels) array; a 1-D array is already mono."""
    array = np.asarray(data, dtype=np.float32)
    if array.ndim == 1:
        return array
    if array.shape[1] == 1:
        return np.ascontiguousarray(array[:, 0])
    return np.ascontiguousarray(array.mean(axis=1, dtype=np.float32))


# --- resampling ----------------------------------------------------------------------------------------


def _ratio(rate_in: int, rate_out: int) -> tuple[int, int]:
    if rate_in <= 0 or rate_out <= 0:
        raise ValueError(f"sample rates must be positive, got {rate_in} and {rate_out}")
    g = math.gcd(rate_in, rate_out)
    return rate_out // g, rate_in // g


def output_length(frames: int, rate_in: int, rate_out: int) -> int:
    """``ceil(frames * rate_out / rate_in)``: the length scipy's ``resample_poly`` gives."""
    up, down = _ratio(rate_in, rate_out)
    return -(-frames * up // down)


def _scipy_signal() -> Any:
    """scipy.signal, imported only when audio is not at 16 kHz already."""
    try:
        import scipy.signal
    except ImportError:
        raise SimulError(
            f"audio that is not at {SAMPLE_RATE} Hz is resampled with scipy, which is not installed: install "
            "the asr extra with `pip install 'simul[asr]'` (or `make setup`), or convert the file first "
            f"(e.g. `ffmpeg -i IN -ac 1 -ar {SAMPLE_RATE} OUT.wav`)"
        ) from None
    return scipy.signal


@lru_cache(maxsize=16)
def _lowpass(up: int, down: int) -> npt.NDArray[np.float32]:
    """The anti-aliasing low-pass at the upsampled rate (``up`` times the input rate), for resample_poly.

    A Kaiser-windowed sinc (scipy's ``firwin``) with its cutoff at :data:`ROLLOFF` of the lower Nyquist
    frequency and :data:`ZERO_CROSSINGS` zero crossings on each side: ``2 * half + 1`` taps with
    ``half = ceil(ZERO_CROSSINGS * max(up, down) / ROLLOFF)``. Odd and symmetric, so resample_poly's output
    sample ``n`` is centred on input time ``n * down / up`` (no delay). Not rescaled (``scale=False``; its
    gain at 0 Hz is 0.99999, -0.0001 dB): these are the coefficients, in float32, of the numpy resampler
    this replaced, so the figures measured with it hold.
    """
    cutoff = ROLLOFF / max(up, down)  # relative to the upsampled Nyquist frequency
    half = math.ceil(ZERO_CROSSINGS / cutoff)
    taps = _scipy_signal().firwin(2 * half + 1, cutoff, window=("kaiser", KAISER_BETA), scale=False)
    return np.asarray(taps, dtype=np.float32)


def _resample_poly(x: Samples, up: int, down: int) -> Samples:
    out = _scipy_signal().resample_poly(x, up, down, window=_lowpass(up, down))
    return np.asarray(out, dtype=np.float32)


def _span_margin(up: int, down: int) -> int:
    """Input samples on either side of an output sample that its value depends on (rounded up)."""
    half = (len(_lowpass(up, down)) - 1) // 2
    return -(-half // up) + 1


def resample(x: npt.NDArray[np.floating[Any]], rate_in: int, rate_out: int = SAMPLE_RATE) -> Samples:
    """Resample a mono signal from ``rate_in`` to ``rate_out`` (scipy's polyphase ``resample_poly``)."""
    signal = np.asarray(x, dtype=np.float32)
    if rate_in == rate_out:
        return signal.copy()
    up, down = _ratio(rate_in, rate_out)
    return _resample_poly(signal, up, down)


# --- writing -------------------------------------------------------------------------------------------


def write_wav(path: Path, samples: npt.NDArray[np.floating[Any]], rate: int = SAMPLE_RATE) -> None:
    """Write 16-bit PCM WAV atomically (a temporary file renamed into place)."""
    soundfile = _soundfile()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        soundfile.write(str(tmp), np.clip(samples, -1.0, 1.0), rate, subtype="PCM_16", format="WAV")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


# --- energy gate ---------------------------------------------------------------------------------------

FRAME_MS = 20.0
# A frame is speech when its RMS level is above both an absolute floor and a level 35 dB below the loud
# end (95th percentile) of the file's frames: quiet enough for soft word endings, far above line noise.
FLOOR_DB = -55.0
RANGE_DB = 35.0


def frame_levels_db(
    samples: Samples, rate: int = SAMPLE_RATE, frame_ms: float = FRAME_MS
) -> npt.NDArray[np.float64]:
    """RMS level (dBFS) of consecutive frames; a last partial frame counts as a frame."""
    size = max(1, round(rate * frame_ms / 1000.0))
    count = -(-len(samples) // size)
    if count == 0:
        return np.zeros(0)
    frames = np.zeros(count * size, dtype=np.float64)
    frames[: len(samples)] = samples
    power = np.mean(frames.reshape(count, size) ** 2, axis=1)
    levels: npt.NDArray[np.float64] = 10.0 * np.log10(np.maximum(power, 1e-12))
    return levels


def speech_mask(
    samples: Samples, rate: int = SAMPLE_RATE, frame_ms: float = FRAME_MS, reference_db: float | None = None
) -> npt.NDArray[np.bool_]:
    """Per frame: does it look like speech (loud enough)? ``reference_db`` overrides the loud level."""
    levels = frame_levels_db(samples, rate, frame_ms)
    if len(levels) == 0:
        return np.zeros(0, dtype=bool)
    loud = float(np.percentile(levels, 95)) if reference_db is None else reference_db
    mask: npt.NDArray[np.bool_] = levels > max(FLOOR_DB, loud - RANGE_DB)
    return mask


def split_on_silence(
    samples: Samples,
    min_silence_ms: float = 700.0,
    max_segment_ms: float = 28_000.0,
    pad_ms: float = 200.0,
    rate: int = SAMPLE_RATE,
) -> list[tuple[float, float]]:
    """Spans (ms) of speech separated by pauses of at least ``min_silence_ms``.

    Each span is padded by ``pad_ms`` of the surrounding silence. A span longer than ``max_segment_ms``
    (Whisper hears 30 s at once) is cut at its quietest frame past the middle third, repeatedly.
    """
    mask = speech_mask(samples, rate)
    levels = frame_levels_db(samples, rate)
    total_ms = 1000.0 * len(samples) / rate
    gap = max(1, round(min_silence_ms / FRAME_MS))
    spans: list[tuple[int, int]] = []
    start: int | None = None
    quiet = 0
    for index, voiced in enumerate(mask):
        if voiced:
            if start is None:
                start = index
            quiet = 0
        elif start is not None:
            quiet += 1
            if quiet >= gap:
                spans.append((start, index - quiet + 1))
                start, quiet = None, 0
    if start is not None:
        spans.append((start, len(mask) - quiet))
    limit = max(2, round(max_segment_ms / FRAME_MS))
    pad = min(pad_ms, min_silence_ms / 2.0) / FRAME_MS  # padded spans never overlap
    out: list[tuple[float, float]] = []
    for begin, end in spans:
        left = max(0.0, (begin - pad) * FRAME_MS)  # pauses get padding, forced cuts do not
        while end - begin > limit:
            lo, hi = begin + limit // 3, begin + limit
            split = lo + int(np.argmin(levels[lo:hi]))
            out.append((left, split * FRAME_MS))
            begin, left = split, split * FRAME_MS
        out.append((left, min(total_ms, (end + pad) * FRAME_MS)))
    return out

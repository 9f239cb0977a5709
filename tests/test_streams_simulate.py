"""Simulated recognizer partials: timing, the ASR look of partials, revisions, merging and errors."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from simul.common.errors import SimulError, UsageError
from simul.common.paths import fixtures_dir
from simul.streams.acl6060 import acl6060_segments
from simul.streams.format import Step, Stream
from simul.streams.segments import Segment
from simul.streams.simulate import _fill, asr_form, read_word_times, simulate_steps, simulated_streams
from simul.streams.stats import StepChange, step_changes

GOLD = fixtures_dir() / "asr" / "simulstreaming" / "gold.2022.acl-long.110.wav.ts.txt"


@pytest.mark.parametrize(
    ("word", "form"),
    [
        ("Zhou,", "zhou"),
        ("Task-Oriented", "task-oriented"),
        ("2.5", "2.5"),
        ("let's", "let's"),
        ("—", ""),
        ("(BERT)", "bert"),
    ],
)
def test_asr_form(word: str, form: str) -> None:
    assert asr_form(word) == form


def test_even_spread_over_the_duration() -> None:
    steps = simulate_steps(["Hello,", "this", "is", "a", "test."], [500, 1000, 1500, 2000, 2500], 2500, 500)
    assert [(s.time_ms, s.source, s.final) for s in steps] == [
        (500, "hello", False),
        (1000, "hello this", False),
        (1500, "hello this is", False),
        (2000, "hello this is a", False),
        (2500, "Hello, this is a test.", True),
    ]


def test_identical_partials_are_one_step_and_a_last_word_after_the_end() -> None:
    steps = simulate_steps(["One", "two."], [650, 1900], 1000, 200)
    # ticks 200..600 hear nothing, 800..1800 all hear "one" (one step); the final waits for "two." (1900)
    assert [(s.time_ms, s.source) for s in steps] == [(800, "one"), (1900, "One two.")]


def test_a_partial_equal_to_the_final_text_becomes_the_final_step() -> None:
    steps = simulate_steps(["yes", "no"], [300, 600], 1500, 500)
    assert [(s.time_ms, s.source, s.final) for s in steps] == [(500, "yes", False), (1000, "yes no", True)]


def test_revisions_are_seeded_and_corrected() -> None:
    words = ["we", "present", "our", "work", "on", "online", "semantic", "parsing"]
    ends = [250.0 * (k + 1) for k in range(len(words))]
    vocabulary = sorted(set(words))

    def run(seed: int) -> list[str]:
        steps = simulate_steps(words, ends, 2000, 250, 1.0, random.Random(seed), vocabulary)
        return [s.source for s in steps]

    steps = simulate_steps(words, ends, 2000, 250, 1.0, random.Random(0), vocabulary)
    truth = [" ".join(words[: k + 1]) for k in range(len(words) - 1)]
    assert all(s.extra == {"simulated_error": True} for s in steps[:-1])
    assert [s.source for s in steps[:-1]] != truth
    assert all(s.source.split()[:-1] == t.split()[:-1] for s, t in zip(steps[:-1], truth, strict=True))
    assert steps[-1].source == " ".join(words) and steps[-1].final
    assert {c.kind for c in step_changes_of(steps)[1:]} == {"revise"}
    assert run(0) == run(0) and run(0) != run(1)
    untouched = simulate_steps(words, ends, 2000, 250, 0.0, random.Random(0), vocabulary)
    assert [s.source for s in untouched[:-1]] == truth


def step_changes_of(steps: list[Step]) -> list[StepChange]:
    return step_changes(Stream("s", "en", "de", tuple(steps)))


def test_fill_interpolates_and_never_goes_back() -> None:
    assert _fill([None, 300, None, None, 900, None], 1200) == [150, 300, 500, 700, 900, 1200]
    assert _fill([-50, None, 20], 100) == [0, 0, 20]
    assert _fill([None, None], 1000) == [500, 1000]


def test_word_times_file() -> None:
    words = read_word_times(GOLD)
    assert len(words) == 98
    assert (words[0].start_ms, words[0].end_ms, words[0].text) == (753.0, 1113.0, "Hello,")
    assert words[-1].text == "properly."


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("1.0\t0.5\tword", r"w\.txt:2: the word ends before it starts"),
        ("0.1\t0.5\tword", r"w\.txt:2: time goes backwards"),
        ("x\t0.5\tword", r"w\.txt:2: start time \(seconds\) 'x' is not a number"),
        ("1.5", r"w\.txt:2: expected '<start_s> <end_s> <word>'"),
    ],
)
def test_bad_word_times(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "w.txt"
    path.write_text(f"0.5\t0.9\tHello\n{line}\n", encoding="utf-8")
    with pytest.raises(SimulError, match=message):
        read_word_times(path)


def test_shipped_segments_with_word_times() -> None:
    segments, _ = acl6060_segments(None, "dev", "de")
    result = simulated_streams(segments, segments, "de", word_times=[str(GOLD)])
    assert [m.__dict__ for m in result.word_times] == [
        {"file": GOLD.name, "talk": "2022.acl-long.110", "words": 98, "matched": 98}
    ]
    first = result.streams[0]
    assert [(s.time_ms, s.source) for s in first.steps] == [
        (1000, "hello this"),
        (1500, "hello this is jiawei"),
        (2000, "hello this is jiawei zhou from"),
        (2500, "hello this is jiawei zhou from harvard"),
        (pytest.approx(2833.0), "Hello, this is Jiawei Zhou from Harvard University."),
    ]
    assert first.provenance["simulated"] is True
    assert first.provenance["partials"] == {
        "source": "simulated",
        "interval_ms": 500.0,
        "timing": "word_times",
        "revise_rate": 0.0,
        "seed": 0,
        "word_times_file": GOLD.name,
    }
    assert first.provenance["offset_s"] == 0.59 and first.reference is not None


def test_without_word_times_words_are_spread_evenly() -> None:
    segments, _ = acl6060_segments(None, "dev", "ja")
    result = simulated_streams(segments, segments[:1], "ja", interval_ms=1000)
    only = result.streams[0]
    assert only.provenance["partials"]["timing"] == "even"
    # 8 words over 2818 ms: word k ends at k * 352.25 ms
    assert [(s.time_ms, s.source) for s in only.steps] == [
        (1000, "hello this"),
        (2000, "hello this is jiawei zhou"),
        (2818, "Hello, this is Jiawei Zhou from Harvard University."),
    ]


def test_seeds_belong_to_the_segment_not_the_selection() -> None:
    segments, _ = acl6060_segments(None, "dev", "de")
    whole = simulated_streams(segments, segments, "de", revise_rate=0.5, seed=3)
    part = simulated_streams(segments, segments[4:6], "de", revise_rate=0.5, seed=3)
    assert part.streams == whole.streams[4:6]


def test_errors() -> None:
    segments, _ = acl6060_segments(None, "dev", "de")
    untimed = [Segment("u-1", 1, "t", "a b", "x")]
    with pytest.raises(SimulError, match="simulated partials need the segment YAML"):
        simulated_streams(untimed, untimed, "de")
    with pytest.raises(UsageError, match="--interval-ms must be positive"):
        simulated_streams(segments, segments, "de", interval_ms=0)
    with pytest.raises(UsageError, match="--revise-rate is a probability"):
        simulated_streams(segments, segments, "de", revise_rate=1.5)
    with pytest.raises(SimulError, match="two word-times files"):
        simulated_streams(segments, segments, "de", word_times=[str(GOLD), str(GOLD)])


@pytest.mark.data
def test_real_dev_set(shared_data: Path) -> None:
    segments, _ = acl6060_segments(shared_data / "acl6060", "dev", "de")
    gold = shared_data / "asr" / "simulstreaming_acl6060_dev_110" / "gold.2022.acl-long.110.wav.ts.txt"
    result = simulated_streams(segments, segments, "de", word_times=[str(gold)], revise_rate=0.1)
    assert len(result.streams) == 468
    assert (result.word_times[0].words, result.word_times[0].matched) == (1707, 1701)
    timing = [s.provenance["partials"]["timing"] for s in result.streams]
    assert timing.count("word_times") == 108 and timing.count("even") == 360
    assert all(s.final_source == g.source for s, g in zip(result.streams, segments, strict=True))

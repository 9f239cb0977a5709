"""Stream statistics on hand-computed examples."""

from __future__ import annotations

import pytest

from simul.streams.format import Step, Stream
from simul.streams.stats import step_changes, stream_stats


def revising_stream() -> Stream:
    steps = (
        Step("a b", time_ms=100),
        Step("a b c d", time_ms=200),
        Step("a x", time_ms=300),  # keeps "a": adds 1, removes 3
        Step("a x y", final=True, time_ms=450),
    )
    partials = {
        "file": "talk.txt",
        "format": "sltev",
        "partials": 10,
        "unaligned_partials": 2,
        "unaligned_words": 5,
    }
    return Stream("r", "en", "de", steps, "ref", {"talk": "t", "partials": partials, "simulated": False})


def chinese_stream() -> Stream:
    return Stream("z", "zh", "en", (Step("我们"), Step("我们 现在", final=True)), None, {"simulated": True})


def test_step_changes() -> None:
    kinds = [(c.kind, c.added, c.removed, c.length) for c in step_changes(revising_stream())]
    assert kinds == [("first", 2, 0, 2), ("extend", 2, 0, 4), ("revise", 1, 3, 2), ("extend", 1, 0, 3)]
    # characters for a source without spaces; the space between them does not count
    assert [(c.kind, c.added) for c in step_changes(chinese_stream())] == [("first", 2), ("extend", 2)]


def test_a_revision_of_the_last_word_adds_one() -> None:
    stream = Stream("s", "en", "de", (Step("the cap"), Step("the cat sat", final=True)))
    assert [(c.kind, c.added, c.removed) for c in step_changes(stream)] == [("first", 2, 0), ("revise", 2, 1)]


def test_file_figures() -> None:
    other = Stream(
        "r2",
        "en",
        "de",
        (Step("q", time_ms=5), Step("q r", final=True, time_ms=9)),
        "x",
        revising_stream().provenance,
    )
    stats = stream_stats([revising_stream(), chinese_stream(), other])
    assert stats["streams"] == 3
    assert stats["languages"] == {"en-de": 2, "zh-en": 1}
    assert stats["steps"] == 8
    assert stats["steps_per_stream"] == {"mean": pytest.approx(2.667), "median": 2.0, "min": 2.0, "max": 4.0}
    # added: 2, 2, 1, 1 | 2, 2 | 1, 1
    assert stats["added_per_step"] == {"mean": 1.5, "median": 1.5, "min": 1.0, "max": 2.0}
    assert stats["unit"] == "char/word"
    assert (stats["revising_steps"], stats["revise_share"]) == (1, 0.2)  # 1 of 5 steps after a first one
    assert stats["revise_share_before_final"] == 0.5  # 1 of the 2 steps that are neither first nor final
    assert (stats["timed_streams"], stats["untimed_streams"]) == (2, 1)
    assert stats["final_time_ms"]["max"] == 450.0
    assert (stats["simulated_streams"], stats["with_reference"]) == (1, 2)
    assert stats["references_per_stream"] == {"0": 1, "1": 2}
    # two streams of the same partials file and talk: its counts are taken once
    assert (
        stats["partials_files"],
        stats["partials"],
        stats["unaligned_partials"],
        stats["unaligned_words"],
    ) == (
        1,
        10,
        2,
        5,
    )


def test_fixed_lag_streams_never_revise() -> None:
    stream = Stream("f", "en", "de", (Step("a b c"), Step("a b c d e f"), Step("a b c d e f g", final=True)))
    stats = stream_stats([stream])
    assert stats["revise_share"] == 0.0 and stats["added_per_step"]["mean"] == pytest.approx(7 / 3, abs=1e-3)
    assert "partials" not in stats and "final_time_ms" not in stats

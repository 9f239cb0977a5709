"""tools/talk_sentences.py: a talk cut into its segments' sentence streams with the same arrival."""

from __future__ import annotations

import pytest

from simul.common.errors import SimulError
from simul.streams.format import Segment, Step, Stream
from tests.helpers import load_tool

talk_sentences = load_tool("talk_sentences")


def test_each_segment_gets_the_words_known_at_each_update_of_its_talk() -> None:
    steps = (
        Step("Hello there.", False, 1000.0),
        Step("Hello there. How are", False, 3000.0),
        Step("Hello there. How are you today?", True, 5000.0),
    )
    segments = (
        Segment(("Hallo.",), "Hello there.", 0.0, 1500.0),
        Segment(("Wie geht es dir heute?",), "How are you today?", 2000.0, 3000.0),
    )
    talk = Stream.talk("t", "en", "de", steps, segments, 5000.0)
    first, second = talk_sentences.talk_sentences(talk)
    assert [s.source for s in first.steps] == ["Hello there."]  # complete at its first update: final only
    assert first.steps[-1].final and first.reference == "Hallo."
    assert [(s.source, s.time_ms) for s in second.steps] == [
        ("How are", 1000.0),  # 3000 ms on the talk clock, 1000 ms after the segment's offset
        ("How are you today?", 3000.0),
    ]
    broken = Stream.talk("b", "en", "de", steps, (Segment(("x",), "Other words.", 0.0, 1.0),), 5000.0)
    with pytest.raises(SimulError, match="not its segments joined"):
        talk_sentences.talk_sentences(broken)


def test_the_control_talk_repeats_its_first_segments_at_later_positions() -> None:
    talk_control = load_tool("talk_control")
    steps = (
        Step("Hello there.", False, 1000.0),
        Step("Hello there. How are", False, 3000.0),
        Step("Hello there. How are you today?", True, 5000.0),
    )
    segments = (
        Segment(("Hallo.",), "Hello there.", 0.0, 1500.0),
        Segment(("Wie geht es dir heute?",), "How are you today?", 2000.0, 3000.0),
    )
    talk = Stream.talk("t", "en", "de", steps, segments, 5000.0)
    control = talk_control.repeated(talk, 1, 3)
    control.validate()
    assert [s.source for s in control.steps] == [
        "Hello there.",
        "Hello there. Hello there.",
        "Hello there. Hello there. Hello there.",
    ]
    assert [s.time_ms for s in control.steps] == [1500.0, 3000.0, 4500.0]
    assert [seg.offset_ms for seg in control.segments] == [0.0, 1500.0, 3000.0]
    assert control.steps[-1].final and control.duration_ms == 4500.0

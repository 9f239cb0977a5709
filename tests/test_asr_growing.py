"""Partial steps from hypotheses: the audio grid, emission times, LocalAgreement-2, WER, loop collapsing."""

from __future__ import annotations

import pytest

from simul.common.errors import UsageError
from simul.streams.asr.growing import Hypothesis, agreed_prefix, segment_steps, shown_texts
from simul.streams.asr.recognizer import collapse_loops
from simul.streams.asr.schedule import chunk_ends, emission_times
from simul.streams.asr.wer import corpus_errors, normalize, word_errors
from simul.streams.format import Stream


def _hyps(*items: tuple[float, float, str]) -> list[Hypothesis]:
    return [Hypothesis(a, c, t, final=i == len(items) - 1) for i, (a, c, t) in enumerate(items)]


def test_chunk_ends_every_interval_then_the_end() -> None:
    assert chunk_ends(2_300.0, 500.0) == [500.0, 1_000.0, 1_500.0, 2_000.0, 2_300.0]
    assert chunk_ends(2_000.0, 500.0) == [500.0, 1_000.0, 1_500.0, 2_000.0]  # no partial at the end itself
    assert chunk_ends(300.0, 500.0) == [300.0]
    with pytest.raises(UsageError, match="--interval-ms must be positive"):
        chunk_ends(1_000.0, 0.0)


def test_emission_times_queue_behind_a_slow_recognizer() -> None:
    # fast recognizer: audio time plus compute time
    assert emission_times([500, 1_000, 1_500], [100, 100, 100]) == [600, 1_100, 1_600]
    # slow: a step waits for the previous one, so lags add up; times never decrease
    assert emission_times([500, 1_000, 1_500], [800, 800, 100]) == [1_300, 2_100, 2_200]


def test_agreed_prefix_compares_without_case_and_punctuation() -> None:
    assert agreed_prefix("I am very glad to.", "I am very glad to present our.") == "I am very glad to"
    assert agreed_prefix("hello, this is", "Hello this is Jiawei.") == "Hello this is"
    assert agreed_prefix("I am Mary", "I am very glad") == "I am"
    assert agreed_prefix("Hello.", "Goodbye.") == ""
    assert agreed_prefix("", "anything") == ""
    # the newer hypothesis's spelling, without the full stop Whisper puts at its end
    assert agreed_prefix("it was the best", "It was the best.") == "It was the best"


def test_shown_texts_raw_and_local_agreement() -> None:
    hyps = _hyps(
        (500, 10, "I am Mary."),
        (1_000, 10, "I am very glad."),
        (1_500, 10, "I am very glad to."),
        (1_800, 10, "I am very glad to present."),
    )
    assert shown_texts(hyps, "none") == [h.text for h in hyps]
    assert shown_texts(hyps, "local-agreement") == [
        "",
        "I am",
        "I am very glad",
        "I am very glad to present.",
    ]
    with pytest.raises(UsageError, match="unknown --stable 'la3'"):
        shown_texts(hyps, "la3")


def test_segment_steps_merge_repeats_and_time_both_clocks() -> None:
    hyps = _hyps(
        (500, 100, ""),  # no speech yet: no step
        (1_000, 100, "hello"),
        (1_500, 700, "hello"),  # same text: one step at the earlier time
        (2_000, 100, "hello this"),
        (2_200, 100, "Hello, this is it."),
    )
    done = segment_steps(hyps, "none", offset_ms=10_000.0)
    steps = done.steps
    assert [s.source for s in steps] == ["hello", "hello this", "Hello, this is it."]
    assert [s.final for s in steps] == [False, False, True]
    assert [s.time_ms for s in steps] == [1_100.0, 2_300.0, 2_400.0]
    assert [s.extra["audio_ms"] for s in steps] == [1_000.0, 2_000.0, 2_200.0]
    assert steps[0].extra["talk_time_ms"] == 11_100.0
    assert done.waited == 2  # the step at 2,000 ms waited for the slow one before it, and so did the last
    Stream("s", "en", "de", tuple(steps)).validate()


def test_a_last_partial_equal_to_the_final_text_is_the_final_step() -> None:
    done = segment_steps(_hyps((500, 10, "a"), (1_000, 10, "a b"), (1_200, 10, "a b")), "none")
    assert [(s.source, s.final, s.time_ms) for s in done.steps] == [
        ("a", False, 510.0),
        ("a b", True, 1_010.0),
    ]


def test_no_final_transcript_no_steps() -> None:
    assert segment_steps(_hyps((500, 10, "Thank you."), (900, 10, "")), "none").steps == []
    with pytest.raises(ValueError, match="final"):
        segment_steps([Hypothesis(500, 10, "x", final=False)], "none")


def test_local_agreement_steps_end_with_the_full_final_text() -> None:
    hyps = _hyps(
        (500, 10, "I am Mary."),
        (1_000, 10, "I am Mary Blant."),
        (1_500, 10, "I am very glad."),
        (1_700, 10, "I am very glad to be here."),
    )
    steps = segment_steps(hyps, "local-agreement").steps
    assert [s.source for s in steps] == ["I am Mary", "I am", "I am very glad to be here."]
    assert steps[-1].final


def test_wer_formula() -> None:
    assert normalize("Task-oriented, dialogue! Let's GO.") == ["task", "oriented", "dialogue", "let's", "go"]
    errors = word_errors("the cat sat on the mat", "the cat sit on the mat today now")
    assert (errors.substitutions, errors.deletions, errors.insertions, errors.reference_words) == (1, 0, 2, 6)
    assert errors.wer == pytest.approx(3 / 6)
    errors = word_errors("a b c d", "a c d")
    assert (errors.substitutions, errors.deletions, errors.insertions) == (0, 1, 0)
    # equal-cost alignments: substitutions are preferred (3 substitutions, not 1 + 1 deletion + 1 insertion)
    errors = word_errors("the cat sat on the mat", "the cat sit on mat today")
    assert (errors.substitutions, errors.deletions, errors.insertions) == (3, 0, 0)
    assert word_errors("Hello, world.", "hello world").wer == 0.0
    assert word_errors("", "").wer == 0.0 and word_errors("", "extra words").wer == 2.0
    assert word_errors("a b c", "").wer == 1.0
    # corpus WER sums edits and reference words: long segments weigh more
    total = corpus_errors([("a b c d", "a b c d"), ("e f", "x")])
    assert (total.errors, total.reference_words) == (2, 6) and total.wer == pytest.approx(2 / 6)
    assert total.to_json()["wer"] == 0.3333


def test_collapse_loops() -> None:
    assert collapse_loops("Hello. Hello. Hello.") == "Hello."
    assert collapse_loops("It was the best. It was the best. It was the best.") == "It was the best."
    assert collapse_loops("I I I I I I I") == "I"
    assert collapse_loops("x a b a b a b y") == "x a b y"
    # real repetition is kept: twice, or the same words with others between
    assert collapse_loops("very very good") == "very very good"
    text = "It was the best of times, it was the worst of times"
    assert collapse_loops(text) == text
    assert collapse_loops("") == ""


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("Let's go to.", "lets go to the park."),
        ("We don't know", "We dont know yet"),
        ("a task-oriented dialogue", "A Task-Oriented, dialog"),
        ("Hello — there", "hello – there friend"),
        ("one two three", "four five"),
    ],
)
def test_both_paths_agree_on_the_same_words(older: str, newer: str) -> None:
    """LocalAgreement-2 over a segment's hypotheses (agreed_prefix) and over the long-form buffer
    (AgreementBuffer) commit the same words: one key (agreement_key) compares them."""
    from simul.streams.asr.agreement import AgreementBuffer, TimedWord

    def timed(text: str) -> list[TimedWord]:
        return [TimedWord(100.0 * k, 100.0 * k + 80, w) for k, w in enumerate(text.split())]

    buffer = AgreementBuffer()
    buffer.insert(timed(older))
    assert buffer.flush() == []
    committed = buffer.flush() if buffer.insert(timed(newer)) == 0 else []
    agreed = agreed_prefix(older, newer).split()
    assert len(committed) == len(agreed)
    assert [w.text for w in committed][:-1] == agreed[:-1]

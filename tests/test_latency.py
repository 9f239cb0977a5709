"""AL, DAL, YAAL and computation-aware delays, by hand; units; pooled and per-stream NE."""

from __future__ import annotations

import pytest

from simul.decoding.records import StepRecord, StreamResult
from simul.metrics.delays import stream_delays
from simul.metrics.erasure import normalized_erasure
from simul.metrics.latency import al, dal, laal, yaal
from simul.metrics.tokenizers import get_tokenizer, resolve_ne_tokenizer
from simul.metrics.units import reference_length, target_unit, units
from simul.request.methods import Method
from simul.streams.format import Step, Stream


def test_al_uses_the_reference_length_and_stops_at_the_end_of_the_source() -> None:
    # |X| = 6, |Y*| = 3: 1/gamma = 2; tau = 3 (d_3 = 6 = |X|)
    assert al([2.0, 4.0, 6.0, 6.0], 6.0, 3) == pytest.approx(((2 - 0) + (4 - 2) + (6 - 4)) / 3)
    # without a reference the hypothesis length sets the rate: 1/gamma = 6/4
    assert al([2.0, 4.0, 6.0, 6.0], 6.0, None) == pytest.approx(((2 - 0) + (4 - 1.5) + (6 - 3)) / 3)
    assert al([7.0, 8.0], 6.0, 2) == 7.0  # first delay past the end: SimulEval returns it


def test_dal_pushes_each_delay_at_least_one_rate_step_after_the_previous() -> None:
    # |Y| = 3, |X| = 6: 1/gamma = 2; d' = 2, max(2, 4) = 4, max(6, 6) = 6
    assert dal([2.0, 2.0, 6.0], 6.0) == pytest.approx(((2 - 0) + (4 - 2) + (6 - 4)) / 3)
    assert dal([], 6.0) is None


def test_yaal_counts_only_what_was_emitted_before_the_source_ended() -> None:
    # |X| = 6, max(|Y|, |Y*|) = 4: 1/gamma = 1.5; units at d = 6 are left out
    assert yaal([2.0, 3.0, 6.0, 6.0], 6.0, 4) == pytest.approx(((2 - 0) + (3 - 1.5)) / 2)
    assert yaal([6.0, 6.0], 6.0, 2) is None  # nothing before the end: no value (OmniSTEval skips it)
    assert laal([2.0, 3.0, 6.0, 6.0], 6.0, 4) == pytest.approx(((2 - 0) + (3 - 1.5) + (6 - 3)) / 3)


def test_target_units_follow_the_peers() -> None:
    assert target_unit("de") == "word" and target_unit("zh") == "char" and target_unit("ja") == "char"
    assert units("布里斯班 Open 开始", "char") == list("布里斯班 Open 开始")
    assert units("  Hallo  Welt ", "word") == ["Hallo", "Welt"]
    assert reference_length("布里斯班 Open", "char") == 9  # SimulEval: len(reference.strip())
    assert reference_length("Hallo Welt.", "word") == 2


def _record(
    step: int, source: str, display: str, final: bool, time_ms: float | None, seconds: float
) -> StepRecord:
    return StepRecord(
        step=step,
        source=source,
        final=final,
        time_ms=time_ms,
        prompt_tokens=0,
        reused_tokens=0,
        processed_tokens=0,
        draft_tokens=0,
        accepted=0,
        output_ids=[],
        output=display,
        display=display,
        accepted_chars=0,
        stop="eog",
        t_prompt=seconds / 2,
        t_gen=seconds / 2,
    )


def test_computation_aware_delays_of_a_timed_stream_use_the_segment_duration() -> None:
    stream = Stream(
        id="t",
        src="en",
        tgt="de",
        steps=(Step("a b", time_ms=500.0), Step("a b c d", final=True, time_ms=1000.0)),
        reference="A B C",
        provenance={"duration_s": 1.2},
    )
    result = StreamResult(
        "t",
        Method("rt"),
        [
            _record(0, "a b", "A B", False, 500.0, 0.1),
            _record(1, "a b c d", "A X C", True, 1000.0, 0.2),
        ],
    )
    d = stream_delays(result, stream)
    assert d.source_length == 1200.0  # the segment's duration, not the last step's time
    assert d.delays == [500.0, 1000.0, 1000.0]
    assert d.elapsed == [600.0, 1300.0, 1300.0]  # delay + cumulative update time (100 ms, then 300 ms)


def test_computation_aware_delays_of_a_text_stream_are_the_update_clock() -> None:
    stream = Stream(
        id="x", src="en", tgt="de", steps=(Step("a b"), Step("a b c d", final=True)), reference="A B"
    )
    result = StreamResult(
        "x",
        Method("rt"),
        [_record(0, "a b", "A", False, None, 0.05), _record(1, "a b c d", "A B", True, None, 0.1)],
    )
    d = stream_delays(result, stream)
    assert d.delays == [2.0, 4.0] and d.source_length == 4.0
    assert d.elapsed == pytest.approx([50.0, 150.0]) and d.elapsed_source_length == pytest.approx(150.0)


def test_ne_is_reported_pooled_and_as_the_per_stream_mean() -> None:
    # stream 1 erases 1 of a final 4; stream 2 erases 0 of a final 1
    ne = normalized_erasure([[["a", "b"], ["a", "c", "d", "e"]], [["x"]]])
    assert ne.value == pytest.approx(1 / 5)
    assert ne.mean == pytest.approx((1 / 4 + 0) / 2)


def test_word_and_char_ne_units() -> None:
    assert resolve_ne_tokenizer("word", "zh") == "word"
    assert get_tokenizer("word")("Das ist, gut.") == ["Das", "ist,", "gut."]
    assert get_tokenizer("char")("布里 Open") == ["布", "里", "O", "p", "e", "n"]  # characters without spaces

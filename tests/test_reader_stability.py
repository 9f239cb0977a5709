"""Stability as a reader sees it (simul.metrics.families.reader_stability, issue 51): time to final,
time-weighted erasure, changes per minute and the changed share, on a stream worked by hand, the clock of
untimed streams, the family's figures for raw and displayed texts, and the metric records that the
registry takes from the family's module (the design test: a family is one module and one registry line)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from simul.metrics.families.reader_stability import (
    FAMILY,
    percentile90,
    reader_stability_figures,
    stream_stability,
)
from simul.metrics.family import FamilyInput
from simul.metrics.registry import FAMILIES, METRICS
from simul.request.methods import Method

# tokens at each update and the update's clock (ms): b is erased after 200 ms, then all four after 900,
# 700, 700 and 400 ms
TEXTS = [[], ["a", "b"], ["a", "c", "d"], ["a", "c", "d", "e"], ["x", "c", "d", "e"]]
CLOCK = [0.0, 100.0, 300.0, 600.0, 1000.0]


def test_a_stream_worked_by_hand() -> None:
    got = stream_stability(TEXTS, CLOCK)
    # final tokens x c d e were first shown at their positions at updates 1, 1, 2, 3 and written at 4
    assert got.ttf == [900.0, 900.0, 700.0, 400.0]
    assert got.ttf_updates == [3, 3, 2, 1]
    assert got.weighted_erasure == 200.0 + 900.0 + 700.0 + 700.0 + 400.0
    assert (got.erased, got.shown, got.final_tokens) == (5, 9, 4)
    assert got.shown == got.erased + got.final_tokens  # every instance shown is erased or final
    assert got.changes == 2 and got.displayed == 900.0


def test_a_stream_that_never_changes_has_nothing_to_wait_for() -> None:
    got = stream_stability([["a"], ["a", "b"], ["a", "b", "c"]], [0.0, 10.0, 20.0])
    assert got.ttf == [0.0, 0.0, 0.0] and got.weighted_erasure == 0.0 and got.changes == 0
    assert got.displayed == 20.0


def test_the_90th_percentile_is_the_nearest_rank() -> None:
    assert percentile90([]) is None
    assert percentile90([5.0]) == 5.0
    assert percentile90([float(x) for x in range(1, 11)]) == 9.0  # ceil(9.0) = 9th of 10
    assert percentile90([float(x) for x in range(1, 12)]) == 10.0  # ceil(9.9) = 10th of 11


def _step(output: str, display: str, time_ms: float | None, source: str) -> Any:
    return SimpleNamespace(output=output, display=display, time_ms=time_ms, source=source, talk=None)


def _given(steps: list[Any]) -> FamilyInput:
    result = SimpleNamespace(stream_id="s1", steps=steps)
    stream = SimpleNamespace(src="en", tgt="de")
    return FamilyInput(Method(name="rt"), [result], {"s1": stream}, "13a")  # type: ignore[list-item,dict-item]


def test_timed_streams_count_in_ms_and_displays_apart_from_raw_outputs() -> None:
    steps = [
        _step(" ".join(t), " ".join(t[:1]) if i < len(TEXTS) - 1 else " ".join(t), c, "src")
        for i, (t, c) in enumerate(zip(TEXTS, CLOCK, strict=True))
    ]
    figures = reader_stability_figures(_given(steps))
    m = figures.metrics
    assert m["ttf"] == 725.0 and m["ttf_p90"] == 900.0 and m["twe"] == 725.0
    assert m["changes_per_min"] == pytest.approx(2 / (900 / 60000), abs=1e-3)
    assert m["changed_share"] == pytest.approx(100 * 5 / 9, abs=1e-3)
    # displayed: a (t1..t3), then x c d e at the last update: one change, a shown 900 ms
    assert m["twe_display"] == 900.0 / 4 and m["changes_per_min_display"] == pytest.approx(
        2 / (900 / 60000) / 2, abs=1e-3
    )
    assert m["ttf_display"] == pytest.approx((900.0 + 0 + 0 + 0) / 4)
    assert figures.counts["reader_stability"]["unit"] == "ms"
    assert figures.counts["reader_stability"]["ttf_updates"]["raw outputs"] == {"mean": 2.25, "p90": 3}
    assert figures.rows == [{"ttf": 725.0, "twe": 725.0, "ttf_display": 225.0, "twe_display": 225.0}]


def test_untimed_streams_count_in_source_words_and_have_no_changes_per_minute() -> None:
    sources = ["one", "one two", "one two three", "one two three four", "one two three four five"]
    steps = [_step(" ".join(t), " ".join(t), None, s) for t, s in zip(TEXTS, sources, strict=True)]
    figures = reader_stability_figures(_given(steps))
    assert figures.counts["reader_stability"]["unit"] == "source words"
    # clock 1..5 source words: final tokens first shown at words 2, 2, 3, 4, written at 5
    assert figures.metrics["ttf"] == pytest.approx((3 + 3 + 2 + 1) / 4)
    assert figures.metrics["changes_per_min"] is None
    assert figures.metrics["changed_share"] == pytest.approx(100 * 5 / 9, abs=1e-3)


def test_the_family_registers_its_records_in_one_line() -> None:
    assert FAMILY in FAMILIES
    names = {spec.name for spec in FAMILY.specs}
    assert names == {
        f"{n}{v}" for n in ("ttf", "twe", "changes_per_min", "changed_share") for v in ("", "_display")
    } | {"ttf_p90", "ttf_display_p90"}
    for name in names:
        assert METRICS[name] is next(s for s in FAMILY.specs if s.name == name)
        assert not METRICS[name].higher_is_better and METRICS[name].needs == ("revisions",)
    figures = reader_stability_figures(_given([_step("a", "a", 0.0, "x")]))
    assert set(figures.metrics) == names

"""The metric families (simul.metrics.families) put together: no family overwrites another's figure, and a
run of whole talks takes its BLEU, chrF and COMET from the re-segmented talks only.

The figures themselves are pinned by tests/test_figures_pinned.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from simul.metrics.families.quality import quality_figures
from simul.metrics.family import Figures, combine
from tests.helpers import make_streams


def test_combine_keeps_each_familys_figures() -> None:
    got = combine(
        [
            Figures(metrics={"bleu": 1.0}, counts={"references": 2}, rows=[{"chrf": 3.0}, {"chrf": None}]),
            Figures(metrics={"ne": 0.5}),
            Figures(counts={"ne_unit": "13a"}, rows=[{"erased": 1}, {"erased": 0}]),
        ],
        2,
    )
    assert got.metrics == {"bleu": 1.0, "ne": 0.5}
    assert got.counts == {"references": 2, "ne_unit": "13a"}
    assert got.rows == [{"chrf": 3.0, "erased": 1}, {"chrf": None, "erased": 0}]


@pytest.mark.parametrize(
    ("second", "what"),
    [
        (Figures(metrics={"bleu": 2.0}), "metric bleu"),
        (Figures(counts={"references": 3}), "count references"),
        (Figures(rows=[{"chrf": 1.0}]), "per-stream column chrf"),
    ],
)
def test_a_figure_given_twice_is_refused(second: Figures, what: str) -> None:
    first = Figures(metrics={"bleu": 1.0}, counts={"references": 2}, rows=[{"chrf": 3.0}])
    with pytest.raises(ValueError, match=f"{what} given by two metric families"):
        combine([first, second], 1)


def test_rows_for_another_number_of_streams_are_refused() -> None:
    with pytest.raises(ValueError, match="2 per-stream rows for 3 streams"):
        combine([Figures(rows=[{}, {}])], 3)


def _results(outputs: dict[str, str]) -> Any:
    """Stream results as the quality family reads them: a stream id and a final output."""
    return [SimpleNamespace(stream_id=stream_id, final_output=text) for stream_id, text in outputs.items()]


def test_whole_talks_leave_the_run_quality_to_the_long_form_family() -> None:
    streams = {s.id: s for s in make_streams()}
    results = _results({s.id: s.reference or "" for s in streams.values()})
    sentences = quality_figures(results, streams)
    assert (sentences.metrics, sentences.counts["references"]) == (
        {"comet": None, "bleu": 100.0, "chrf": 100.0},
        len(streams),
    )
    assert "bleu_talk" not in sentences.counts
    assert [row["chrf"] for row in sentences.rows] == [100.0] * len(streams)
    talks = quality_figures(results, streams, whole_talks=True)
    # the corpus scores of whole talks are counts; the run's BLEU, chrF and COMET come from re-segmentation
    assert talks.metrics == {}
    assert (talks.counts["bleu_talk"], talks.counts["chrf_talk"]) == (100.0, 100.0)
    assert talks.counts["signatures"] == sentences.counts["signatures"]
    assert [row["chrf"] for row in talks.rows] == [100.0] * len(streams)

"""The one rule that splits a talk's updates into quarters (or any number of equal shares), shared by the
decoders' talk cost (simul.metrics.talk_cost, run.json's ``cost_growth``), its plot (simul.reports.talk_plot)
and the recognizer's summary of a whole recording (simul.streams.asr.talk): update i of n falls in share
floor(parts x i / n). For 5 updates in quarters: 2, 1, 1, 1.
"""

from __future__ import annotations

from collections.abc import Sequence

QUARTERS = 4


def part_of(index: int, count: int, parts: int = QUARTERS) -> int:
    """Which of ``parts`` equal shares of a talk's ``count`` updates update ``index`` falls in."""
    return min(parts - 1, (parts * index) // max(count, 1))


def quarter_means(values: Sequence[float]) -> list[float]:
    """Means of ``values`` (one per update, in order) by quarter of the talk (:func:`part_of`); a quarter
    without updates (fewer than four) is left out, so fewer than four values give one mean each."""
    groups: list[list[float]] = [[] for _ in range(QUARTERS)]
    for index, value in enumerate(values):
        groups[part_of(index, len(values))].append(value)
    return [sum(g) / len(g) for g in groups if g]

"""What a metric is, in one record (:class:`MetricInfo`), and what a metric family that brings its own
metrics gives (:class:`Family`).

A record holds everything the commands need to show and compare a figure: its run.json name, direction,
title, meaning, unit, the number format of the tables, whether it depends on wall-clock time, whether its
system score is the mean of its segment scores (`simul rank`'s and `simul diff`'s paired bootstrap resample
those), its computation-aware variant, and whether a learned segment scorer computes it
(simul.metrics.learned). simul.metrics.registry lists the records.

A :class:`Family` is the unit of adding metrics: one module defines its records and the function that
computes them from a method's stream results (segment level in the per-stream rows, system level in the
metrics), and one line of simul.metrics.registry's ``FAMILIES`` adds it to every run, table, `diff` and
`sweep` (simul.metrics.families.reader_stability is the example).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from simul.decoding.records import StreamResult
    from simul.metrics.families.figures import Figures
    from simul.streams.format import Stream


@dataclass(frozen=True)
class MetricInfo:
    name: str
    higher_is_better: bool
    title: str
    description: str
    # figures that depend on wall-clock time, not only on the outputs
    timing: bool = False
    # False for diagnostics with no better direction (SWF, EFSW, DSPTV): `simul diff` shows their change
    # but takes no threshold on them, and run.json's ``higher_is_better`` leaves them out
    directional: bool = True
    fmt: str = ".4g"  # the tables' number format
    units: str = ""  # what the figure counts in ("" when it is a score or a ratio without a unit)
    segment_mean: bool = False  # the system score is the mean of the per-stream (segment) scores
    ca: str | None = None  # the name of its computation-aware variant
    learned: bool = False  # computed by a learned segment scorer (simul.metrics.learned)
    replaces: str | None = None  # the tables show it in this metric's column when a run lacks that one
    # what the records must hold for the figure (keys of simul.metrics.compute.MISSING_FIELDS): None when not
    needs: tuple[str, ...] = ()


@dataclass(frozen=True)
class FamilyInput:
    """What a plugged-in family computes its figures from: one method's stream results, the streams, and
    the NE tokenizer's name (the run's token unit)."""

    results: Sequence[StreamResult]
    streams: Mapping[str, Stream]
    ne_tokenizer: str


@dataclass(frozen=True)
class Family:
    """A metric family in one module: its records and ``figures``, which returns the run.json metrics (system
    level), counts and per-stream columns (segment level) of one method."""

    name: str
    specs: tuple[MetricInfo, ...]
    figures: Callable[[FamilyInput], Figures]

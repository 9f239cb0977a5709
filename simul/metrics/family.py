"""What a metric family is (:class:`Family`): the unit of adding metrics. One module of
simul.metrics.families defines its records (simul.metrics.spec.MetricInfo) and the function that computes
their figures from one method's stream results (:class:`FamilyInput` in, :class:`Figures` out); one line of
simul.metrics.registry's ``FAMILIES`` adds it to every run, table, `diff`, `rank` and `sweep`.

The input is computed once per method by simul.metrics.compute and holds all that some family reads: the
method, its results and the streams, the NE tokenizer, RT's side of the comparisons (:class:`RtReference`),
the learned scorers, whether the run has talks, and the sentence delays. Each family writes only its own
names: :func:`combine` refuses a name given by two families.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from simul.metrics.spec import MetricInfo

if TYPE_CHECKING:
    from simul.decoding.records import StreamResult
    from simul.metrics.delays import StreamDelays
    from simul.metrics.learned import SegmentScorer
    from simul.request.methods import Method
    from simul.streams.format import Stream


@dataclass
class Figures:
    """One family's share of a method's report: run.json metrics, counts, and its columns of the per-stream
    rows (one dict per stream result, in the results' order; empty when the family adds no column), its
    lines of the run's error-span file (XCOMET's spans per segment: simul.runs.directory.ERROR_SPANS_FILE),
    and for each learned metric it scored, the SHA-256 of what the scorer was given
    (simul.metrics.learned.inputs_sha256: run.json's ``learned_inputs``, which lets `simul score --update`
    reuse the figure while those inputs stay the same)."""

    metrics: dict[str, float | None] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    spans: list[dict[str, Any]] = field(default_factory=list)
    learned_inputs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RtReference:
    """RT's side of the comparisons: its stream results by stream id (agreement with RT) and its TPS figures
    as its own report gives them (rounded; None when the records lack timing or model tokens)."""

    results: Mapping[str, StreamResult]
    tps: float | None
    tps_e2e: float | None


@dataclass(frozen=True)
class Scorers:
    """What quality is scored with beyond sacrebleu: the learned segment scorers (simul.metrics.learned),
    why there is no COMET-family one (``comet_reason``) and, for runs of whole talks, the re-segmenter
    (None: the long-form family's default, simul.metrics.families.longform)."""

    learned: tuple[SegmentScorer, ...] = ()
    comet_reason: str | None = None
    resegment: str | None = None


NO_SCORERS = Scorers()  # sacrebleu's metrics alone


@dataclass(frozen=True)
class FamilyInput:
    """What a family computes one method's figures from, computed once for every family.

    ``rt``: RT's side of the comparisons (None for RT itself and when the run has no RT); ``talks``: some
    stream is a talk (long-form); ``whole_talks``: every stream is; ``delays``: each result's sentence
    delays (simul.metrics.delays), None when the run has a talk (its latencies are the long-form ones)."""

    method: Method
    results: Sequence[StreamResult]
    streams: Mapping[str, Stream]
    ne_tokenizer: str
    rt: RtReference | None = None
    scorers: Scorers = NO_SCORERS
    talks: bool = False
    whole_talks: bool = False
    delays: Sequence[StreamDelays] | None = None


@dataclass(frozen=True)
class Family:
    """A metric family in one module: its records (``specs``); ``figures``, which returns the run.json
    metrics (system level), counts and per-stream columns (segment level) of one method; and
    ``counts_need``, the counts and per-stream columns it gives that need a field the step records may lack
    (spec.RECORD_FIELDS; a metric says so in its record), which become None when the records lack it."""

    name: str
    specs: tuple[MetricInfo, ...]
    figures: Callable[[FamilyInput], Figures]
    counts_need: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def combine(parts: Sequence[Figures], streams: int) -> Figures:
    """The families' figures in one. Each name belongs to one family: a name given twice is a programming
    error (ValueError), so that no family overwrites another's figure."""
    out = Figures(rows=[{} for _ in range(streams)])
    for part in parts:
        _add(out.metrics, part.metrics, "metric")
        _add(out.counts, part.counts, "count")
        if part.rows and len(part.rows) != streams:
            raise ValueError(f"a family gave {len(part.rows)} per-stream rows for {streams} streams")
        for row, columns in zip(out.rows, part.rows, strict=False):
            _add(row, columns, "per-stream column")
        out.spans.extend(part.spans)
        _add(out.learned_inputs, part.learned_inputs, "learned metric's inputs")
    return out


def _add(into: dict[str, Any], new: Mapping[str, Any], what: str) -> None:
    clash = into.keys() & new.keys()
    if clash:
        raise ValueError(f"{what} {', '.join(sorted(clash))} given by two metric families")
    into.update(new)


def rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def mean_of(values: Sequence[float | None]) -> float | None:
    """The mean of the values that exist, rounded to 4 decimals (None when none does)."""
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 4) if present else None

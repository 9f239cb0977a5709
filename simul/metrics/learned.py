"""Learned segment scorers (COMET, XCOMET, BLEURT and whatever comes next): one protocol, and one record of
what each learned metric owns.

*Protocol.* A :class:`SegmentScorer` scores (source, hypothesis, reference) triples and returns
:class:`SegmentScores`: the system score (the mean of the segment scores), each segment's score, a
signature, the counts the run records beside the figure (XCOMET's truncated segments and token limit,
BLEURT's cut pairs) and, for XCOMET, each segment's error spans (``details``). ``kind`` names the run.json
metric the scores go to (``comet``, ``xcomet``, ``bleurt``); a scorer that reads no source (BLEURT) says so
with ``needs_source = False``, so that segments without a source transcript are still scored.

*Record.* A :class:`LearnedMetric` is what a learned metric brings, as SimulEval's scorers bring
``add_args`` and ``from_args``: its metric record, the run.json config field that records its model, the
command-line option that names a model (with its help) and the loader. simul.metrics.registry lists them
(``LEARNED``); the rule of which models a run is scored with, the options of `simul score` and
`simul ingest`, run.json's config and the tables read them from there (simul.metrics.learned_models).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from simul.metrics.spec import MetricInfo

NO_MODEL = ("none", "off", "")


class SegmentDetailLike(Protocol):
    @property
    def truncated(self) -> bool: ...

    def to_json(self) -> dict[str, Any]: ...


class SegmentScores(Protocol):
    """What a learned scorer returns for a list of segments."""

    @property
    def system(self) -> float: ...

    @property
    def segments(self) -> Sequence[float]: ...

    @property
    def details(self) -> Sequence[SegmentDetailLike] | None: ...

    @property
    def signature(self) -> str: ...

    def counts(self) -> dict[str, Any]:
        """The counts recorded beside the figure in a method's report (may be empty)."""
        ...


class SegmentScorer(Protocol):
    """A loaded learned metric: ``score`` takes aligned sources, hypotheses and first references."""

    @property
    def kind(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def batch_size(self) -> int: ...

    @property
    def needs_source(self) -> bool: ...

    def score(
        self, sources: Sequence[str], outputs: Sequence[str], references: Sequence[str]
    ) -> SegmentScores: ...


def unset(model: str | None) -> bool:
    """No model: an option or config field left out, or given as none, off or empty."""
    return model is None or model.strip().lower() in NO_MODEL


Loader = Callable[[str, int], tuple[SegmentScorer | None, str | None]]


@dataclass(frozen=True)
class LearnedMetric:
    """What one learned metric owns: its record (``info``, whose name is the scorer's ``kind``), the run.json
    config field that records its model (``config_field``, with ``unset_as`` its value in a run without the
    figure, None to leave the field out), the option of `simul score` and `simul ingest` that names a model
    and its help, and ``load``: a model name or path and a batch size to (scorer, None), or (None, why not).

    Several metrics may share one option when one loader tells their models apart (``--comet-model`` loads a
    COMET or an XCOMET model, as its checkpoint's class says); a model given to a shared option that cannot be
    loaded leaves a reason (the run has no figure for it), while a metric with an option of its own is asked
    for by path, and a model that cannot be loaded is an error."""

    info: MetricInfo
    config_field: str
    option: str
    help: str
    load: Loader
    unset_as: str | None = None

    @property
    def kind(self) -> str:
        return self.info.name

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

*Reuse.* A metric whose record says how its figures are made (:class:`Reusable`: the package version its
signature records, whether it reads the source, its counts, whether it gives error spans) can have the
figures a run already holds reused by `simul score RUN --update` instead of loading its model again
(simul.runs.learned_reuse). What it scored is fingerprinted for that: :func:`inputs_sha256`, recorded per
method in run.json's ``learned_inputs``. Its signature is :func:`learned_signature`'s, so that what a run
records can be told equal to what the model would record now without loading it.
"""

from __future__ import annotations

import hashlib
import json
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


def learned_signature(model: str, batch_size: int, version: str) -> str:
    """The signature of a learned metric's figures (COMET, XCOMET, BLEURT): the model as named, the batch size
    and the version of the package that scored it (simul.metrics.signatures reads its fields)."""
    return f"model:{model}|batch:{batch_size}|version:{version}"


def inputs_sha256(
    needs_source: bool, sources: Sequence[str], outputs: Sequence[str], references: Sequence[str]
) -> str:
    """The SHA-256 of what a learned scorer is given: the (source, hypothesis, reference) triples in order,
    the sources left out for a scorer that reads none (``needs_source`` False, BLEURT), so that a change of
    what it does not read does not count. Recorded per metric and method (run.json's ``learned_inputs``):
    a figure is reused only for the very inputs it was computed from (simul.runs.learned_reuse)."""
    payload = [list(sources) if needs_source else None, list(outputs), list(references)]
    # ASCII escapes: any text encodes, a lone surrogate included
    text = json.dumps(payload, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


Loader = Callable[[str, int], tuple[SegmentScorer | None, str | None]]


@dataclass(frozen=True)
class Reusable:
    """What a learned metric's figures depend on beyond its model and batch size, and where they go, so that
    `simul score RUN --update` can reuse the figures a run holds without loading the model
    (simul.runs.learned_reuse): ``version`` returns the version of the package that scores it now, as its
    signature (:func:`learned_signature`) records it (SimulError when it is not installed); ``needs_source``
    is its scorer's (whether the inputs it is given include the sources); ``counts`` the counts its scores
    record beside the figure in a method's report (``SegmentScores.counts``); ``spans`` whether its scores
    carry error spans per segment (``details``: XCOMET's, in the run's error-span lines)."""

    version: Callable[[], str]
    needs_source: bool = True
    counts: tuple[str, ...] = ()
    spans: bool = False


@dataclass(frozen=True)
class LearnedMetric:
    """What one learned metric owns: its record (``info``, whose name is the scorer's ``kind``), the run.json
    config field that records its model (``config_field``, with ``unset_as`` its value in a run without the
    figure, None to leave the field out), the option of `simul score` and `simul ingest` that names a model
    and its help, and ``load``: a model name or path and a batch size to (scorer, None), or (None, why not).

    Several metrics may share one option when one loader tells their models apart (``--comet-model`` loads a
    COMET or an XCOMET model, as its checkpoint's class says); a model given to a shared option that cannot be
    loaded leaves a reason (the run has no figure for it), while a metric with an option of its own is asked
    for by path, and a model that cannot be loaded is an error.

    ``reusable`` (:class:`Reusable`) lets `simul score RUN --update` reuse the figures a run holds when
    nothing they depend on changed; None: they are computed again at every scoring."""

    info: MetricInfo
    config_field: str
    option: str
    help: str
    load: Loader
    unset_as: str | None = None
    reusable: Reusable | None = None

    @property
    def kind(self) -> str:
        return self.info.name

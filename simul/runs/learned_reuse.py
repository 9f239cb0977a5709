"""Reusing the learned figures a run directory holds, for `simul score RUN --update`.

`simul score` keeps every learned figure a run has (COMET, XCOMET, BLEURT; simul.metrics.learned_models).
Computing one again costs its model's loading and scoring (XCOMET-XL: about 29 GB, and minutes to hours on
a large run) and, when nothing it depends on changed, gives the figure the run already holds. With
``--update`` (not ``--recompute``), :class:`RecordedFigures` hands simul.metrics.learned_models.load_for_run,
for each metric whose model is the run's, a :class:`ReplayScorer` that answers with the run's own figures
instead of loading the model, when the run's records show every condition:

* the metric's record says what its figures depend on and where they go (simul.metrics.learned.Reusable);
* the model is the one the run's config records for the metric (learned_models.run_models), by name or path
  as recorded;
* the run's signature of the metric (``signatures.<kind>``, and ``signatures.longform_<kind>`` for runs of
  whole talks) is the one the model would record now (simul.metrics.learned.learned_signature): the same
  model, batch size and version of the package that scores it (unbabel-comet, bleurt-pytorch); and where
  run.json's ``comet`` block describes the metric, it says the same model, batch size and version;
* the run records, per method, the SHA-256 of what the scorer was given (run.json's ``learned_inputs``,
  simul.metrics.learned.inputs_sha256), and the figures read back whole: the system figure (the method's
  metric, or for whole talks ``counts.longform.<kind>`` unrounded), each scored stream's or segment's score
  (per_stream.jsonl), the counts beside the figure and, for XCOMET, each segment's error-span line
  (error_spans.jsonl).

A run written before ``learned_inputs`` existed, or whose records lack or cannot read back any of this, gets
no replay scorer: the model is loaded and the figures computed again, as before. The inputs themselves are
checked when the replay scorer is asked to score (once per method): it answers with a method's recorded
figures only when the SHA-256 of what it is given is the one recorded with them; for other inputs (steps or
streams edited since, another ``--resegment`` of talks) it loads the model, once, and computes. A model that
has to be loaded then and cannot be is an error: nothing is written.

The replayed scores go through the same code as computed ones (simul.metrics.families), so what is reused,
the system figure, the per-stream and per-segment columns, the counts, the signature, the ``comet`` block and
the error-span lines, is written back as it was.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError
from simul.metrics.comet_model import SegmentDetail
from simul.metrics.learned import (
    LearnedMetric,
    SegmentScorer,
    SegmentScores,
    inputs_sha256,
    learned_signature,
)
from simul.metrics.learned_models import run_models
from simul.runs.directory import read_error_spans, read_per_stream

__all__ = ["RecordedFigures", "RecordedScores", "ReplayScorer"]


@dataclass(frozen=True)
class RecordedScores:
    """One method's figures of a learned metric as the run holds them, in the form its scorer returns them
    (simul.metrics.learned.SegmentScores), so that the families write them back unchanged: the system score,
    each scored segment's score (in the order the scorer is given them), each one's error spans (XCOMET),
    the signature and the counts beside the figure."""

    system: float
    segments: list[float]
    details: list[SegmentDetail] | None
    signature: str
    recorded_counts: dict[str, Any]

    def counts(self) -> dict[str, Any]:
        return dict(self.recorded_counts)


class ReplayScorer:
    """A learned metric's scorer that answers with the figures the run holds (:class:`RecordedScores`, by the
    SHA-256 of the inputs they were computed from) and loads the model only for inputs the run holds no
    figures of. It stands for the model: ``model``, ``batch_size`` and ``version`` are what the model's own
    scorer would record, ``checkpoint`` the run's ``comet`` block's (the loaded scorer's once loaded)."""

    def __init__(
        self,
        metric: LearnedMetric,
        model: str,
        batch_size: int,
        version: str,
        recorded: Mapping[str, RecordedScores],
        checkpoint: str | None = None,
    ) -> None:
        self._metric = metric
        self.kind = metric.kind
        self.model = model
        self.batch_size = batch_size
        self.version = version
        self.needs_source = metric.reusable.needs_source if metric.reusable is not None else True
        self._recorded = dict(recorded)
        self._checkpoint = checkpoint
        self._loaded: SegmentScorer | None = None
        self.reused = 0  # calls (methods) answered with the run's figures
        self.computed = 0  # calls the model scored

    @property
    def checkpoint(self) -> str | None:
        loaded = getattr(self._loaded, "checkpoint", None)
        return str(loaded) if loaded is not None else self._checkpoint

    def score(
        self, sources: Sequence[str], outputs: Sequence[str], references: Sequence[str]
    ) -> SegmentScores:
        found = self._recorded.get(inputs_sha256(self.needs_source, sources, outputs, references))
        if found is not None and len(found.segments) == len(outputs):
            self.reused += 1
            return found
        self.computed += 1
        return self._model().score(sources, outputs, references)

    def _model(self) -> SegmentScorer:
        """The metric's own scorer, loaded on first need (inputs the run holds no figures of)."""
        if self._loaded is None:
            title = self._metric.info.title
            scorer, why = self._metric.load(self.model, self.batch_size)
            if scorer is None:
                raise SimulError(
                    f"{title}: what it scores changed since the run was scored, so its figures cannot be "
                    f"reused, and {self.model} could not be loaded: {why}"
                )
            if scorer.kind != self.kind:
                raise SimulError(
                    f"{title}: the run's model {self.model} loads as a model of {scorer.kind} now, not of "
                    f"{self.kind}; name the model to use with {self._metric.option}"
                )
            self._loaded = scorer
        return self._loaded

    def note(self) -> str | None:
        """What happened to the run's figures, for the user (None when the scorer was never asked)."""
        title = self._metric.info.title
        if self.reused and not self.computed:
            return (
                f"{title}: the run's figures reused (same model {self.model}, batch size {self.batch_size}, "
                f"version {self.version} and inputs; --recompute computes them again)"
            )
        if self.computed:
            return (
                f"{title}: computed again with {self.model} for {self.computed} of "
                f"{self.reused + self.computed} methods (what it scores changed since the run was scored)"
            )
        return None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _detail(line: Mapping[str, Any]) -> SegmentDetail | None:
    """A segment's XCOMET detail back from its error-span line (None when the line lacks part of it)."""
    spans, truncated, tokens = line.get("spans"), line.get("truncated"), line.get("tokens")
    if not isinstance(spans, list) or not isinstance(truncated, bool) or not isinstance(tokens, dict):
        return None
    if not all(isinstance(span, dict) for span in spans):
        return None
    return SegmentDetail(spans=[dict(span) for span in spans], truncated=truncated, tokens=dict(tokens))


class RecordedFigures:
    """The learned figures of the run in ``path`` (its run.json ``run`` as loaded), to be reused when scored
    again with ``batch_size``; :meth:`scorer` is learned_models.load_for_run's ``reuse``. The per-stream and
    error-span files are read once, when a metric's records make them worth reading; a file that cannot be
    read back makes the figures it holds computed again (every learned figure for per_stream.jsonl, XCOMET's
    for error_spans.jsonl), and `simul score --update` writes it anew."""

    def __init__(self, path: Path, run: Mapping[str, Any], batch_size: int) -> None:
        self.path = path
        self.run = run
        self.batch_size = batch_size
        self.scorers: list[ReplayScorer] = []  # those handed out
        # a file's records by method once read (None: it could not be read back), by file
        self._by_method: dict[str, dict[str, list[dict[str, Any]]] | None] = {}

    def scorer(self, metric: LearnedMetric, model: str) -> ReplayScorer | None:
        """A scorer that answers with the run's figures of ``metric``, made with ``model``; None when the
        run's records do not show that nothing they depend on changed (see the module): the model is
        loaded."""
        reusable = metric.reusable
        if reusable is None or run_models(self.run).get(metric.kind) != model:
            return None
        try:
            version = reusable.version()
        except SimulError:  # the package is not installed: nothing says the figures would be the same
            return None
        signature = learned_signature(model, self.batch_size, version)
        if not self._signed(metric.kind, signature):
            return None
        block = self.run.get("comet")
        checkpoint: str | None = None
        if isinstance(block, dict) and block.get("kind") == metric.kind:
            described = (block.get("model"), block.get("batch_size"), block.get("version"))
            if described != (model, self.batch_size, version):
                return None
            checkpoint = block["checkpoint"] if isinstance(block.get("checkpoint"), str) else None
        recorded = self._recorded(metric, signature)
        if not recorded:
            return None
        scorer = ReplayScorer(metric, model, self.batch_size, version, recorded, checkpoint)
        self.scorers.append(scorer)
        return scorer

    def notes(self) -> list[str]:
        """What happened to each metric whose figures could be reused (after scoring)."""
        return [note for scorer in self.scorers if (note := scorer.note()) is not None]

    def _signed(self, kind: str, signature: str) -> bool:
        """Whether the run's signatures of ``kind`` (sentence-level, long-form or both) are ``signature``."""
        signatures = self.run.get("signatures")
        if not isinstance(signatures, dict):
            return False
        found = [signatures[key] for key in (kind, f"longform_{kind}") if key in signatures]
        return bool(found) and all(value == signature for value in found)

    def _recorded(self, metric: LearnedMetric, signature: str) -> dict[str, RecordedScores]:
        """SHA-256 of a method's inputs -> the method's recorded figures, for every method whose records are
        whole; inputs two methods share with different figures are left out (computed again)."""
        inputs = self.run.get("learned_inputs")
        digests = inputs.get(metric.kind) if isinstance(inputs, dict) else None
        methods = self.run.get("methods")
        if not isinstance(digests, dict) or not digests or not isinstance(methods, list):
            return {}  # a run scored before learned_inputs existed: its figures are computed again
        rows = self._per_stream()
        spans = self._span_lines() if metric.reusable is not None and metric.reusable.spans else {}
        if rows is None or spans is None:
            return {}
        recorded: dict[str, RecordedScores] = {}
        clashing: set[str] = set()
        for row in methods:
            key = row.get("key") if isinstance(row, dict) else None
            digest = digests.get(key) if isinstance(key, str) else None
            if not isinstance(row, dict) or not isinstance(key, str) or not isinstance(digest, str):
                continue
            scores = _method_scores(metric, row, rows.get(key, []), spans.get(key, []), signature)
            if scores is None:
                continue
            if digest in recorded and recorded[digest] != scores:
                clashing.add(digest)
            recorded.setdefault(digest, scores)
        for digest in clashing:
            del recorded[digest]
        return recorded

    def _per_stream(self) -> dict[str, list[dict[str, Any]]] | None:
        """per_stream.jsonl's rows by method, in the file's order (None when it cannot be read back)."""
        return self._read_by_method(
            "per_stream", lambda: ((method, row) for (method, _), row in read_per_stream(self.path).items())
        )

    def _span_lines(self) -> dict[str, list[dict[str, Any]]] | None:
        """error_spans.jsonl's lines by method, in the file's order (None when it cannot be read back)."""
        return self._read_by_method(
            "error_spans", lambda: ((str(line["method"]), line) for line in read_error_spans(self.path))
        )

    def _read_by_method(
        self, name: str, records: Callable[[], Iterable[tuple[str, dict[str, Any]]]]
    ) -> dict[str, list[dict[str, Any]]] | None:
        """The (method key, record) pairs ``records`` reads, grouped by method in their order; read once and
        kept under ``name``, None when the file cannot be read back."""
        if name not in self._by_method:
            grouped: dict[str, list[dict[str, Any]]] = {}
            try:
                for method, record in records():
                    grouped.setdefault(method, []).append(record)
            except (SimulError, OSError):
                self._by_method[name] = None
            else:
                self._by_method[name] = grouped
        return self._by_method[name]


def _method_scores(
    metric: LearnedMetric,
    row: Mapping[str, Any],
    stream_rows: Sequence[Mapping[str, Any]],
    span_lines: Sequence[Mapping[str, Any]],
    signature: str,
) -> RecordedScores | None:
    """One method's recorded figures of ``metric`` (run.json's row, its per-stream rows and error-span lines),
    None when part of them is missing or not a number. Runs of whole talks hold them per re-segmented segment
    (the row's ``counts.longform`` has the unrounded system score), others per scored stream."""
    kind, reusable = metric.kind, metric.reusable
    counts, metrics = row.get("counts"), row.get("metrics")
    if reusable is None or not isinstance(counts, dict) or not isinstance(metrics, dict):
        return None
    longform = counts.get("longform")
    talks = isinstance(longform, dict) and kind in longform
    system: Any  # checked to be a number below
    segments: list[Any]
    if isinstance(longform, dict) and talks:
        system = longform.get(kind)
        segments = [
            segment.get(kind) if isinstance(segment, dict) else None
            for stream in stream_rows
            for segment in (stream.get("segments") or [])
        ]
        lines = [line for line in span_lines if line.get("segment") is not None]
    else:
        system = metrics.get(kind)
        segments = [stream[kind] for stream in stream_rows if stream.get(kind) is not None]
        lines = [line for line in span_lines if line.get("segment") is None]
    if not _number(system) or not segments or not all(_number(value) for value in segments):
        return None
    kept = {name: counts[name] for name in reusable.counts if name in counts}
    if not talks and len(kept) != len(reusable.counts):
        return None  # a count a sentence-level figure records is missing
    details: list[SegmentDetail] | None = None
    if reusable.spans:
        found = [_detail(line) for line in lines]
        details = [detail for detail in found if detail is not None]
        if len(details) != len(segments) or len(found) != len(details):
            return None
    return RecordedScores(system, segments, details, signature, kept)

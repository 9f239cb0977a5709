"""Which models a run's learned metrics are scored with: one rule for every learned metric of
simul.metrics.registry's ``LEARNED`` (simul.metrics.learned.LearnedMetric), read from their records.

A run records the model of each learned metric in its config field (``comet_model``, ``xcomet_model``,
``bleurt_model``). `simul score` keeps every learned figure the run has, made with the run's model, unless an
option drops it (``none``) or names another model. An option of one metric (``--bleurt-model``) replaces or
drops that metric's model. An option that several metrics share (``--comet-model``: COMET and XCOMET) drops
all of them with ``none``, and a model given to it replaces the figure of the metric its loader says it is
(an XCOMET checkpoint: XCOMET) and keeps the others. Adding one learned metric to a run never drops another.

A kept figure is computed again with the run's model, except that `simul score --update` reuses the figure
the run holds when nothing it depends on changed: :func:`load_for_run` asks its ``reuse``
(simul.runs.learned_reuse) for a scorer that needs no loading, and loads only the models it gives none for.

Runs made before ``xcomet_model`` existed recorded an XCOMET model in ``comet_model`` (``simul eval
--comet-model`` may name one): the run's ``comet`` block's ``kind`` tells (:func:`run_models`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from simul.common.errors import SimulError
from simul.metrics.learned import LearnedMetric, SegmentScorer, unset
from simul.metrics.registry import LEARNED

__all__ = ["LoadedScorers", "Reuse", "config_models", "load_for_run", "load_named", "options", "run_models"]

# A learned metric and a model of it to a scorer that needs no loading (simul.runs.learned_reuse: one that
# gives the figures the run holds, made with that model), or None: the model is loaded.
Reuse = Callable[[LearnedMetric, str], SegmentScorer | None]


def options() -> dict[str, list[LearnedMetric]]:
    """Each option of the learned metrics, with the metrics it names models of, in the records' order."""
    out: dict[str, list[LearnedMetric]] = {}
    for metric in LEARNED:
        out.setdefault(metric.option, []).append(metric)
    return out


def run_models(run: Mapping[str, Any]) -> dict[str, str | None]:
    """The model each learned metric of ``run`` was scored with (None: the run has no such figure), read
    from its config; a ``comet_model`` that named an XCOMET model (``comet`` block of kind ``xcomet``, no
    ``xcomet_model``) is the XCOMET model."""
    config = run.get("config") or {}
    models: dict[str, str | None] = {}
    for metric in LEARNED:
        value = config.get(metric.config_field)
        models[metric.kind] = None if unset(value) else str(value)
    block = run.get("comet") if isinstance(run.get("comet"), dict) else {}
    legacy_xcomet = "xcomet_model" not in config and (block or {}).get("kind") == "xcomet"
    if legacy_xcomet and models.get("comet") is not None:
        models["xcomet"], models["comet"] = models["comet"], None
    return models


def config_models(models: Mapping[str, str | None]) -> dict[str, str]:
    """The run.json config fields that record ``models``: each metric's field when it has a model, else its
    record's ``unset_as`` (``comet_model`` is always there, ``none`` when the run has no COMET), else none."""
    fields: dict[str, str] = {}
    for metric in LEARNED:
        model = models.get(metric.kind) or metric.unset_as
        if model is not None:
            fields[metric.config_field] = model
    return fields


class LoadedScorers:
    """The learned scorers a run is scored with (:func:`load_for_run`), the models they record, why there is
    no COMET-family figure (None when there is one), and what the user should hear about."""

    def __init__(
        self,
        scorers: list[SegmentScorer],
        models: dict[str, str | None],
        comet_reason: str | None,
        notes: list[str],
        option_error: str | None = None,
    ) -> None:
        self.scorers = scorers
        self.models = models
        self.comet_reason = comet_reason
        self.notes = notes
        self.option_error = option_error  # why the --comet-model given could not be loaded


def load_for_run(
    run: Mapping[str, Any],
    given: Mapping[str, str | None],
    batch_size: int,
    reuse: Reuse | None = None,
) -> LoadedScorers:
    """Load the learned scorers that `simul score` uses on ``run`` under the module's rule: the run's models
    (:func:`run_models`), with the options ``given`` (option -> value, None when left out: ``--comet-model``,
    ``--bleurt-model``) replacing or dropping what they name. A model of a shared option that cannot be
    loaded leaves its reason (the run keeps no figure for it); a model of a metric's own option that cannot be
    loaded is an error (SimulError), as it was asked for by path.

    ``reuse`` (`simul score --update`): asked first for each model the run's figure of a metric was made with
    (kept from the run, or named again by an option), it may give a scorer that needs no loading; only the
    models it gives none for, new or changed ones, are loaded. None: every model is loaded."""
    models = run_models(run)
    loaded: dict[str, SegmentScorer] = {}
    reasons: list[str] = []
    notes: list[str] = []
    option_error: str | None = None
    for option, metrics in options().items():
        if len(metrics) == 1:
            _load_own(metrics[0], given.get(option), models, loaded, batch_size, reuse)
            continue
        error = _load_shared(
            option, metrics, given.get(option), models, loaded, reasons, notes, batch_size, reuse
        )
        option_error = option_error or error
    shared = {option: [m.kind for m in ms] for option, ms in options().items() if len(ms) > 1}
    comet_reason: str | None = None  # why the run has no figure of a shared option's metrics
    if not any(kind in loaded for kinds in shared.values() for kind in kinds):
        comet_reason = next(iter(reasons or [f"disabled ({option} none)" for option in shared]), None)
    return LoadedScorers(
        [loaded[m.kind] for m in LEARNED if m.kind in loaded], models, comet_reason, notes, option_error
    )


def _load_own(
    metric: LearnedMetric,
    value: str | None,
    models: dict[str, str | None],
    loaded: dict[str, SegmentScorer],
    batch_size: int,
    reuse: Reuse | None = None,
) -> None:
    """A metric with an option of its own: the option replaces or drops the run's model (``reuse``: see
    :func:`load_for_run`)."""
    if value is not None:
        models[metric.kind] = None if unset(value) else value
    model = models[metric.kind]
    if model is None:
        return
    ready = reuse(metric, model) if reuse is not None else None
    if ready is not None:
        loaded[metric.kind] = ready
        return
    scorer, why = metric.load(model, batch_size)
    if scorer is None:
        raise SimulError(f"{metric.info.title}: {why}")
    loaded[metric.kind] = scorer


def _load_shared(
    option: str,
    metrics: Sequence[LearnedMetric],
    value: str | None,
    models: dict[str, str | None],
    loaded: dict[str, SegmentScorer],
    reasons: list[str],
    notes: list[str],
    batch_size: int,
    reuse: Reuse | None = None,
) -> str | None:
    """Metrics that share an option (COMET and XCOMET): ``none`` drops them all; a model replaces the figure
    of the metric its loader says it is; the run's other models are loaded as they are. Returns why the
    option's model could not be loaded (None when it could or none was given). ``reuse`` (see
    :func:`load_for_run`) is asked for the run's models, and for a model given that is the run's model of one
    of the metrics (the same name: the same metric)."""
    kinds = [m.kind for m in metrics]
    by_kind = {m.kind: m for m in metrics}
    load = metrics[0].load

    def ready(kind: str, model: str) -> SegmentScorer | None:
        return reuse(by_kind[kind], model) if reuse is not None else None

    option_error: str | None = None
    if value is not None:
        if unset(value):
            for kind in kinds:
                models[kind] = None
            reasons.append(f"disabled ({option} none)")
        else:
            same = next((kind for kind in kinds if models[kind] == value), None)  # the run's own model
            reused = ready(same, value) if same is not None else None
            scorer, why = (reused, None) if reused is not None else load(value, batch_size)
            if scorer is not None:
                loaded[scorer.kind] = scorer
                models[scorer.kind] = value
            else:
                option_error = str(why)
                reasons.append(option_error)
                kept = [k for k in kinds if models[k] is not None]
                if kept:
                    notes.append(
                        f"{option} {value} could not be loaded ({why}); the run's "
                        f"{' and '.join(k.upper() for k in kept)} model is used"
                    )
    for kind in kinds:
        name = models[kind]
        if name is None or kind in loaded:
            continue
        reused = ready(kind, name)
        scorer, why = (reused, None) if reused is not None else load(name, batch_size)
        if scorer is None:
            reasons.append(str(why))
            continue
        if scorer.kind != kind:  # the run's field named a model of another metric of the option
            models[kind] = None
            if scorer.kind in loaded:
                continue
            models[scorer.kind] = name
        loaded[scorer.kind] = scorer
    return option_error


def load_named(
    given: Mapping[str, str | None], batch_size: int
) -> tuple[list[SegmentScorer], dict[str, str]]:
    """The scorers of the metrics with an option of their own that ``given`` names a model for (option ->
    value; `simul ingest`), each asked for by path (one that cannot be loaded is an error, SimulError), and
    the run.json config fields that record their models."""
    scorers: list[SegmentScorer] = []
    fields: dict[str, str] = {}
    for option, metrics in options().items():
        if len(metrics) > 1:
            continue
        models: dict[str, str | None] = {metrics[0].kind: None}
        loaded: dict[str, SegmentScorer] = {}
        _load_own(metrics[0], given.get(option), models, loaded, batch_size)
        for kind, scorer in loaded.items():
            scorers.append(scorer)
            fields[metrics[0].config_field] = str(models[kind])
    return scorers, fields

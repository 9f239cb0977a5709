"""Learned segment scorers (COMET, XCOMET, BLEURT and whatever comes next): one protocol, and one rule for
which of them a run is scored with.

*Protocol.* A :class:`SegmentScorer` scores (source, hypothesis, reference) triples and returns
:class:`SegmentScores`: the system score (the mean of the segment scores), each segment's score, a
signature, the counts the run records beside the figure (XCOMET's truncated segments and token limit,
BLEURT's cut pairs) and, for XCOMET, each segment's error spans (``details``). ``kind`` names the run.json
metric the scores go to (``comet``, ``xcomet``, ``bleurt``); a scorer that reads no source (BLEURT) says so
with ``needs_source = False``, so that segments without a source transcript are still scored.

*The rule* (:func:`run_models`, :func:`chosen_models`). A run records the model of each learned metric in its
config: ``comet_model`` (COMET; `simul eval --comet-model` may name an XCOMET model there, as runs made before
``xcomet_model`` existed do, which the run's ``comet`` block's ``kind`` tells), ``xcomet_model`` and
``bleurt_model``. `simul score` recomputes every learned figure the run has, with the run's model, unless it
is told to drop it (``--comet-model none`` drops COMET and XCOMET, ``--bleurt-model none`` BLEURT) or to
compute it with another model (``--comet-model M`` replaces the figure of M's class, COMET or XCOMET, and
keeps the other). Adding one learned metric to a run never drops another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

# run.json metric of each learned scorer, in the order a run is scored and reported
LEARNED_KINDS = ("comet", "xcomet", "bleurt")
# run.json config field that records each one's model
MODEL_FIELDS = {"comet": "comet_model", "xcomet": "xcomet_model", "bleurt": "bleurt_model"}
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
    return model is None or model.strip().lower() in NO_MODEL


def run_models(run: Mapping[str, Any]) -> dict[str, str | None]:
    """The model each learned metric of ``run`` was scored with (None: the run has no such figure), read
    from its config; a ``comet_model`` that named an XCOMET model (``comet`` block of kind ``xcomet``, no
    ``xcomet_model``) is the XCOMET model."""
    config = run.get("config") or {}
    block = run.get("comet") if isinstance(run.get("comet"), dict) else {}
    models: dict[str, str | None] = {kind: None for kind in LEARNED_KINDS}
    for kind in ("xcomet", "bleurt"):
        value = config.get(MODEL_FIELDS[kind])
        models[kind] = None if unset(value) else str(value)
    comet = config.get("comet_model")
    if not unset(comet):
        legacy_xcomet = "xcomet_model" not in config and (block or {}).get("kind") == "xcomet"
        models["xcomet" if legacy_xcomet else "comet"] = str(comet)
    return models


def config_models(models: Mapping[str, str | None]) -> dict[str, str]:
    """The run.json config fields that record ``models`` (``comet_model`` is always there, ``none`` when the
    run has no COMET; the others only when set)."""
    fields = {"comet_model": models.get("comet") or "none"}
    for kind in ("xcomet", "bleurt"):
        model = models.get(kind)
        if model is not None:
            fields[MODEL_FIELDS[kind]] = model
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
    run: Mapping[str, Any], comet_option: str | None, bleurt_option: str | None, batch_size: int
) -> LoadedScorers:
    """Load the learned scorers that `simul score` uses on ``run`` under the module's rule: the run's models
    (:func:`run_models`), with ``--comet-model`` (``comet_option``) and ``--bleurt-model`` (``bleurt_option``)
    replacing or dropping what they name. A COMET-family model that cannot be loaded leaves its reason (the
    run keeps no figure for it); a BLEURT checkpoint that cannot be loaded is an error (SimulError), as it was
    asked for by path."""
    from simul.common.errors import SimulError
    from simul.metrics.bleurt import load_bleurt
    from simul.metrics.comet import load_comet

    models = run_models(run)
    loaded: dict[str, SegmentScorer] = {}
    reasons: list[str] = []
    notes: list[str] = []
    option_error: str | None = None
    if comet_option is not None:
        if unset(comet_option):
            models["comet"] = models["xcomet"] = None
            reasons.append("disabled (--comet-model none)")
        else:
            scorer, why = load_comet(comet_option, batch_size)
            if scorer is not None:
                loaded[scorer.kind] = scorer
                models[scorer.kind] = comet_option
            else:
                option_error = str(why)
                reasons.append(option_error)
                kept = [k for k in ("comet", "xcomet") if models[k] is not None]
                if kept:
                    notes.append(
                        f"--comet-model {comet_option} could not be loaded ({why}); the run's "
                        f"{' and '.join(k.upper() for k in kept)} model is used"
                    )
    for kind in ("comet", "xcomet"):
        name = models[kind]
        if name is None or kind in loaded:
            continue
        scorer, why = load_comet(name, batch_size)
        if scorer is None:
            reasons.append(str(why))
            continue
        if scorer.kind != kind:  # the run's comet_model named a model of the other class
            models[kind] = None
            if scorer.kind in loaded:
                continue
            models[scorer.kind] = name
        loaded[scorer.kind] = scorer
    if bleurt_option is not None:
        models["bleurt"] = None if unset(bleurt_option) else bleurt_option
    if models["bleurt"] is not None:
        bleurt, bleurt_reason = load_bleurt(models["bleurt"], batch_size)
        if bleurt is None:
            raise SimulError(f"BLEURT: {bleurt_reason}")
        loaded["bleurt"] = bleurt
    if not reasons and "comet" not in loaded and "xcomet" not in loaded:
        reasons.append("disabled (--comet-model none)")
    comet_reason = None if ("comet" in loaded or "xcomet" in loaded) else reasons[0]
    return LoadedScorers(
        [loaded[k] for k in LEARNED_KINDS if k in loaded], models, comet_reason, notes, option_error
    )

"""COMET (Rei et al., 2022, "COMET-22", WMT) and XCOMET (Guerreiro et al., 2024, TACL) through the
unbabel-comet package.

System score = mean of the segment scores over (complete source, final output, reference) triples, as
unbabel-comet's ``predict`` reports it (SPEC "Metrics"). The model, package version and batch size are
recorded with the score.

:func:`load_comet` resolves ``--comet-model`` (simul.metrics.comet_model) and loads what it names: a model of
class ``xcomet_metric`` (``Unbabel/XCOMET-XL``, ``Unbabel/XCOMET-XXL``, a local XCOMET checkpoint) in a child
process (simul.metrics.xcomet), whose scores go to the run's ``xcomet`` metric with each segment's error
spans; any other COMET model in this process (:class:`CometScorer`), to ``comet``. Before loading, the free
memory is checked against what loading needs (simul.metrics.comet_model.check_memory).

COMET is optional: unbabel-comet (and torch) may be missing, and the default model
``Unbabel/wmt22-comet-da`` must be in the local Hugging Face cache or downloadable. When it cannot be
loaded, the caller gets the one-line reason instead of a score. A scorer's process killed by a signal (the
out-of-memory killer's SIGKILL) is not such a reason: :class:`simul.metrics.xcomet.ScorerKilled` propagates,
so that the run is marked ``scoring_failed`` and `simul score` can finish it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from simul.common.errors import SimulError
from simul.metrics.comet_model import (
    XCOMET_CLASS,
    CometLike,
    CometScores,
    ScorerKilled,
    check_memory,
    checkpoint_for,
    comet_version,
    model_class,
    quiet,
)
from simul.metrics.learned import LearnedMetric, Reusable
from simul.metrics.spec import MetricInfo

__all__ = [
    "COMET",
    "DEFAULT_COMET_MODEL",
    "NO_COMET",
    "XCOMET",
    "CometLike",
    "CometScorer",
    "CometScores",
    "load_comet",
]

DEFAULT_COMET_MODEL = "Unbabel/wmt22-comet-da"
NO_COMET = ("none", "off", "")


class CometScorer:
    """A COMET model loaded in this process."""

    kind = "comet"
    needs_source = True

    def __init__(self, model: str, batch_size: int = 16) -> None:
        version = comet_version()
        checkpoint = checkpoint_for(model)
        check_memory(checkpoint, model)
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            with quiet():
                from comet import load_from_checkpoint

                self._model: Any = load_from_checkpoint(str(checkpoint))
        except SimulError:
            raise
        except Exception as exc:
            reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            raise SimulError(f"COMET could not load {checkpoint}: {reason}") from None
        self.model = model
        self.version = version
        self.batch_size = batch_size
        # what the name resolved to: a Hugging Face snapshot folder names the model's revision
        self.checkpoint = str(checkpoint)

    def score(self, sources: Sequence[str], outputs: Sequence[str], references: Sequence[str]) -> CometScores:
        data = [{"src": s, "mt": m, "ref": r} for s, m, r in zip(sources, outputs, references, strict=True)]
        if not data:
            return CometScores(0.0, [], self.model, self.version, self.batch_size)
        with quiet():
            result = self._model.predict(data, batch_size=self.batch_size, gpus=0, progress_bar=False)
        segments = [float(x) for x in result.scores]
        return CometScores(
            system=sum(segments) / len(segments),
            segments=segments,
            model=self.model,
            version=self.version,
            batch_size=self.batch_size,
        )


def _scorer(model: str, batch_size: int) -> CometLike:
    comet_version()
    checkpoint = checkpoint_for(model)
    if model_class(checkpoint) == XCOMET_CLASS:
        from simul.metrics.xcomet import XcometScorer

        return XcometScorer(model, batch_size, checkpoint)
    return CometScorer(model, batch_size)


def load_comet(model: str, batch_size: int = 16) -> tuple[CometLike | None, str | None]:
    """(scorer, None) when the model is usable, else (None, the one-line reason). A scorer's process killed
    while loading (simul.metrics.xcomet.ScorerKilled) is raised, not returned as a reason."""
    if model.strip().lower() in NO_COMET:
        return None, "disabled (--comet-model none)"
    try:
        return _scorer(model, batch_size), None
    except ScorerKilled:
        raise
    except SimulError as exc:
        return None, str(exc)


COMET_OPTION = "--comet-model"
COMET_OPTION_HELP = (
    "COMET or XCOMET model name or checkpoint path: computes the figure of its class (COMET or XCOMET) and "
    "keeps the other ('none' drops both). Default: the run's models."
)
# One option and one loader for both: the checkpoint's class says which metric a model scores.
COMET = LearnedMetric(
    info=MetricInfo(
        "comet",
        True,
        "COMET",
        "COMET system score (mean of segment scores)",
        fmt=".3f",
        quality=True,
        segment_mean=True,
        learned=True,
        rank_auto=2,
    ),
    config_field="comet_model",
    option=COMET_OPTION,
    help=COMET_OPTION_HELP,
    load=load_comet,
    unset_as="none",
    reusable=Reusable(version=comet_version),
)
XCOMET = LearnedMetric(
    info=MetricInfo(
        "xcomet",
        True,
        "XCOMET",
        "XCOMET system score (mean of segment scores; IWSLT 2026 ranks by XCOMET-XL)",
        fmt=".3f",
        quality=True,
        segment_mean=True,
        learned=True,
        replaces="comet",
        rank_auto=1,
    ),
    config_field="xcomet_model",
    option=COMET_OPTION,
    help=COMET_OPTION_HELP,
    load=load_comet,
    # its figures: the score, the counts of CometScores.counts and each segment's error spans
    reusable=Reusable(version=comet_version, counts=("xcomet_truncated", "xcomet_max_tokens"), spans=True),
)

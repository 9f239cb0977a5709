"""COMET (Rei et al., 2022, "COMET-22", WMT) through the unbabel-comet package.

System score = mean of the segment scores over (complete source, final output, reference) triples, as
unbabel-comet's ``predict`` reports it (SPEC "Metrics"). The model, package version and batch size are
recorded with the score.

COMET is optional: unbabel-comet (and torch) may be missing, and the default model
``Unbabel/wmt22-comet-da`` must be in the local Hugging Face cache or downloadable. When it cannot be
loaded, the caller gets the one-line reason instead of a score.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError

DEFAULT_COMET_MODEL = "Unbabel/wmt22-comet-da"
NO_COMET = ("none", "off", "")


@dataclass(frozen=True)
class CometScores:
    system: float
    segments: list[float]
    model: str
    version: str
    batch_size: int

    @property
    def signature(self) -> str:
        return f"model:{self.model}|batch:{self.batch_size}|version:{self.version}"


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Keep Lightning's and transformers' chatter off stdout (which belongs to --json)."""
    loggers = [
        logging.getLogger(n)
        for n in (
            "lightning",
            "pytorch_lightning",
            "lightning.pytorch",
            "lightning_fabric",
            "transformers",
            "comet",
        )
    ]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    sink = io.StringIO()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(sink):
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _checkpoint_for(model: str) -> Path:
    """A local checkpoint path for a model name or path; raises SimulError with the reason otherwise."""
    path = Path(model).expanduser()
    if path.exists():
        if path.is_dir():
            candidate = path / "checkpoints" / "model.ckpt"
            if not candidate.is_file():
                raise SimulError(f"{path} has no checkpoints/model.ckpt")
            return candidate
        return path
    if "/" not in model or model.startswith((".", "/")):
        raise SimulError(f"COMET checkpoint {model} does not exist")
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise SimulError("huggingface_hub is not installed (pip install 'simul[comet]')") from None
    try:
        with _quiet():
            local = snapshot_download(repo_id=model, local_files_only=True)
    except Exception:
        try:
            with _quiet():
                local = snapshot_download(repo_id=model)
        except Exception as exc:
            raise SimulError(
                f"{model} is not in the local Hugging Face cache and could not be downloaded "
                f"({type(exc).__name__}: the Hub is unreachable or the name is wrong); "
                "pass --comet-model PATH/TO/checkpoints/model.ckpt, or score the run later with "
                "`simul score RUN_DIR` where the model is available"
            ) from None
    checkpoint = Path(local) / "checkpoints" / "model.ckpt"
    if not checkpoint.is_file():
        raise SimulError(f"{model} was found at {local} but has no checkpoints/model.ckpt")
    return checkpoint


class CometScorer:
    """A loaded COMET model."""

    def __init__(self, model: str, batch_size: int = 16) -> None:
        try:
            version = metadata.version("unbabel-comet")
        except metadata.PackageNotFoundError:
            raise SimulError("unbabel-comet is not installed (pip install 'simul[comet]')") from None
        checkpoint = _checkpoint_for(model)
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            with _quiet():
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
        with _quiet():
            result = self._model.predict(data, batch_size=self.batch_size, gpus=0, progress_bar=False)
        segments = [float(x) for x in result.scores]
        return CometScores(
            system=sum(segments) / len(segments),
            segments=segments,
            model=self.model,
            version=self.version,
            batch_size=self.batch_size,
        )


def load_comet(model: str, batch_size: int = 16) -> tuple[CometScorer | None, str | None]:
    """(scorer, None) when COMET is usable, else (None, the one-line reason)."""
    if model.strip().lower() in NO_COMET:
        return None, "disabled (--comet-model none)"
    try:
        return CometScorer(model, batch_size), None
    except SimulError as exc:
        return None, str(exc)

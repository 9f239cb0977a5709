"""What every COMET-family scorer shares: the checkpoint a model name resolves to, the model's class, the
memory its loading needs, and the scores it returns.

*Checkpoint.* A local path (a ``model.ckpt`` or a folder with ``checkpoints/model.ckpt``) or a Hugging Face
name, looked up in the local cache first and downloaded only when it is not there; offline, the reason says
so and what to pass instead.

*Class.* unbabel-comet's ``load_from_checkpoint`` picks the model class from ``hparams.yaml``'s
``class_identifier`` beside the checkpoint folder (``comet/models/__init__.py``, ``str2model``):
``regression_metric`` (wmt22-comet-da), ``xcomet_metric`` (XCOMET-XL, XCOMET-XXL: Guerreiro et al., 2024,
"xCOMET: Transparent Machine Translation Evaluation through Fine-grained Error Detection", TACL), ...
:func:`model_class` reads it the same way, so simul knows before loading whether a model is an XCOMET.

*Memory.* Loading reads the whole checkpoint into memory (Lightning's ``pl_load``, ``torch.load`` without
memory-mapping) and then copies it into a model built from its config, so the peak is about twice the
checkpoint: measured here, a 105 MB XCOMET-shaped checkpoint raised the process's peak resident memory by
212 MB. XCOMET-XL's checkpoint is about 14 GB (3.5 B parameters in fp32), so it needs about 29 GB to load;
:func:`memory_needed` adds 1 GiB for the interpreter, torch and a batch's activations, and
:func:`check_memory` refuses to load a model that the machine (or the process's cgroup) cannot hold,
naming both figures.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from simul.common.errors import SimulError
from simul.machine.memory import GIB, available_memory, gib
from simul.metrics.learned import learned_signature

XCOMET_CLASS = "xcomet_metric"
# the peak of loading, in checkpoints (see the module's docstring), and what else the process needs
LOAD_FACTOR = 2.0
MEMORY_MARGIN = GIB


class ScorerKilled(SimulError):
    """A scorer's process was killed by a signal while loading or scoring (on Linux most often the
    out-of-memory killer's SIGKILL): the run's scoring failed, and `simul score` can finish it."""


@dataclass(frozen=True)
class SegmentDetail:
    """What an XCOMET model says about one segment beyond its score: the error spans it found in the
    hypothesis (each ``text``, character ``start`` and ``end`` in the hypothesis, ``severity`` minor, major
    or critical, ``confidence``), whether the model's input was cut at its token limit, and the token counts
    of hypothesis, source and reference (with the encoder's special tokens)."""

    spans: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False
    tokens: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"spans": list(self.spans), "truncated": self.truncated, "tokens": dict(self.tokens)}


@dataclass(frozen=True)
class CometScores:
    """A COMET-family model's scores of (source, hypothesis, reference) triples: the system score (the mean
    of the segment scores, as unbabel-comet's ``predict`` reports it) and each segment's. ``kind`` is the
    run.json metric they go to: ``comet`` or ``xcomet``; ``details`` (XCOMET only) one per segment."""

    system: float
    segments: list[float]
    model: str
    version: str
    batch_size: int
    kind: str = "comet"
    details: list[SegmentDetail] | None = None
    max_tokens: int | None = None

    @property
    def signature(self) -> str:
        return learned_signature(self.model, self.batch_size, self.version)

    def counts(self) -> dict[str, Any]:
        """XCOMET's: how many segments' input it cut at its token limit, and the limit (simul.metrics
        .learned.SegmentScores)."""
        if self.details is None:
            return {}
        return {
            "xcomet_truncated": sum(1 for d in self.details if d.truncated),
            "xcomet_max_tokens": self.max_tokens,
        }


class CometLike(Protocol):
    """A loaded COMET-family scorer (simul.metrics.comet.CometScorer in this process,
    simul.metrics.xcomet.XcometScorer in a child process)."""

    kind: str
    model: str
    version: str
    batch_size: int
    checkpoint: str
    needs_source: bool

    def score(
        self, sources: Sequence[str], outputs: Sequence[str], references: Sequence[str]
    ) -> CometScores: ...


@contextlib.contextmanager
def quiet() -> Iterator[None]:
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


def comet_version() -> str:
    try:
        return metadata.version("unbabel-comet")
    except metadata.PackageNotFoundError:
        raise SimulError("unbabel-comet is not installed (pip install 'simul[comet]')") from None


def checkpoint_for(model: str) -> Path:
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
        with quiet():
            local = snapshot_download(repo_id=model, local_files_only=True)
    except Exception:
        try:
            with quiet():
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


def model_class(checkpoint: Path) -> str | None:
    """``class_identifier`` of ``hparams.yaml`` two folders above the checkpoint (where unbabel-comet's
    ``load_from_checkpoint`` reads it); None when there is no such file or it does not say."""
    hparams = checkpoint.parent.parent / "hparams.yaml"
    if not hparams.is_file():
        return None
    import yaml

    try:
        data = yaml.safe_load(hparams.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    value = data.get("class_identifier") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def memory_needed(checkpoint: Path) -> int:
    """Bytes that loading ``checkpoint`` and scoring with it needs at its peak: twice the checkpoint (read
    whole, then copied into the model) plus :data:`MEMORY_MARGIN`."""
    return int(LOAD_FACTOR * checkpoint.stat().st_size) + MEMORY_MARGIN


def check_memory(checkpoint: Path, model: str) -> None:
    """Refuse (SimulError) to load a model whose loading needs more memory than this process can take, naming
    what it needs and what there is; nothing to check where the free memory cannot be read."""
    reading = available_memory()
    if reading is None:
        return
    needed = memory_needed(checkpoint)
    if reading.available < needed:
        size = checkpoint.stat().st_size
        raise SimulError(
            f"not enough memory to load {model}: its checkpoint is {gib(size)} and loading it needs about "
            f"{gib(needed)} (the checkpoint is read whole, then copied into the model; plus 1 GiB), but only "
            f"{reading.describe()}; free memory, or score the run later where there is more, with `simul "
            f"score RUN_DIR --comet-model {model} --update`"
        )

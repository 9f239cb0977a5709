"""BLEURT (Sellam et al., 2020, "BLEURT: Learning Robust Metrics for Text Generation", ACL; BLEURT-20: Pu et
al., 2021, "Learning Compact Metrics for MT", EMNLP), which IWSLT 2026 reports beside chrF as an extra result.

Through ``bleurt-pytorch`` (Luca Di Liello's PyTorch port of google-research/bleurt's checkpoints, PyPI
``bleurt-pytorch`` 0.0.1, the ``bleurt`` extra): ``BleurtForSequenceClassification`` scores each (reference,
candidate) pair as its README shows, the tokenizer given the references first and the candidates second,
padded to the longest pair; the segment score is the regression output (``logits``), the system score the
mean of the segment scores (google-research/bleurt's ``score`` reports per-pair scores; their mean is the
usual corpus figure). BLEURT reads no source. A pair longer than the model's positions is cut (``truncation``)
and counted (``bleurt_truncated``).

Only a local checkpoint is loaded (a folder with ``config.json``, the weights and the tokenizer files, e.g. a
download of ``lucadiliello/BLEURT-20``): simul asks no hub for it. The memory check is COMET's
(simul.metrics.comet_model: twice the weights plus 1 GiB).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError
from simul.metrics.comet_model import check_memory, quiet
from simul.metrics.learned import LearnedMetric, Reusable, learned_signature
from simul.metrics.spec import MetricInfo

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


@dataclass(frozen=True)
class BleurtScores:
    system: float
    segments: list[float]
    truncated: list[bool]
    model: str
    version: str
    batch_size: int
    kind: str = "bleurt"
    details: None = None  # no error spans

    @property
    def signature(self) -> str:
        return learned_signature(self.model, self.batch_size, self.version)

    def counts(self) -> dict[str, Any]:
        return {"bleurt_truncated": sum(self.truncated)}


def bleurt_version() -> str:
    """The installed bleurt-pytorch's version, which BLEURT's signature records (SimulError when missing)."""
    try:
        return metadata.version("bleurt-pytorch")
    except metadata.PackageNotFoundError:
        raise SimulError("bleurt-pytorch is not installed (pip install 'simul[bleurt]')") from None


class BleurtScorer:
    """A BLEURT checkpoint loaded in this process (a simul.metrics.learned.SegmentScorer that reads no
    source)."""

    kind = "bleurt"
    needs_source = False

    def __init__(self, path: str, batch_size: int = 16) -> None:
        self.version = bleurt_version()
        folder = Path(path).expanduser()
        if not (folder / "config.json").is_file():
            raise SimulError(
                f"BLEURT checkpoint {path} is not a folder with config.json (give the local folder of a "
                "bleurt-pytorch checkpoint, e.g. a download of lucadiliello/BLEURT-20)"
            )
        weights = next((folder / name for name in WEIGHT_FILES if (folder / name).is_file()), None)
        if weights is None:
            raise SimulError(f"BLEURT checkpoint {path} has none of {', '.join(WEIGHT_FILES)}")
        check_memory(weights, path)
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            with quiet():
                from bleurt_pytorch import BleurtForSequenceClassification, BleurtTokenizer

                self._model: Any = BleurtForSequenceClassification.from_pretrained(
                    str(folder), local_files_only=True
                )
                self._tokenizer: Any = BleurtTokenizer.from_pretrained(str(folder), local_files_only=True)
        except Exception as exc:
            reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            raise SimulError(f"BLEURT could not load {path}: {reason}") from None
        self._model.eval()
        self.model = path
        self.batch_size = batch_size
        self.max_tokens = int(self._model.config.max_position_embeddings)

    def score(
        self, sources: Sequence[str], outputs: Sequence[str], references: Sequence[str]
    ) -> BleurtScores:
        """Scores of (candidate, reference) pairs; ``sources`` is not read (BLEURT has no source input)."""
        import torch

        candidates = outputs
        if len(candidates) != len(references):
            raise ValueError(f"{len(candidates)} candidates for {len(references)} references")

        segments: list[float] = []
        truncated: list[bool] = []
        for start in range(0, len(candidates), self.batch_size):
            refs = list(references[start : start + self.batch_size])
            cands = list(candidates[start : start + self.batch_size])
            with quiet():
                whole = self._tokenizer(refs, cands, truncation=False)["input_ids"]
                truncated += [len(ids) > self.max_tokens for ids in whole]
                inputs = self._tokenizer(
                    refs,
                    cands,
                    padding="longest",
                    truncation=True,
                    max_length=self.max_tokens,
                    return_tensors="pt",
                )
                with torch.no_grad():
                    segments += [float(x) for x in self._model(**inputs).logits.flatten().tolist()]
        system = sum(segments) / len(segments) if segments else 0.0
        return BleurtScores(system, segments, truncated, self.model, self.version, self.batch_size)


def load_bleurt(path: str | None, batch_size: int = 16) -> tuple[BleurtScorer | None, str | None]:
    """(scorer, None), or (None, why not); (None, None) when no BLEURT checkpoint was asked for."""
    if path is None or path.strip().lower() in ("", "none", "off"):
        return None, None
    try:
        return BleurtScorer(path, batch_size), None
    except SimulError as exc:
        return None, str(exc)


BLEURT = LearnedMetric(
    info=MetricInfo(
        "bleurt",
        True,
        "BLEURT",
        "BLEURT system score (mean of segment scores; bleurt-pytorch)",
        fmt=".3f",
        quality=True,
        segment_mean=True,
        learned=True,
    ),
    config_field="bleurt_model",
    option="--bleurt-model",
    help="A local BLEURT checkpoint folder (bleurt-pytorch; e.g. a download of lucadiliello/BLEURT-20) to "
    "score BLEURT too, IWSLT 2026's extra result ('none' to drop it). Default: the run's, if any. Adding "
    "BLEURT keeps the run's COMET and XCOMET.",
    load=load_bleurt,
    reusable=Reusable(version=bleurt_version, needs_source=False, counts=("bleurt_truncated",)),
)

"""The field's own scorers run on simul's exports, for golden tests and the agreement table.

Each function takes what `simul export` wrote and returns the peer's figures, computed by the peer's code:
SimulEval 1.1.4 (``LogInstance`` and its latency and BLEU scorers, as ``simuleval --score-only`` does),
OmniSTEval 0.1.10 (short-form on the SimulEval log; long-form with re-segmentation on the simulstream log,
as ``omnisteval longform --hypothesis_format simulstream`` does) and simulstream 1.0.0
(``NormalizedErasure`` on its ``LogReader``). The peers are optional: callers skip when they are absent.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any


def simuleval_scores(instances_log: Path, unit: str, bleu_tokenizer: str) -> dict[str, float]:
    """SimulEval's LAAL, AL, DAL (computation-unaware and -aware) and BLEU on an instances.log."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from simuleval.evaluator.instance import LogInstance
        from simuleval.evaluator.scorers.latency_scorer import ALScorer, DALScorer, LAALScorer
        from simuleval.evaluator.scorers.quality_scorer import SacreBLEUScorer

    logging.getLogger("simuleval").setLevel(logging.ERROR)
    lines = [line for line in instances_log.read_text(encoding="utf-8").splitlines() if line.strip()]
    instances: dict[int, Any] = {}
    for line in lines:
        ins = LogInstance(line, unit)
        instances[ins.index] = ins
    out: dict[str, float] = {"bleu": float(SacreBLEUScorer(bleu_tokenizer)(instances))}
    for name, scorer in (("latency", LAALScorer), ("al", ALScorer), ("dal", DALScorer)):
        out[name] = float(scorer()(instances))
        out[f"{name}_ca"] = float(scorer(computation_aware=True)(instances))
    return out


def omnisteval_shortform(instances_log: Path, unit: str) -> dict[str, float]:
    """OmniSTEval's short-form scores (YAAL, LAAL, AL, DAL) on a SimulEval instances.log."""
    from omnisteval.io import load_shortform_instances
    from omnisteval.scoring import evaluate_instances

    logging.getLogger("omnisteval").setLevel(logging.ERROR)
    instances = load_shortform_instances(
        str(instances_log), None, "delays", "elapsed", char_level=unit == "char"
    )
    scores, _, _ = evaluate_instances(instances, compute_quality=False, is_longform=False)
    return {k: float(v) for k, v in scores.items()}


def omnisteval_longform(folder: Path, unit: str, bleu_tokenizer: str) -> dict[str, float]:
    """OmniSTEval long-form on `simul export --format simulstream` output (re-segmentation included)."""
    from omnisteval.io import load_resegmentation_inputs
    from omnisteval.resegment import resegment
    from omnisteval.scoring import evaluate_instances

    logging.getLogger("omnisteval").setLevel(logging.ERROR)
    char = unit == "char"
    ref_words, hyp_words, segmentation, refs = load_resegmentation_inputs(
        str(folder / "segmentation.yaml"),
        None,
        str(folder / "references.txt"),
        str(folder / "log.jsonl"),
        hypothesis_format="simulstream",
        char_level=char,
        simulstream_config_file=str(folder / "eval.yaml"),
    )
    instances, _ = resegment(ref_words, hyp_words, segmentation, refs, char_level=char, lang=None)
    scores, _, _ = evaluate_instances(instances, is_longform=True, bleu_tokenizer=bleu_tokenizer)
    return {k: float(v) for k, v in scores.items()}


def simulstream_normalized_erasure(folder: Path, unit: str) -> float:
    """simulstream's NormalizedErasure on the exported log."""
    from simulstream.config import yaml_config
    from simulstream.metrics.readers import LogReader
    from simulstream.metrics.stats import NormalizedErasure

    config = yaml_config(str(folder / "eval.yaml"))
    reader = LogReader(config, str(folder / "log.jsonl"), latency_unit=unit)
    return float(NormalizedErasure().compute(reader))

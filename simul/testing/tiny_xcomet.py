"""A tiny, randomly initialised XCOMET checkpoint, built offline for tests and for the docs' worked example.

The real XCOMET models (``Unbabel/XCOMET-XL``: XLM-RoBERTa-XL, 3.5 B parameters, 14 GB in fp32;
``Unbabel/XCOMET-XXL``: 10.7 B) live on the Hugging Face hub, which tests cannot reach. This builds a model of
unbabel-comet's own ``XCOMETMetric`` class (``class_identifier: xcomet_metric``, encoder ``XLM-RoBERTa-XL``)
with a 2-layer encoder of hidden size 32, so that simul's XCOMET path (simul.metrics.xcomet: the child
process, ``comet.load_from_checkpoint``, ``predict`` with its three inputs [mt:src], [mt:ref], [mt:src:ref],
the MQM score from the error spans, the spans themselves and the 512-token limit) runs for real in about a
second per call::

    DIRECTORY/
      encoder/                  XLMRobertaXLConfig (2 layers, hidden size 32, 514 positions: 512 usable,
                                as XLM-RoBERTa-XL) + the fast tokenizer of simul.testing.tiny_comet
      hparams.yaml              class_identifier: xcomet_metric, pretrained_model: DIRECTORY/encoder
      checkpoints/model.ckpt    Lightning-style checkpoint with random weights (torch.manual_seed(seed))

The word-level head (``hidden2tag``: O, I-minor, I-major, I-critical) is random too, its weights scaled by
:data:`TAG_WEIGHT_SCALE` and the bias of O set to :data:`TAG_O_BIAS`, so that most tokens are tagged O and
some form error spans (major and critical ones, with seed 0):
the spans and scores mean nothing; they are finite, deterministic for a given seed, and differ between
inputs. ``hparams.yaml`` records the absolute path of ``encoder/``, so the directory must not be moved.

Usage: ``python -m simul.testing.tiny_xcomet OUTDIR [SEED]`` builds into OUTDIR and prints the checkpoint
path.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from simul.testing.tiny_comet import (
    HIDDEN_SIZE,
    INITIALIZER_RANGE,
    INTERMEDIATE_SIZE,
    MAX_POSITIONS,
    NUM_HEADS,
    NUM_LAYERS,
    quiet_build,
    write_tiny_model,
)

ESTIMATOR_HIDDEN_SIZES = [16, 8]
# The random word-level head, made to tag: its weights scaled up, so that the tag varies from token to token
# (a random 2-layer encoder gives most tokens similar states), and the bias of O set so most tokens are O.
# With seed 0 and the default head, every token is O (no span at all) or every one an error (a span running
# to the end, which unbabel-comet's decoder drops); these values give short spans on ordinary sentences.
TAG_WEIGHT_SCALE = 3.0
TAG_O_BIAS = 1.0


def _save_encoder_config(encoder_dir: Path, vocab_size: int) -> None:
    from transformers import XLMRobertaXLConfig

    config = XLMRobertaXLConfig(  # type: ignore[no-untyped-call]
        vocab_size=vocab_size,
        hidden_size=HIDDEN_SIZE,
        num_hidden_layers=NUM_LAYERS,
        num_attention_heads=NUM_HEADS,
        intermediate_size=INTERMEDIATE_SIZE,
        max_position_embeddings=MAX_POSITIONS,
        type_vocab_size=1,
        initializer_range=INITIALIZER_RANGE,
        bos_token_id=0,
        pad_token_id=1,
        eos_token_id=2,
    )
    config.save_pretrained(str(encoder_dir))


def hyper_parameters(encoder_dir: Path) -> dict[str, Any]:
    """XCOMETMetric's constructor arguments, as XCOMET-XL's hparams.yaml holds them but for the sizes (the
    hidden sizes of the estimator, the word layer of a 2-layer encoder) and the encoder's path."""
    return {
        "activations": "Tanh",
        "batch_size": 4,
        "class_identifier": "xcomet_metric",
        "cross_entropy_weights": [0.08, 0.486, 0.505, 0.533],
        "dropout": 0.1,
        "encoder_learning_rate": 3.0e-06,
        "encoder_model": "XLM-RoBERTa-XL",
        "error_labels": ["minor", "major", "critical"],
        "final_activation": None,
        "hidden_sizes": list(ESTIMATOR_HIDDEN_SIZES),
        "keep_embeddings_frozen": True,
        "layer_norm": False,
        "layer_transformation": "sparsemax",
        "layerwise_decay": 0.983,
        "learning_rate": 3.66e-06,
        "loss": "mse",
        "loss_lambda": 0.055,
        "nr_frozen_epochs": 0.3,
        "optimizer": "AdamW",
        "pretrained_model": str(encoder_dir),
        "sent_layer": "mix",
        "train_data": [],
        "validation_data": [],
        "warmup_steps": 0,
        "word_layer": NUM_LAYERS,
        "word_level_training": True,
    }


def build_tiny_xcomet(directory: Path, seed: int = 0) -> Path:
    """Build the tiny XCOMET model in ``directory`` (created if needed); returns ``checkpoints/model.ckpt``.

    Offline: the encoder is created from its config, not downloaded. The weights come from
    ``torch.manual_seed(seed)`` inside ``torch.random.fork_rng`` (the caller's random state is untouched)."""
    with quiet_build():
        return _build(Path(directory), seed)


def _xcomet_metric(arguments: dict[str, Any]) -> Any:
    """An XCOMETMetric whose word-level head tags short error spans (see :data:`TAG_WEIGHT_SCALE`)."""
    import torch
    from comet.models import XCOMETMetric

    model = XCOMETMetric(**arguments, load_pretrained_weights=False, local_files_only=True)
    with torch.no_grad():
        model.hidden2tag.weight.mul_(TAG_WEIGHT_SCALE)
        model.hidden2tag.bias[0] = TAG_O_BIAS
    return model


def _build(directory: Path, seed: int) -> Path:
    return write_tiny_model(directory, seed, _save_encoder_config, hyper_parameters, _xcomet_metric)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2) or args[0] in ("-h", "--help"):
        print("usage: python -m simul.testing.tiny_xcomet OUTDIR [SEED]", file=sys.stderr)
        return 2
    seed = int(args[1]) if len(args) == 2 else 0
    print(build_tiny_xcomet(Path(args[0]), seed=seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A tiny, randomly initialised COMET regression checkpoint, built offline for tests.

The real COMET models (e.g. ``Unbabel/wmt22-comet-da``) are gigabytes and live on the Hugging Face hub.
Tests of the COMET code path need something that goes through the *real* ``comet.load_from_checkpoint``
and ``model.predict`` without a network, in well under a second per call. ``build_tiny_comet`` writes::

    DIRECTORY/
      encoder/                  2-layer XLM-RoBERTa config (hidden size 32) + fast tokenizer
      hparams.yaml              class_identifier: regression_metric, pretrained_model: DIRECTORY/encoder
      checkpoints/model.ckpt    Lightning-style checkpoint with random weights (torch.manual_seed(seed))

The tokenizer is a Unigram model over a fixed vocabulary of about 1,600 pieces (ASCII, German and
other Latin letters, kana, common CJK characters and CJK punctuation, a few frequent words); any other
character becomes ``<unk>``. The scores mean nothing; they are finite, deterministic for a given seed,
and differ between inputs.

``hparams.yaml`` records the absolute path of ``encoder/``, so the directory must not be moved after it
is built. torch, transformers, tokenizers and comet are imported only inside ``build_tiny_comet``.

Usage: ``python -m simul.testing.tiny_comet OUTDIR`` builds into OUTDIR and prints the checkpoint path.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HIDDEN_SIZE = 32
NUM_LAYERS = 2
NUM_HEADS = 2
INTERMEDIATE_SIZE = 64
MAX_POSITIONS = 514  # XLM-R convention: 512 usable positions + padding offset of 2
ESTIMATOR_HIDDEN_SIZES = [16, 8]
# Larger than the usual 0.02 so that the random encoder's outputs actually depend on the input.
INITIALIZER_RANGE = 0.5

# XLM-RoBERTa's special tokens, with its ids for the first four.
SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
UNK_ID = 3
WORD_BOUNDARY = "\u2581"  # "▁", SentencePiece's word-boundary marker

_LATIN_EXTRA = "äöüÄÖÜßéèêëàâçîïôûùœæÉÈÀÇñÑáíóúÁÍÓÚ€£°–—…‘’“”„«»"
_CJK_PUNCTUATION = "。、，！？：；「」『』（）【】《》〈〉・ー～"
_HIRAGANA = "".join(chr(c) for c in range(0x3041, 0x3097))
_KATAKANA = "".join(chr(c) for c in range(0x30A1, 0x30FB))
_CJK_COMMON = (
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后"
    "小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长"
    "知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最"
    "间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市"
    "眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计"
    "或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让"
    "认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办"
    "运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持"
    "私駅語話読書買食飲行来見聞時間今日本人学生先天気雨雪朝昼夜週曜電車会社"
)
# Frequent English and German words, as whole pieces (space-separated).
_WORDS = (
    "the and of to in is that it for on with as this was are "
    "der die das und ist nicht ein eine zu den mit von sich auf ich es sie wir ja nein heute morgen gut sehr"
)


def _pieces() -> list[tuple[str, float]]:
    """The Unigram vocabulary: (piece, log-probability), special tokens first."""
    chars = [chr(c) for c in range(0x21, 0x7F)] + list(
        _LATIN_EXTRA + _CJK_PUNCTUATION + _HIRAGANA + _KATAKANA + _CJK_COMMON
    )
    pieces: dict[str, float] = {token: 0.0 for token in SPECIAL_TOKENS}
    pieces.setdefault(WORD_BOUNDARY, -2.0)
    for char in chars:
        pieces.setdefault(char, -8.0)
    for char in chars:
        pieces.setdefault(WORD_BOUNDARY + char, -9.0)
    for word in _WORDS.split():
        # Whole words beat spelling them out piece by piece.
        pieces.setdefault(WORD_BOUNDARY + word, -6.0)
    return list(pieces.items())


def save_tokenizer(encoder_dir: Path) -> int:
    """Write a fast XLM-R tokenizer into ``encoder_dir``; returns the vocabulary size."""
    from tokenizers import (  # type: ignore[import-untyped]
        Tokenizer,
        decoders,
        normalizers,
        pre_tokenizers,
        processors,
    )
    from tokenizers.models import Unigram  # type: ignore[import-untyped]
    from transformers import XLMRobertaTokenizerFast

    vocab = _pieces()
    tokenizer = Tokenizer(Unigram(vocab, unk_id=UNK_ID, byte_fallback=False))
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement=WORD_BOUNDARY, prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement=WORD_BOUNDARY, prepend_scheme="always")
    ids = {token: index for index, (token, _) in enumerate(vocab)}
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", ids["<s>"]), ("</s>", ids["</s>"])],
    )
    tokenizer.add_special_tokens(SPECIAL_TOKENS)
    fast = XLMRobertaTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tokenizer, model_max_length=MAX_POSITIONS - 2
    )
    fast.save_pretrained(str(encoder_dir))
    return len(vocab)


def _save_encoder_config(encoder_dir: Path, vocab_size: int) -> None:
    from transformers import XLMRobertaConfig

    config = XLMRobertaConfig(  # type: ignore[no-untyped-call]
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


def _hyper_parameters(encoder_dir: Path) -> dict[str, Any]:
    """RegressionMetric's constructor arguments (what COMET's own hparams.yaml files hold)."""
    return {
        "activations": "Tanh",
        "batch_size": 4,
        "class_identifier": "regression_metric",
        "dropout": 0.1,
        "encoder_learning_rate": 1.0e-06,
        "encoder_model": "XLM-RoBERTa",
        "final_activation": None,
        "hidden_sizes": list(ESTIMATOR_HIDDEN_SIZES),
        "keep_embeddings_frozen": True,
        "layer": "mix",
        "layer_norm": False,
        "layer_transformation": "softmax",
        "layerwise_decay": 0.95,
        "learning_rate": 1.5e-05,
        "loss": "mse",
        "nr_frozen_epochs": 0.3,
        "optimizer": "AdamW",
        "pool": "avg",
        "pretrained_model": str(encoder_dir),
        "train_data": [],
        "validation_data": [],
        "warmup_steps": 0,
    }


@contextlib.contextmanager
def quiet_build() -> Iterator[None]:
    """Hide import-time deprecation warnings (pkg_resources via torchmetrics) and COMET's INFO logging."""
    comet_logger = logging.getLogger("comet")
    level = comet_logger.level
    comet_logger.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.filterwarnings("ignore", message=".*pkg_resources.*")
            yield
    finally:
        comet_logger.setLevel(level)


def build_tiny_comet(directory: Path, seed: int = 0) -> Path:
    """Build the tiny COMET model in ``directory`` (created if needed); returns ``checkpoints/model.ckpt``.

    Offline: the encoder is created from its config, not downloaded. The weights come from
    ``torch.manual_seed(seed)`` (inside ``torch.random.fork_rng``, so the caller's random state is
    untouched); the same seed gives the same scores.
    """
    with quiet_build():
        return _build(Path(directory), seed)


def _regression_metric(arguments: dict[str, Any]) -> Any:
    from comet.models import RegressionMetric

    return RegressionMetric(**arguments, load_pretrained_weights=False, local_files_only=True)


def _build(directory: Path, seed: int) -> Path:
    return write_tiny_model(directory, seed, _save_encoder_config, _hyper_parameters, _regression_metric)


def write_tiny_model(
    directory: Path,
    seed: int,
    save_encoder_config: Callable[[Path, int], None],
    hyper_parameters: Callable[[Path], dict[str, Any]],
    new_model: Callable[[dict[str, Any]], Any],
) -> Path:
    """Write a tiny COMET-family model into ``directory``; returns its ``checkpoints/model.ckpt``.

    The layout both tiny models share: ``encoder/`` (the tokenizer of :func:`save_tokenizer` and the
    config ``save_encoder_config`` writes), ``hparams.yaml`` (``hyper_parameters``) and a Lightning-style
    checkpoint of the model ``new_model`` makes from the constructor arguments (the hyper-parameters less
    ``class_identifier``). ``new_model`` runs under ``torch.manual_seed(seed)`` inside
    ``torch.random.fork_rng``, so the weights depend on the seed alone and the caller's random state is
    untouched.
    """
    from importlib import metadata

    import comet.models  # noqa: F401  (imported before the seed is set, so importing draws nothing from it)
    import torch
    import yaml

    directory = directory.expanduser().resolve()
    encoder_dir = directory / "encoder"
    checkpoint_dir = directory / "checkpoints"
    encoder_dir.mkdir(parents=True, exist_ok=True)
    checkpoint_dir.mkdir(parents=True, exist_ok=True)

    vocab_size = save_tokenizer(encoder_dir)
    save_encoder_config(encoder_dir, vocab_size)

    hparams = hyper_parameters(encoder_dir)
    (directory / "hparams.yaml").write_text(yaml.safe_dump(hparams, sort_keys=True), encoding="utf-8")

    constructor_args = {k: v for k, v in hparams.items() if k != "class_identifier"}
    with torch.random.fork_rng(devices=[]):  # leave the caller's random state alone
        torch.manual_seed(seed)
        model = new_model(constructor_args)
    state_dict = {name: tensor.detach().clone().contiguous() for name, tensor in model.state_dict().items()}

    checkpoint_path = checkpoint_dir / "model.ckpt"
    torch.save(
        {
            "epoch": 0,
            "global_step": 0,
            "pytorch-lightning_version": metadata.version("pytorch-lightning"),
            "state_dict": state_dict,
            "hyper_parameters": hparams,
        },
        checkpoint_path,
    )
    return checkpoint_path


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2) or args[0] in ("-h", "--help"):
        print("usage: python -m simul.testing.tiny_comet OUTDIR [SEED]", file=sys.stderr)
        return 2
    seed = int(args[1]) if len(args) == 2 else 0
    print(build_tiny_comet(Path(args[0]), seed=seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

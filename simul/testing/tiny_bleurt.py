"""A tiny, randomly initialised BLEURT checkpoint (bleurt-pytorch's format), built offline for tests.

The real checkpoints (``lucadiliello/BLEURT-20``: RemBERT, 579 M parameters; the distilled ``BLEURT-20-D12``
...) live on the Hugging Face hub. This writes, with bleurt-pytorch's own classes, a folder that
``BleurtForSequenceClassification.from_pretrained`` and ``BleurtTokenizer.from_pretrained`` load as they load
those (simul.metrics.bleurt)::

    DIRECTORY/
      config.json          BleurtConfig: 2 layers, hidden size 32, 128 positions
      model.safetensors    random weights (torch.manual_seed(seed))
      vocab.txt, tokenizer.json, ...   a WordPiece tokenizer over letters, digits and a few words (BERT's)

The scores mean nothing; they are finite, deterministic for a given seed, and differ between inputs. With 128
positions a pair of about 60 words each is cut, so the truncation count can be tested.

Usage: ``python -m simul.testing.tiny_bleurt OUTDIR [SEED]`` builds into OUTDIR and prints it.
"""

from __future__ import annotations

import sys
from pathlib import Path

HIDDEN_SIZE = 32
NUM_LAYERS = 2
NUM_HEADS = 2
INTERMEDIATE_SIZE = 64
MAX_POSITIONS = 128
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_CHARS = "abcdefghijklmnopqrstuvwxyzäöüß0123456789.,;:!?'\"-()"
_WORDS = "the and of to in is that it der die das und ist nicht ein eine zu den mit von sich auf wir haben"


def vocabulary() -> list[str]:
    words = _WORDS.split()
    return SPECIAL + list(_CHARS) + ["##" + c for c in _CHARS] + words


def build_tiny_bleurt(directory: Path, seed: int = 0) -> Path:
    """Build the tiny BLEURT checkpoint in ``directory`` (created if needed); returns the folder."""
    import torch
    from bleurt_pytorch import BleurtConfig, BleurtForSequenceClassification
    from transformers import BertTokenizerFast

    folder = Path(directory).expanduser().resolve()
    folder.mkdir(parents=True, exist_ok=True)
    vocab = vocabulary()
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    config = BleurtConfig(
        vocab_size=len(vocab),
        hidden_size=HIDDEN_SIZE,
        num_hidden_layers=NUM_LAYERS,
        num_attention_heads=NUM_HEADS,
        intermediate_size=INTERMEDIATE_SIZE,
        max_position_embeddings=MAX_POSITIONS,
        initializer_range=0.5,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BleurtForSequenceClassification(config)
    model.save_pretrained(str(folder))
    tokenizer = BertTokenizerFast(  # type: ignore[no-untyped-call]
        vocab_file=str(folder / "vocab.txt"), do_lower_case=True
    )
    tokenizer.save_pretrained(str(folder))
    return folder


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2) or args[0] in ("-h", "--help"):
        print("usage: python -m simul.testing.tiny_bleurt OUTDIR [SEED]", file=sys.stderr)
        return 2
    print(build_tiny_bleurt(Path(args[0]), seed=int(args[1]) if len(args) == 2 else 0))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

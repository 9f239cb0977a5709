"""Tokenizers for erasure and latency, from sacrebleu.

The SSBD paper computes NE on outputs tokenized by sacrebleu's Flores-101 SentencePiece model. That model is
downloaded by sacrebleu on first use, so it is used only when its file is already present locally
(``$SACREBLEU/models/sacrebleu_tokenizer_spm.model``); otherwise the target language's own sacrebleu
tokenizer is used (zh, ja-mecab, 13a). The name of the tokenizer used is recorded with every figure.

Two units need no tokenizer model: ``word`` (whitespace-separated words, ``text.split()``: the unit of
simulstream's ``NormalizedErasure`` with ``--latency-unit word``) and ``char`` (characters without spaces,
sacrebleu's character tokenizer).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from simul.common.errors import SimulError, UsageError
from simul.common.languages import get_language

Tokenize = Callable[[str], list[str]]

NE_TOKENIZER_CHOICES = ("auto", "flores101", "13a", "intl", "zh", "ja-mecab", "word", "char")


def flores101_model_path() -> Path:
    root = os.environ.get("SACREBLEU", os.path.join(os.path.expanduser("~"), ".sacrebleu"))
    return Path(root) / "models" / "sacrebleu_tokenizer_spm.model"


def _flores101_available() -> bool:
    if not flores101_model_path().exists():
        return False
    try:
        import sentencepiece  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_ne_tokenizer(choice: str, tgt: str) -> str:
    """The NE tokenizer name for a target language: ``auto`` picks flores101 when present locally."""
    if choice not in NE_TOKENIZER_CHOICES:
        raise UsageError(f"unknown NE tokenizer {choice!r}; choose one of {', '.join(NE_TOKENIZER_CHOICES)}")
    if choice == "auto":
        return "flores101" if _flores101_available() else get_language(tgt).bleu_tokenizer
    if choice == "flores101" and not _flores101_available():
        raise SimulError(
            f"the flores101 tokenizer model is not at {flores101_model_path()} (sacrebleu downloads it on "
            "first "
            "use, which needs the internet); copy it there or use --ne-tokenizer auto"
        )
    return choice


def _sacrebleu_tokenizer(name: str) -> Callable[[str], str]:
    if name == "flores101":
        from sacrebleu.tokenizers.tokenizer_spm import Flores101Tokenizer

        return Flores101Tokenizer()  # type: ignore[no-untyped-call]
    if name == "13a":
        from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

        return Tokenizer13a()  # type: ignore[no-untyped-call]
    if name == "intl":
        from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International

        return TokenizerV14International()  # type: ignore[no-untyped-call]
    if name == "zh":
        from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

        return TokenizerZh()  # type: ignore[no-untyped-call]
    if name == "ja-mecab":
        try:
            from sacrebleu.tokenizers.tokenizer_ja_mecab import TokenizerJaMecab

            return TokenizerJaMecab()  # type: ignore[no-untyped-call]
        except (ImportError, RuntimeError) as exc:
            raise SimulError(
                f"the ja-mecab tokenizer is not usable ({exc}); install it with `pip install 'sacrebleu[ja]'`"
            ) from None
    if name == "char":
        from sacrebleu.tokenizers.tokenizer_char import TokenizerChar

        return TokenizerChar()  # type: ignore[no-untyped-call]
    raise SimulError(f"unknown tokenizer {name!r}; choose one of {', '.join(NE_TOKENIZER_CHOICES[1:])}")


def _words(text: str) -> list[str]:
    return text.split()


@lru_cache(maxsize=16)
def get_tokenizer(name: str) -> Tokenize:
    """A function from text to a list of tokens, for a sacrebleu tokenizer name or ``word``."""
    if name == "word":
        return _words
    sacre = _sacrebleu_tokenizer(name)

    def tokenize(text: str) -> list[str]:
        return sacre(text).split() if text else []

    return tokenize

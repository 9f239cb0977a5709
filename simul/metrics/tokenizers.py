"""Tokenizers for erasure and latency, from sacrebleu.

``--ne-tokenizer auto`` is the target language's own sacrebleu tokenizer (zh, ja-mecab, 13a), the same on
every machine: a figure must not change with what a cache happens to hold. The SSBD paper
computes NE on outputs tokenized by sacrebleu's Flores-101 SentencePiece model; ``flores101`` uses it, only
when asked for. sacrebleu downloads that model on first use, so simul never lets it: the file must already
be at ``$SACREBLEU/models/sacrebleu_tokenizer_spm.model``, and it is loaded (from that path, with
sentencepiece, as sacrebleu's ``TokenizerSPM`` does) when the tokenizer is resolved, before any stream is
decoded, so that a missing or damaged file is reported before the work, not after it. The name of the
tokenizer used is recorded with every figure.

Two units need no tokenizer model: ``word`` (whitespace-separated words, ``text.split()``: the unit of
simulstream's ``NormalizedErasure`` with ``--latency-unit word``) and ``char`` (characters without spaces,
sacrebleu's character tokenizer).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, get_args

from simul.common.errors import SimulError, UsageError
from simul.common.hashing import sha256_file
from simul.common.languages import get_language

Tokenize = Callable[[str], list[str]]

NeTokenizer = Literal["auto", "flores101", "13a", "intl", "zh", "ja-mecab", "word", "char"]
NE_TOKENIZER_CHOICES: tuple[NeTokenizer, ...] = get_args(NeTokenizer)
FLORES101_URL = "https://dl.fbaipublicfiles.com/fairseq/models/flores/sacrebleu_tokenizer_spm.model"
AUTO_RULE = "the target language's sacrebleu tokenizer (zh, ja-mecab, else 13a)"


def flores101_model_path() -> Path:
    """Where sacrebleu keeps the Flores-101 SentencePiece model (``$SACREBLEU``, default ``~/.sacrebleu``)."""
    root = os.environ.get("SACREBLEU", os.path.join(os.path.expanduser("~"), ".sacrebleu"))
    return Path(root) / "models" / "sacrebleu_tokenizer_spm.model"


def auto_ne_tokenizer(tgt: str) -> str:
    """What ``auto`` means for a target language: its sacrebleu tokenizer, whatever is cached."""
    return get_language(tgt).bleu_tokenizer


def resolve_ne_tokenizer(choice: str, tgt: str) -> str:
    """The NE tokenizer name for a target language (``auto``: :func:`auto_ne_tokenizer`), checked usable now:
    its model file or library is loaded, so that a missing or damaged one fails before decoding."""
    if choice not in NE_TOKENIZER_CHOICES:
        raise UsageError(f"unknown NE tokenizer {choice!r}; choose one of {', '.join(NE_TOKENIZER_CHOICES)}")
    name = auto_ne_tokenizer(tgt) if choice == "auto" else choice
    get_tokenizer(name)
    return name


def ne_tokenizer_record(choice: str, used: str) -> dict[str, Any]:
    """What run.json's ``config.resolved.ne_tokenizer`` says: the option as given, the tokenizer used, and
    the rule that chose it; for flores101 also the model file's SHA-256 and piece count, since a file cut
    at a piece boundary still loads (as another, smaller model) and nothing else would tell."""
    rule = AUTO_RULE if choice == "auto" else "as given"
    record: dict[str, Any] = {"given": choice, "used": used, "rule": rule}
    if used == "flores101":
        path = flores101_model_path()
        record["model_sha256"] = sha256_file(path)
        record["model_pieces"] = _flores101(path).pieces
    return record


class _SentencePiece:
    """sacrebleu's ``TokenizerSPM`` on a model file at a given path: pieces joined by spaces. (sacrebleu's
    own class reads ``$SACREBLEU`` once, when sacrebleu is imported, and downloads a missing file.)"""

    def __init__(self, path: Path) -> None:
        advice = (
            f"copy the Flores-101 SentencePiece model there (sacrebleu downloads it from {FLORES101_URL}), "
            "or use --ne-tokenizer auto (the target language's tokenizer)"
        )
        if not path.is_file():
            raise SimulError(f"the flores101 tokenizer model is not at {path}: {advice}")
        try:
            import sentencepiece
        except ImportError:
            raise SimulError(
                "the flores101 tokenizer needs sentencepiece (`pip install sentencepiece`), "
                "or use --ne-tokenizer auto"
            ) from None
        self._sp = sentencepiece.SentencePieceProcessor()
        try:
            self._sp.Load(str(path))
        except (RuntimeError, OSError) as exc:
            reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            raise SimulError(
                f"the flores101 tokenizer model {path} cannot be loaded ({reason}): the file is damaged "
                f"or is not a SentencePiece model; delete it and {advice}"
            ) from None

    @property
    def pieces(self) -> int:
        return int(self._sp.GetPieceSize())

    def __call__(self, text: str) -> str:
        return " ".join(self._sp.EncodeAsPieces(text))


@lru_cache(maxsize=4)
def _flores101(path: Path) -> _SentencePiece:
    return _SentencePiece(path)


def _sacrebleu_tokenizer(name: str) -> Callable[[str], str]:
    if name == "flores101":
        return _flores101(flores101_model_path())
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


def get_tokenizer(name: str) -> Tokenize:
    """A function from text to a list of tokens, for a sacrebleu tokenizer name or ``word``; a SimulError
    saying what to do when it cannot be loaded. flores101 is loaded from the path ``$SACREBLEU`` names now."""
    if name == "flores101":
        return _split(_flores101(flores101_model_path()))
    return _named_tokenizer(name)


@lru_cache(maxsize=16)
def _named_tokenizer(name: str) -> Tokenize:
    if name == "word":
        return _words
    return _split(_sacrebleu_tokenizer(name))


def _split(sacre: Callable[[str], str]) -> Tokenize:
    def tokenize(text: str) -> list[str]:
        return sacre(text).split() if text else []

    return tokenize

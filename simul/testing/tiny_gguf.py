"""Build a tiny ``llama``-architecture GGUF model for fast decoding tests and the CI regression check.

Tests of the decoding machinery (re-translation, SSBD, KV-cache truncation, stopping rules) do not need a real
translation model, only *some* model that llama.cpp loads quickly and that produces deterministic, varied
output. This module writes such a model (under 1 MB) in milliseconds:

* a SentencePiece-style ("llama") tokenizer with ``<unk>``/``<s>``/``</s>``, the 256 byte-fallback
  tokens ``<0x00>``..``<0xFF>`` and a few hundred English/German pieces, so that any UTF-8 text
  tokenizes (via byte fallback) and detokenizes back exactly, and prompts such as
  ``"English: The cat sat.\\nGerman:"`` tokenize compactly;
* float32 weights of one of two designs. ``codes`` (the default; simul.testing.code_machine) decides every
  next token from two token codes with a logit margin of more than one logit, so that its outputs are the
  same on every CPU family, thread count and batch size (llama.cpp's kernels differ by about 1e-3 there);
  outputs end with EOS after sentence-final pieces or at a newline, and change from step to step.
  ``random`` draws the weights from a seeded :func:`numpy.random.default_rng`, scaled so that greedy
  decoding wanders over the vocabulary (the design before ``codes``; its near-ties flip with the machine).
  The output is gibberish, but the same seed always gives a byte-identical file.

Usage from the command line::

    python -m simul.testing.tiny_gguf OUT.gguf [--seed N] [--design codes|random]
"""

from __future__ import annotations

import argparse
import pathlib
from collections.abc import Iterable, Sequence

import gguf
import numpy as np
import numpy.typing as npt

from simul.decoding.drafts import is_ending_piece
from simul.testing.code_machine import CodeMachine
from simul.testing.code_machine import draw as draw_machine
from simul.testing.code_machine import weights as machine_weights

__all__ = [
    "DESIGNS",
    "MODEL_NAME",
    "VOCABULARIES",
    "build_tiny_gguf",
    "code_machine",
    "main",
    "tiny_vocab",
    "write_with_tokenizer",
]

MODEL_NAME = "simul-tiny-test"

UNK_ID = 0
BOS_ID = 1
EOS_ID = 2
NEWLINE_BYTE = 0x0A

# Relative norms of unembedding rows (see _output_matrix); 1.0 for ordinary pieces.
_EOS_ROW_SCALE = 1.2
_NEWLINE_ROW_SCALE = 1.4
_BYTE_ROW_SCALE = 0.6
_UNK_BOS_ROW_SCALE = 0.3

_SPACE = "\u2581"  # SentencePiece's visible space marker "▁"


def _words(text: str) -> list[str]:
    return text.split()


# Words that become pieces "▁word" (and, for _BARE_WORDS, also "word" without the space marker,
# as they appear at the very beginning of a prompt or after a newline).
_ENGLISH_WORDS = _words("""
the a an is are was be of and or to in on at by for with from as it this that he she we they you i my
your his her not no yes but if so do did have has had will can what who where when how there here all
some one two three new old good big small day time year people man woman child house car dog cat sat
mat sun water city world work book today very also just only now up out over after before said
go went come see make take know think like want get give hello thank text translate translation
language word
""")

_GERMAN_WORDS = _words("""
der die das den dem des und ist sind war ein eine einen einem einer nicht mit von zu im auf für an
sich es er sie wir ich du auch aber oder wenn dass wie was noch nur sehr hat haben wird kann bei aus
nach über Katze Hund Haus Mann Frau Kind Tag Jahr Zeit Welt Stadt Buch heute gut groß klein neu alt saß
Matte Satz hallo danke bitte ja nein
""")

_BARE_WORDS = _words("""
The A It This He She We They I In What Hello Der Die Das Ein Eine Es Ich Wir Sie Hallo
English German Chinese Japanese French
""")

# The words of the few-shot template (simul.request.templates) that the tiny vocabulary has as pieces.
_TEMPLATE_WORDS = frozenset(["English", "German", "Chinese", "Japanese", "French", ":", "\n"])

_LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [chr(c) for c in range(ord("A"), ord("Z") + 1)]
_EXTRA_LETTERS = ["ä", "ö", "ü", "ß", "Ä", "Ö", "Ü", "é", "è", "à"]
_DIGITS = [str(d) for d in range(10)]
_PUNCTUATION = [*".,:;!?'\"()[]-–—…/&%$+=*@#„“”«»", "...", ".."]
# Punctuation that commonly follows a space, so "▁(" etc. are pieces too.
_SPACED_PUNCTUATION = ["(", '"', "'", "-", "–", "—", "„", "«", "&", "+", "=", "/", "..."]


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _ordinary_pieces() -> list[str]:
    """The non-special, non-byte pieces, prefix-closed so SentencePiece merges can reach every word."""
    words: list[str] = []
    for word in _ENGLISH_WORDS + _GERMAN_WORDS + _BARE_WORDS:
        words.append(_SPACE + word)
    words.extend(_BARE_WORDS)

    pieces: list[str] = [_SPACE]
    for ch in _LETTERS + _EXTRA_LETTERS + _DIGITS:
        pieces.append(ch)
        pieces.append(_SPACE + ch)
    pieces.extend(_PUNCTUATION)
    pieces.extend(_SPACE + p for p in _SPACED_PUNCTUATION)
    # llama.cpp's SentencePiece tokenizer only merges two adjacent symbols when their concatenation
    # is itself a piece, so every prefix of a word must be in the vocabulary for the word to form.
    for word in words:
        pieces.extend(word[:end] for end in range(2, len(word) + 1))
        pieces.extend(word)  # every single character on its own, so no byte fallback inside words
    return [p for p in _dedupe(pieces) if p]


def tiny_vocab() -> tuple[list[str], list[float], list[int]]:
    """Return ``(tokens, scores, token_types)`` of the tiny SentencePiece-style vocabulary.

    Ids 0, 1 and 2 are ``<unk>``, ``<s>`` (BOS) and ``</s>`` (EOS); ids 3..258 are the byte-fallback
    tokens ``<0x00>``..``<0xFF>``; ordinary pieces follow. Scores grow with the piece length so that
    the tokenizer prefers longer pieces.
    """
    tokens: list[str] = ["<unk>", "<s>", "</s>"]
    scores: list[float] = [0.0, 0.0, 0.0]
    types: list[int] = [
        int(gguf.TokenType.UNKNOWN),
        int(gguf.TokenType.CONTROL),
        int(gguf.TokenType.CONTROL),
    ]
    for byte in range(256):
        tokens.append(f"<0x{byte:02X}>")
        scores.append(0.0)
        types.append(int(gguf.TokenType.BYTE))
    for index, piece in enumerate(_ordinary_pieces()):
        tokens.append(piece)
        # Longer pieces win; among equal lengths, earlier (more common) pieces win slightly.
        scores.append(float(len(piece)) - 1e-4 * index)
        types.append(int(gguf.TokenType.NORMAL))
    return tokens, scores, types


def _byte_token_id(byte: int) -> int:
    return 3 + byte


def _normal(rng: np.random.Generator, shape: Sequence[int], std: float) -> npt.NDArray[np.float32]:
    values = rng.standard_normal(size=tuple(shape), dtype=np.float32)
    return np.ascontiguousarray(values * np.float32(std), dtype=np.float32)


def _output_matrix(rng: np.random.Generator, n_vocab: int, n_embd: int) -> npt.NDArray[np.float32]:
    """Unembedding rows of equal norm (no "hub" tokens), with a few tokens boosted or damped.

    Greedy decoding picks the row best aligned with the final hidden state, so the row norms decide
    how often a token can win: EOS and the newline byte get a mild boost so they show up now and
    then, while the other byte tokens and ``<unk>``/``<s>`` are damped so outputs are mostly
    readable pieces (raw bytes would often form invalid UTF-8).
    """
    out = rng.standard_normal(size=(n_vocab, n_embd), dtype=np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    row_scale = np.ones(n_vocab, dtype=np.float32)
    row_scale[UNK_ID] = _UNK_BOS_ROW_SCALE
    row_scale[BOS_ID] = _UNK_BOS_ROW_SCALE
    row_scale[_byte_token_id(0) : _byte_token_id(256)] = _BYTE_ROW_SCALE
    row_scale[EOS_ID] = _EOS_ROW_SCALE
    row_scale[_byte_token_id(NEWLINE_BYTE)] = _NEWLINE_ROW_SCALE
    out *= row_scale[:, None]
    return np.ascontiguousarray(out, dtype=np.float32)


DESIGNS = ("codes", "random")
VOCABULARIES = ("tiny", "other")  # the tiny vocabulary, or its ordinary pieces reversed (another vocabulary)
_DESCRIPTIONS = {
    "codes": "Code-machine test model (wide logit margins) written by simul.testing.tiny_gguf",
    "random": "Random-weight test model written by simul.testing.tiny_gguf",
}


def _random_weights(
    rng: np.random.Generator, n_vocab: int, n_layer: int, n_embd: int, n_head: int, n_ff: int, n_head_kv: int
) -> dict[str, npt.NDArray[np.float32]]:
    """The ``random`` design: seeded random weights (greedy choices often sit near ties; see code_machine)."""
    head_dim = n_embd // n_head
    # numpy shapes are (rows, cols) = (out_features, in_features). Scales: unit-variance embeddings; attention
    # projections a bit "hot" so attention is selective and the continuation depends on context;
    # attention/FFN outputs comparable to the embedding so no single path dominates.
    in_std = 1.0 / np.sqrt(n_embd)
    tensors = {"token_embd.weight": _normal(rng, (n_vocab, n_embd), 1.0)}
    for layer in range(n_layer):
        prefix = f"blk.{layer}"
        tensors[f"{prefix}.attn_norm.weight"] = np.ones(n_embd, dtype=np.float32)
        tensors[f"{prefix}.attn_q.weight"] = _normal(rng, (n_head * head_dim, n_embd), 2.0 * in_std)
        tensors[f"{prefix}.attn_k.weight"] = _normal(rng, (n_head_kv * head_dim, n_embd), 2.0 * in_std)
        tensors[f"{prefix}.attn_v.weight"] = _normal(rng, (n_head_kv * head_dim, n_embd), in_std)
        tensors[f"{prefix}.attn_output.weight"] = _normal(rng, (n_embd, n_head * head_dim), in_std)
        tensors[f"{prefix}.ffn_norm.weight"] = np.ones(n_embd, dtype=np.float32)
        tensors[f"{prefix}.ffn_gate.weight"] = _normal(rng, (n_ff, n_embd), in_std)
        tensors[f"{prefix}.ffn_up.weight"] = _normal(rng, (n_ff, n_embd), in_std)
        tensors[f"{prefix}.ffn_down.weight"] = _normal(rng, (n_embd, n_ff), 2.0 / np.sqrt(n_ff))
    tensors["output_norm.weight"] = np.ones(n_embd, dtype=np.float32)
    tensors["output.weight"] = _output_matrix(rng, n_vocab, n_embd)
    return tensors


def code_machine(seed: int = 0, n_embd: int = 64) -> CodeMachine:
    """The ``codes`` design drawn for ``seed`` (what build_tiny_gguf writes): codes, output rows, scales."""
    tokens, _, types = tiny_vocab()
    normal = [i for i, kind in enumerate(types) if kind == int(gguf.TokenType.NORMAL)]
    endings = [i for i in normal if is_ending_piece(tokens[i].replace(_SPACE, " ").encode())]
    # the few-shot template's own words never stop the output
    plain = [i for i in normal if tokens[i].lstrip(_SPACE) in _TEMPLATE_WORDS] + [
        _byte_token_id(NEWLINE_BYTE)
    ]
    return draw_machine(
        np.random.default_rng(seed),
        n_vocab=len(tokens),
        candidates=normal,
        endings=endings,
        plain=plain,
        eos_id=EOS_ID,
        newline_id=_byte_token_id(NEWLINE_BYTE),
        n_embd=n_embd,
    )


def build_tiny_gguf(
    path: pathlib.Path,
    seed: int = 0,
    n_layer: int = 2,
    n_embd: int = 64,
    n_head: int = 4,
    n_ff: int = 128,
    n_ctx_train: int = 4096,
    design: str = "codes",
    vocabulary: str = "tiny",
    n_head_kv: int | None = None,
) -> pathlib.Path:
    """Write a tiny ``llama`` GGUF model to ``path`` and return ``path``.

    ``design`` ``codes`` (the default) is simul.testing.code_machine: every greedy choice has a wide logit
    margin, so outputs are the same on every CPU family and thread count. ``random`` draws every weight from
    ``numpy.random.default_rng(seed)`` (near-ties flip with the machine). All weights are float32 and the same
    arguments always produce a byte-identical file. ``n_embd`` must be divisible by ``n_head`` and the head
    size must be even (RoPE rotates pairs of dimensions). ``n_head_kv`` (``random`` only; default ``n_head``)
    gives the keys and values fewer heads than the queries, each shared by ``n_head // n_head_kv`` query heads
    (grouped-query attention, as most current models have).

    ``vocabulary`` ``other`` writes the ordinary pieces in reverse order (same size, type and special tokens,
    different token texts from id 259 on): a model whose vocabulary a draft-model pair must refuse
    (simul.decoding.backend.vocabulary). Its weights are those of ``tiny``, so its outputs read differently.
    """
    if n_layer < 1 or n_embd < 2 or n_head < 1 or n_ff < 1 or n_ctx_train < 1:
        raise ValueError("n_layer, n_embd, n_head, n_ff and n_ctx_train must be positive")
    if n_embd % n_head != 0 or (n_embd // n_head) % 2 != 0:
        raise ValueError(f"n_embd={n_embd} must split into {n_head} heads of even size")
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {', '.join(DESIGNS)}, got {design!r}")
    n_head_kv = n_head if n_head_kv is None else n_head_kv
    if n_head_kv < 1 or n_head % n_head_kv != 0:
        raise ValueError(f"n_head_kv={n_head_kv} must divide n_head={n_head}")
    if n_head_kv != n_head and design != "random":
        raise ValueError(f"design {design!r} has a key/value head per query head, got n_head_kv={n_head_kv}")
    if vocabulary not in VOCABULARIES:
        raise ValueError(f"vocabulary must be one of {', '.join(VOCABULARIES)}, got {vocabulary!r}")
    path = pathlib.Path(path)
    head_dim = n_embd // n_head
    tokens, scores, types = tiny_vocab()
    n_vocab = len(tokens)
    if vocabulary == "other":
        first = _byte_token_id(256)  # the first ordinary piece
        tokens = tokens[:first] + tokens[first:][::-1]
        scores = scores[:first] + scores[first:][::-1]
    if design == "codes":
        tensors = machine_weights(code_machine(seed, n_embd), n_embd, n_head, n_layer, n_ff)
    else:
        rng = np.random.default_rng(seed)
        tensors = _random_weights(rng, n_vocab, n_layer, n_embd, n_head, n_ff, n_head_kv)

    writer = gguf.GGUFWriter(path, "llama")
    writer.add_name(MODEL_NAME)
    writer.add_description(_DESCRIPTIONS[design])
    writer.add_file_type(int(gguf.LlamaFileType.ALL_F32))
    writer.add_vocab_size(n_vocab)
    writer.add_context_length(n_ctx_train)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head_kv)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(10000.0)

    write_with_tokenizer(writer, (tokens, scores, types), tensors)
    return path


def write_with_tokenizer(
    writer: gguf.GGUFWriter,
    vocab: tuple[list[str], list[float], list[int]],
    tensors: dict[str, npt.NDArray[np.float32]],
) -> None:
    """Add the tiny SentencePiece-style tokenizer (``vocab``: tokens, scores, types, as :func:`tiny_vocab`
    gives them) and ``tensors`` to ``writer``, write the file and close it; the other tiny models of
    simul.testing share it."""
    tokens, scores, types = vocab
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(UNK_ID)
    writer.add_bos_token_id(BOS_ID)
    writer.add_eos_token_id(EOS_ID)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_add_space_prefix(False)

    # numpy shapes are (rows, cols) = (out_features, in_features); GGUF stores them reversed, which is exactly
    # llama.cpp's {n_in, n_out} layout.
    for name, values in tensors.items():
        writer.add_tensor(name, values)
    try:
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    finally:
        writer.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: ``python -m simul.testing.tiny_gguf OUT.gguf [--seed N] [--design D]``."""
    parser = argparse.ArgumentParser(
        prog="python -m simul.testing.tiny_gguf",
        description="Write a tiny llama GGUF model for fast decoding tests.",
    )
    parser.add_argument("out", type=pathlib.Path, help="output .gguf path")
    parser.add_argument("--seed", type=int, default=0, help="RNG seed (default: 0)")
    parser.add_argument(
        "--design", choices=DESIGNS, default="codes", help="codes (wide logit margins, default) or random"
    )
    args = parser.parse_args(argv)
    out: pathlib.Path = args.out
    if out.parent != pathlib.Path():
        out.parent.mkdir(parents=True, exist_ok=True)
    written = build_tiny_gguf(out, seed=args.seed, design=args.design)
    print(written)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

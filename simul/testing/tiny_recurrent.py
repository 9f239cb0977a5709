"""Build a tiny ``mamba``-architecture GGUF model: a model whose memory is a recurrent state, not a KV cache.

Such a model keeps one state per sequence that each token updates in place, so llama.cpp cannot drop the last
positions of a sequence (``llama_memory_seq_rm`` refuses a partial removal): a method that rolls back to the
first divergence of a draft (SSBD, CD, the n-gram drafters, draft models) cannot run on it, while
re-translation, which starts every update from the start, can. The tests use this model to show that simul
refuses the first kind and decodes the second correctly.

The weights are float32, drawn from ``numpy.random.default_rng(seed)``; the vocabulary is the tiny llama
model's (simul.testing.tiny_gguf), so any text tokenizes. Same arguments, byte-identical file.

Usage: ``python -m simul.testing.tiny_recurrent OUT.gguf [--seed N]``
"""

from __future__ import annotations

import argparse
import pathlib
from collections.abc import Sequence

import gguf
import numpy as np
import numpy.typing as npt

from simul.testing.tiny_gguf import tiny_vocab, write_with_tokenizer

MODEL_NAME = "simul-tiny-recurrent"


def _normal(rng: np.random.Generator, shape: Sequence[int], std: float) -> npt.NDArray[np.float32]:
    return (rng.standard_normal(shape) * std).astype(np.float32)


def build_tiny_recurrent(
    path: pathlib.Path,
    seed: int = 0,
    n_layer: int = 2,
    n_embd: int = 64,
    d_state: int = 8,
    d_conv: int = 4,
    n_ctx_train: int = 4096,
) -> pathlib.Path:
    """Write a tiny Mamba GGUF (``d_inner`` = 2 x ``n_embd``, the Mamba default) to ``path`` and return it."""
    if min(n_layer, n_embd, d_state, d_conv, n_ctx_train) < 1:
        raise ValueError("n_layer, n_embd, d_state, d_conv and n_ctx_train must be positive")
    path = pathlib.Path(path)
    rng = np.random.default_rng(seed)
    tokens, scores, types = tiny_vocab()
    n_vocab = len(tokens)
    d_inner = 2 * n_embd
    dt_rank = max(1, n_embd // 16)

    # numpy shapes are (rows, cols) = llama.cpp's {cols, rows}, reversed as GGUF stores them
    tensors: dict[str, npt.NDArray[np.float32]] = {
        "token_embd.weight": _normal(rng, (n_vocab, n_embd), 1.0),
        "output_norm.weight": np.ones(n_embd, dtype=np.float32),
        "output.weight": _normal(rng, (n_vocab, n_embd), 1.0 / np.sqrt(n_embd)),
    }
    for i in range(n_layer):
        blk = f"blk.{i}"
        tensors[f"{blk}.attn_norm.weight"] = np.ones(n_embd, dtype=np.float32)
        tensors[f"{blk}.ssm_in.weight"] = _normal(rng, (2 * d_inner, n_embd), 1.0 / np.sqrt(n_embd))
        tensors[f"{blk}.ssm_conv1d.weight"] = _normal(rng, (d_inner, d_conv), 0.5)
        tensors[f"{blk}.ssm_conv1d.bias"] = np.zeros(d_inner, dtype=np.float32)
        tensors[f"{blk}.ssm_x.weight"] = _normal(
            rng, (dt_rank + 2 * d_state, d_inner), 1.0 / np.sqrt(d_inner)
        )
        tensors[f"{blk}.ssm_dt.weight"] = _normal(rng, (d_inner, dt_rank), 0.5)
        tensors[f"{blk}.ssm_dt.bias"] = np.full(d_inner, -2.0, dtype=np.float32)
        # A = -exp(A_log), stored negated as llama.cpp expects; a decaying state
        tensors[f"{blk}.ssm_a"] = -np.tile(np.arange(1, d_state + 1, dtype=np.float32), (d_inner, 1))
        tensors[f"{blk}.ssm_d"] = np.ones(d_inner, dtype=np.float32)
        tensors[f"{blk}.ssm_out.weight"] = _normal(rng, (n_embd, d_inner), 1.0 / np.sqrt(d_inner))

    writer = gguf.GGUFWriter(path, "mamba")
    writer.add_name(MODEL_NAME)
    writer.add_description("random float32 weights for simul's tests of models with a recurrent state")
    writer.add_file_type(int(gguf.LlamaFileType.ALL_F32))
    writer.add_vocab_size(n_vocab)
    writer.add_context_length(n_ctx_train)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(0)
    writer.add_head_count(0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_ssm_conv_kernel(d_conv)
    writer.add_ssm_inner_size(d_inner)
    writer.add_ssm_state_size(d_state)
    writer.add_ssm_time_step_rank(dt_rank)

    write_with_tokenizer(writer, (tokens, scores, types), tensors)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    build_tiny_recurrent(args.out, seed=args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

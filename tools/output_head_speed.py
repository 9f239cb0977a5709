"""How fast would the output projection have to be for SSBD to reach a given speedup on this machine?

SSBD's time per output token, relative to RT, is (1 - A/O) + c * A/O / A/D, where c is the cost of one
verified draft row relative to a one-token decode (docs/results.md). A verified row is the transformer body
plus the output projection (logits over the whole vocabulary, which the biased argmax needs at every draft
position).
This tool measures, on the model's real hidden states and real output matrix:

* llama.cpp: one-token decode, and a batch of draft rows with logits at every row and at the last row only
  (the difference is the output projection per row);
* the same projection through the fastest other kernels at hand: float32 GEMM (numpy's BLAS) and int8 GEMM
  (torch's FBGEMM dynamic quantization, per-channel weights), with each one's logit error against a float32
  reference computed from the same dequantized weights;
* the budget: the largest output-projection time per row that keeps c at the value a target speedup needs, and
  the multiply-accumulate rate that implies.

    python tools/output_head_speed.py [--model PATH.gguf] [--threads 2] [--rows 18] [--target 2.0]
                                      [--ad 0.876] [--ao 0.709]

Needs the `gguf` package (dev extra) to read the output matrix; the int8 row needs torch (comet extra) and is
skipped without it. Run it on an otherwise idle machine: llama.cpp's threads spin.
"""

from __future__ import annotations

import argparse
import ctypes
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from simul.common.languages import get_language
from simul.decoding.backend import LlamaBackend
from simul.metrics.speed import max_row_cost
from simul.request.default_model import default_model_path
from simul.request.templates import get_template

Floats = npt.NDArray[np.float32]

SOURCE = (
    "The quick brown fox jumps over the lazy dog near the river bank today and then it goes home to sleep."
)
DRAFT = (
    " Der schnelle braune Fuchs springt heute am Flussufer über den faulen Hund, und dann geht er "
    "nach Hause, um zu schlafen, weil er nach dem langen Tag sehr müde ist."
)


def median_ms(repeats: int, measure: Callable[[], float]) -> float:
    return float(np.median([measure() for _ in range(repeats)]) * 1000)


def output_matrix(path: Path) -> Floats:
    """The output projection (vocabulary x embedding) as float32: output.weight, or the tied token_embd."""
    try:
        import gguf
    except ImportError:
        raise SystemExit("this tool reads the model with the `gguf` package: pip install gguf") from None
    reader = gguf.GGUFReader(str(path))
    tensors = {t.name: t for t in reader.tensors}
    tensor = tensors.get("output.weight") or tensors.get("token_embd.weight")
    if tensor is None:
        raise SystemExit(f"{path}: neither output.weight nor token_embd.weight found")
    print(f"output matrix: {tensor.name} {tensor.tensor_type.name} {list(tensor.shape)}")
    weights = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
    return np.ascontiguousarray(weights, dtype=np.float32)


def error_line(name: str, logits: Floats, reference: Floats) -> str:
    diff = np.abs(logits - reference)
    agree = float((logits.argmax(axis=1) == reference.argmax(axis=1)).mean()) * 100
    return (
        f"  {name:<28} |error| p50 {np.percentile(diff, 50):.3f}  p99 {np.percentile(diff, 99):.3f}  "
        f"max {diff.max():.3f}  argmax agrees on {agree:.0f} % of rows"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", type=Path, default=None, help="GGUF model (default: the embedded one)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rows", type=int, default=18, help="draft rows per verification pass")
    parser.add_argument("--repeats", type=int, default=5, help="report the median of N")
    parser.add_argument("--target", type=float, default=2.0, help="speedup to budget for")
    parser.add_argument("--ad", type=float, default=0.876, help="draft acceptance A/D (fraction)")
    parser.add_argument("--ao", type=float, default=0.709, help="output acceptance A/O (fraction)")
    args = parser.parse_args()
    if args.rows < 2:
        raise SystemExit("--rows must be at least 2: the projection is the difference between two passes")
    c_max = max_row_cost(args.target, args.ad, args.ao)
    if c_max <= 0:
        raise SystemExit(
            f"speedup {args.target} is at or above the ideal 1 / (1 - A/O) = {1 / (1 - args.ao):.2f}: "
            "no verification cost reaches it"
        )
    path: Path = args.model or default_model_path()

    backend = LlamaBackend(path, n_ctx=2048, n_threads=args.threads)
    backend.warm_up()
    # The prompt simul's default template builds for en-de (few-shot examples included), so that attention
    # runs over a context of the length the streams have.
    text = get_template("fewshot").render(get_language("en"), get_language("de"), SOURCE).text
    prompt = backend.tokenize(text, add_special=True)
    draft = backend.tokenize(DRAFT)
    if len(draft) < args.rows:
        raise SystemExit(f"the built-in draft has {len(draft)} tokens; pass --rows {len(draft)} or fewer")
    draft = draft[: args.rows]
    m = len(draft)

    def decode() -> float:
        """One token at a time through the draft, per token (as RT and SSBD decode after the prompt)."""
        backend.reset()
        backend.eval(prompt, logits_from=len(prompt) - 1)
        start = time.perf_counter()
        for token in draft:
            backend.eval([token], logits_from=0)
        return (time.perf_counter() - start) / m

    def rows(logits_from: int) -> Callable[[], float]:
        def run() -> float:
            backend.reset()
            backend.eval(prompt, logits_from=len(prompt) - 1)
            start = time.perf_counter()
            backend.eval(draft, logits_from=logits_from)
            return time.perf_counter() - start

        return run

    t_decode = median_ms(args.repeats, decode)
    # A pass with logits at every row costs P + m * (body + head), with logits at the last row P + m * body
    # + head (P: the per-pass overhead, counted in the body here as it is in SSBD's verification).
    pass_all = median_ms(args.repeats, rows(0))
    pass_last = median_ms(args.repeats, rows(m - 1))
    t_head = (pass_all - pass_last) / (m - 1)
    t_all = pass_all / m
    t_body = t_all - t_head

    # Real hidden states: in embeddings mode llama.cpp also returns the final-norm output of each row it
    # computes logits for, i.e. exactly what the output projection multiplies.
    lib: Any = backend._lib
    ctx = backend._ctx
    lib.llama_set_embeddings(ctx, True)
    backend.reset()
    backend.eval(prompt, logits_from=len(prompt) - 1)
    got = backend.eval(draft, logits_from=0)
    assert got is not None
    llama_logits = np.array(got, dtype=np.float32)
    n_embd = int(lib.llama_model_n_embd(backend._model))
    pointer = ctypes.cast(lib.llama_get_embeddings(ctx), ctypes.POINTER(ctypes.c_float))
    hidden = np.ctypeslib.as_array(pointer, shape=(m, n_embd)).copy()
    lib.llama_set_embeddings(ctx, False)
    backend.close()

    weights = output_matrix(path)
    vocab = weights.shape[0]
    reference = hidden @ weights.T
    macs = vocab * n_embd
    print(
        f"model {path.name}, {args.threads} threads, prompt {len(prompt)} tokens, {m} draft rows per pass "
        f"(median of {args.repeats})"
    )
    print(f"llama.cpp one-token decode:                  {t_decode:7.2f} ms")
    print(f"llama.cpp verified row (body + projection):  {t_all:7.2f} ms/row  c = {t_all / t_decode:.2f}")
    print(f"llama.cpp body (and per-pass overhead):      {t_body:7.2f} ms/row  c = {t_body / t_decode:.2f}")
    print(
        f"llama.cpp output projection:                 {t_head:7.2f} ms/row  "
        f"({macs / (t_head * 1e6):.0f} GMAC/s)"
    )

    def bench(run: Callable[[], object]) -> float:
        run()
        return median_ms(args.repeats, lambda: _timed(run)) / m

    t_fp32 = bench(lambda: hidden @ weights.T)
    print(
        f"float32 GEMM (numpy BLAS) projection:        {t_fp32:7.2f} ms/row  "
        f"({macs / (t_fp32 * 1e6):.0f} GMAC/s)"
    )
    int8_logits: Floats | None = None
    try:
        import torch
    except ImportError:
        print("int8 GEMM: skipped (torch is not installed)")
    else:
        torch.set_num_threads(args.threads)
        linear = torch.nn.Linear(n_embd, vocab, bias=False)
        linear.weight.data = torch.from_numpy(weights)
        quantized = torch.ao.quantization.quantize_dynamic(  # type: ignore[no-untyped-call]
            torch.nn.Sequential(linear),
            {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig},
            dtype=torch.qint8,
        )
        inputs = torch.from_numpy(hidden)
        with torch.no_grad():
            int8_logits = quantized(inputs).numpy()
            t_int8 = bench(lambda: quantized(inputs))
        print(
            f"int8 GEMM (FBGEMM, dynamic) projection:      {t_int8:7.2f} ms/row  "
            f"({macs / (t_int8 * 1e6):.0f} GMAC/s)"
        )

    print("logit error against float32 logits from the same dequantized weights:")
    print(error_line("llama.cpp (its own kernels)", llama_logits, reference))
    if int8_logits is not None:
        print(error_line("int8 GEMM (FBGEMM)", int8_logits, reference))

    budget = c_max * t_decode - t_body
    print(
        f"speedup {args.target} at A/D {args.ad:.3f}, A/O {args.ao:.3f} needs c <= {c_max:.3f}: "
        f"{c_max * t_decode:.2f} ms per verified row"
    )
    if budget <= 0:
        print("  the body alone exceeds that: no output projection is fast enough")
    else:
        print(
            f"  leaving {budget:.2f} ms/row for the output projection after the body: "
            f"{macs / (budget * 1e6):.0f} GMAC/s needed"
        )


def _timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()

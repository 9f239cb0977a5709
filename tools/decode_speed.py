"""Micro-benchmark of the forward passes SSBD is made of, on one model and thread count.

Prints milliseconds per token for: one-token greedy decoding through simul's backend; one batch over a
30-token draft with logits at every position (SSBD's verification) and with logits at the last position
only (CD's re-encoding of its draft); and, for comparison, llama-cpp-python's own high-level ``generate``.
The ratio of the second to the first is the ``c`` of the speedup model in docs/results.md.

    python tools/decode_speed.py [--model PATH.gguf] [--threads 2] [--tokens 120] [--repeats 3]

Run it on an otherwise idle machine: any other load distorts the figures (and simul's OpenMP wait policy,
chosen from a CPU sample unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set, applies here too:
simul/machine/openmp.py).
`simul bench` makes the same measurements before each benchmark (simul/machine/calibration.py).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from simul.decoding.backend import LlamaBackend
from simul.machine.calibration import calibrate
from simul.request.default_model import default_model_path

PROMPT = "English: The quick brown fox jumps over the lazy dog near the river bank today.\nGerman:"


def best_of(repeats: int, measure: Callable[[], float]) -> float:
    return min(measure() for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", type=Path, default=None, help="GGUF model (default: the embedded one)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=120, help="tokens decoded one at a time")
    parser.add_argument("--draft", type=int, default=30, help="draft length of the batched passes")
    parser.add_argument("--repeats", type=int, default=3, help="report the best of N")
    args = parser.parse_args()
    path: Path = args.model or default_model_path()
    n_tokens: int = args.tokens
    n_draft: int = args.draft

    backend = LlamaBackend(path, n_ctx=2048, n_threads=args.threads)
    backend.warm_up()
    prompt = backend.tokenize(PROMPT, add_special=True)

    # the one-token pass and the row of a verification pass as `simul bench` calibrates them
    costs = calibrate(
        backend,
        single_thread=False,
        passes=n_tokens,
        draft=n_draft,
        repeats=args.repeats,
        prompt_tokens=prompt,
    )

    def last_row_only() -> float:
        backend.reset()
        backend.eval(prompt)
        draft = (prompt[1:] * n_draft)[:n_draft]  # ordinary tokens of this model's vocabulary
        start = time.perf_counter()
        backend.eval(draft, logits_from=n_draft - 1)
        return (time.perf_counter() - start) / n_draft * 1000

    decode, verify = costs.one_token_ms, costs.row_ms
    body = best_of(args.repeats, last_row_only)
    backend.close()
    print(f"model {path.name}, {args.threads} threads")
    print(f"one-token decode (simul backend):        {decode:6.2f} ms/token")
    print(f"batch of {args.draft}, logits at every row:   {verify:6.2f} ms/row  (c = {verify / decode:.2f})")
    print(f"batch of {args.draft}, logits at the last row: {body:6.2f} ms/row")

    import llama_cpp

    llm = llama_cpp.Llama(
        str(path), n_ctx=2048, n_threads=args.threads, n_threads_batch=args.threads, verbose=False
    )
    tokens = llm.tokenize(PROMPT.encode("utf-8"))

    def high_level() -> float:
        llm.reset()  # type: ignore[no-untyped-call]
        llm.eval(tokens)
        start = time.perf_counter()
        n = 0
        for _ in llm.generate(tokens, temp=0.0, reset=False):
            n += 1
            if n >= n_tokens:
                break
        return (time.perf_counter() - start) / n * 1000

    print(f"one-token decode (llama-cpp-python API): {best_of(args.repeats, high_level):6.2f} ms/token")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What one round of ``--parallel`` costs: the micro-batches llama.cpp cuts it into and its wall time, with a
KV cache per sequence (``kv_unified`` off) and with one cache shared by all sequences, in fast and exact mode.

A round is what simul's scheduler hands llama_decode when N streams share a pass: each sequence appends its
own rows (one decoded token, a draft to verify, or the new part of a prompt), in the scheduler's order of the
streams, which after a few streams have finished is not the order of their sequence ids. The micro-batches
are counted with llama.cpp's graph callback (one output tensor computed per micro-batch). The rounds:

- ``ones``: every sequence one row, in sequence-id order (what the probe ../shared/probes/pass_cost.py times);
- ``shuffled``: every sequence one row, in a shuffled order;
- ``mixed``: shuffled; one sequence with a 24-token prompt part, two with 4-row verifications, the rest
  one row each.

Each round appends after a 150-token prompt per sequence and is timed ``--repeats`` times (median ms), then
its rows are removed again. Usage, with simul's patched llama-cpp-python:

    python tools/parallel_rounds.py [MODEL.gguf] [--seqs 8] [--threads 2] [--repeats 7] [--json OUT]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PROMPT = 150


def rounds(n_seq: int) -> dict[str, list[tuple[int, int]]]:
    """Each round: (sequence id, rows) in batch order."""
    order = list(range(n_seq))
    random.Random(7).shuffle(order)
    sizes = {order[0]: 24, order[1]: 4, order[2]: 4} if n_seq >= 3 else {order[0]: 4}
    return {
        "ones": [(s, 1) for s in range(n_seq)],
        "shuffled": [(s, 1) for s in order],
        "mixed": [(s, sizes.get(s, 1)) for s in order],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("model", nargs="?", help="a GGUF file (default: the embedded model)")
    parser.add_argument("--seqs", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    from simul.machine.load_order import load_llama_first

    load_llama_first(["bench"])
    from simul.decoding.backend.exactness import ALL_PARTS, apply, exact_support
    from simul.decoding.backend.library import _llama
    from simul.request.default_model import default_model_path

    lc = _llama()
    support = exact_support(lc, 0)
    if not support.available:
        raise SystemExit(f"exact mode is not available: {support.reason}")
    model_path = Path(args.model) if args.model else default_model_path()
    mparams = lc.llama_model_default_params()  # type: ignore[attr-defined]
    mparams.n_gpu_layers = 0
    model = lc.llama_model_load_from_file(str(model_path).encode(), mparams)  # type: ignore[attr-defined]

    outputs = [0]

    @lc.ggml_backend_sched_eval_callback  # type: ignore[attr-defined,untyped-decorator]
    def watch(tensor: int, ask: bool, user: int) -> bool:
        # asked once per micro-batch whether to show the logits tensor (by the name llama.cpp gives it);
        # answering no keeps the graph in one piece
        if ask and ctypes.string_at(tensor + NAME_OFFSET, 14) == b"result_output\0":
            outputs[0] += 1
        return False

    def context(unified: bool, counted: bool) -> tuple[object, object]:
        cparams = lc.llama_context_default_params()  # type: ignore[attr-defined]
        cparams.n_ctx = 512 * args.seqs
        cparams.n_batch = cparams.n_ctx
        cparams.n_ubatch = 512
        cparams.n_seq_max = args.seqs
        cparams.n_threads = cparams.n_threads_batch = args.threads
        cparams.flash_attn_type = 1
        cparams.swa_full = True
        cparams.kv_unified = unified
        cparams.no_perf = True
        if counted:  # a context of its own: the callback costs time
            cparams.cb_eval = watch
        ctx = lc.llama_init_from_model(model, cparams)  # type: ignore[attr-defined]
        return ctx, lc.llama_get_memory(ctx)  # type: ignore[attr-defined]

    def decode(ctx: object, rows: list[tuple[int, int, int]]) -> float:
        batch = lc.llama_batch_init(len(rows), 0, 1)  # type: ignore[attr-defined]
        for i, (seq, pos, token) in enumerate(rows):
            batch.token[i] = token
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = 1
        batch.n_tokens = len(rows)
        t0 = time.perf_counter()
        rc = lc.llama_decode(ctx, batch)  # type: ignore[attr-defined]
        dt = time.perf_counter() - t0
        lc.llama_batch_free(batch)  # type: ignore[attr-defined]
        if rc != 0:
            raise SystemExit(f"llama_decode failed with {rc}")
        return dt

    results = []
    for unified in (False, True):
        contexts = [context(unified, counted) for counted in (True, False)]
        for mode, parts in (("fast", 0), ("exact", ALL_PARTS)):
            apply(parts)
            for ctx, memory in contexts:
                lc.llama_memory_clear(memory, True)  # type: ignore[attr-defined]
                for s in range(args.seqs):
                    decode(ctx, [(s, p, 2000 + p) for p in range(PROMPT)])
            for name, spec in rounds(args.seqs).items():
                rows = [(s, PROMPT + j, 1000 + 7 * s + j) for s, n in spec for j in range(n)]
                (count_ctx, count_memory), (time_ctx, time_memory) = contexts
                outputs[0] = 0
                decode(count_ctx, rows)
                micro_batches = outputs[0]
                times: list[float] = []
                for ctx, memory in [(count_ctx, count_memory)] + [(time_ctx, time_memory)] * args.repeats:
                    if ctx is time_ctx:
                        times.append(decode(ctx, rows))
                    for s, _ in spec:
                        lc.llama_memory_seq_rm(memory, s, PROMPT, -1)  # type: ignore[attr-defined]
                results.append(
                    {
                        "cache": "shared" if unified else "per sequence",
                        "mode": mode,
                        "round": name,
                        "rows": len(rows),
                        "micro_batches": micro_batches,
                        "ms": round(statistics.median(times) * 1000, 1),
                    }
                )
                r = results[-1]
                print(
                    f"{r['cache']:>12}  {mode:5}  {name:8}  rows {r['rows']:3}  micro-batches "
                    f"{r['micro_batches']:2}  {r['ms']:6.1f} ms",
                    flush=True,
                )
        for ctx, _ in contexts:
            lc.llama_free(ctx)  # type: ignore[attr-defined]
    apply(0)
    if args.json:
        args.json.write_text(
            json.dumps({"seqs": args.seqs, "threads": args.threads, "rounds": results}, indent=1)
        )
    return 0


# offsetof(struct ggml_tensor, name) on 64-bit builds of this ggml (llama-cpp-python 0.3.36): type (4, padded
# to 8), buffer (8), ne[4] and nb[4] (64), op (4), op_params (64), flags (4), src[10] (80), view_src (8),
# view_offs (8), data (8): 256 bytes
NAME_OFFSET = 256

if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""What a forward pass of n rows costs in fast and exact mode, side by side in one process.

Each mode gets a backend of its own on the same model (exact mode's switch is process-wide and set before
each pass, simul.decoding.backend.exactness); round by round every width is run in every mode, the modes
taking turns pass by pass (the order rotates each round), so that drifts of the machine fall on all widths
and modes alike. A pass appends n rows after the first probe prompt, with logits for every row (as a
verification pass has them). Prints the median milliseconds per mode and width, the ratio to the first mode,
each width in its mode's one-token passes, the load average before and after, and the process's CPU/wall.

    python tools/exact_costs.py [MODEL.gguf] [--modes fast,exact,exact-norepack] [--widths 1,2,...]
        [--repeats 15] [--threads 2] [--json OUT.json]
Modes: fast (llama.cpp's defaults: FlashAttention auto, repacked weights), exact (simul's exact mode, repacked
weights through gemv row by row), exact-norepack (exact mode on weights that are not repacked),
fast-norepack, and only-tiled, only-flash-attn, only-repack, only-sgemm, only-kv-order: fast mode with one
part of exact mode's switch on (what that part costs; exact needs them all; only-kv-order places cells of a
shared cache, which these one-sequence passes do not have). A mode with "-notiles" appended (exact-notiles,
fast-notiles) runs with the tile kernels of patch simul-exact/4 off (ggml_cpu_set_tile_cols(0): Q8_0 and
Q5_0 weights through vec_dot for one row and tinyBLAS from two, as before the patch); one with "-tilesN"
appended (exact-tiles64) gives the tiles products of up to N columns instead of the library's default width
(the patch's, or GGML_CPU_TILE_COLS).

    python tools/exact_costs.py --kernels [--widths ...] [--repeats 15] [--threads 2]
measures the kernels alone instead: one product of each weight type of the embedded model at its shape
(simul.decoding.backend.ggml_ops; the output head at its full 262,144 rows; the Q4_K weights repacked, as
llama.cpp holds them), tiles on against off (off: vec_dot, tinyBLAS or the repacked gemv column by column).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MODES = {
    "fast": {"exact": False, "repack": True},
    "exact": {"exact": True, "repack": True},
    "exact-norepack": {"exact": True, "repack": False},
    "fast-norepack": {"exact": False, "repack": False},
}
#: fast mode with one part of exact mode (simul.decoding.backend.exactness.PARTS): what that part costs
PART_MODES = {"only-tiled": 1, "only-flash-attn": 2, "only-repack": 4, "only-sgemm": 8, "only-kv-order": 16}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("model", nargs="?", help="a GGUF file (default: the embedded model)")
    parser.add_argument("--modes", default="fast,exact,exact-norepack")
    parser.add_argument("--widths", default=",".join(str(n) for n in range(1, 33)))
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--long",
        action="store_true",
        help="after a long prompt (past 512 cells: fast mode's split-KV FlashAttention for one row)",
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--kernels", action="store_true", help="each weight type's product alone")
    args = parser.parse_args(argv)
    widths = [int(w) for w in args.widths.split(",") if w]
    if args.kernels:
        return kernels(widths, args.repeats, args.threads, args.json)
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if _base(m) not in MODES and _base(m) not in PART_MODES]
    if unknown:
        parser.error(f"unknown mode(s) {', '.join(unknown)}; known: {', '.join([*MODES, *PART_MODES])}")

    from simul.machine.load_order import load_llama_first

    load_llama_first(["bench"])
    from simul.decoding.backend import LlamaBackend
    from simul.decoding.backend.invariance import PROBE_PROMPTS, long_prompts
    from simul.request.default_model import default_model_path

    model = Path(args.model) if args.model else default_model_path()
    backends = {}
    for m in modes:
        settings = MODES.get(_base(m), {"exact": False, "repack": True})
        backends[m] = LlamaBackend(model, n_ctx=1024, n_threads=args.threads, n_gpu_layers=0, **settings)  # type: ignore[arg-type]
        if _base(m) in PART_MODES:
            backends[m].exact_parts = PART_MODES[_base(m)]
    ggml = _ggml() if any(_tile_cols(m) is not None for m in modes) else None
    default_cols = ggml.get_tile_cols() if ggml is not None else None  # before any mode sets it
    for b in backends.values():
        b.warm_up()
    text = long_prompts()[0] if args.long else PROBE_PROMPTS[0]
    prompt = backends[modes[0]].tokenize(text, add_special=True)
    load_before = os.getloadavg()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    times: dict[str, dict[int, list[float]]] = {m: {n: [] for n in widths} for m in modes}
    # round by round every width and every mode, the modes' order rotating: a machine whose speed drifts
    # (a VM's clock moved by 1.7x within one run) moves every width and mode alike, so their ratios hold
    for r in range(args.repeats):
        for n in widths:
            tokens = [prompt[i % len(prompt)] for i in range(n)]
            order = modes[r % len(modes) :] + modes[: r % len(modes)]
            for m in order:
                b = backends[m]
                if ggml is not None:
                    cols = _tile_cols(m)
                    ggml.set_tile_cols(default_cols if cols is None else cols)
                seq = b.sequence(0)
                seq.clear()
                b.eval_many([(seq, prompt, None)])
                t0 = time.perf_counter()
                b.eval_many([(seq, tokens, 0)])
                times[m][n].append(time.perf_counter() - t0)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    load_after = os.getloadavg()
    if ggml is not None:
        ggml.set_tile_cols(default_cols)
    for b in backends.values():
        b.close()
    med = {m: {n: statistics.median(v) * 1000 for n, v in per.items()} for m, per in times.items()}
    print(
        f"load average {load_before[0]:.2f} -> {load_after[0]:.2f}; CPU/wall {cpu / wall:.2f}; "
        f"{args.threads} threads; {args.repeats} rounds of every width and mode after a prompt of "
        f"{len(prompt)} tokens, medians in ms; x1: in the mode's one-token passes (where width 1 was run)"
    )
    first = modes[0]
    head = "  n " + "".join(f"{m:>16}" for m in modes) + "".join(f"{m + '/' + first:>22}" for m in modes[1:])
    head += "".join(f"{m + ' x1':>20}" for m in modes) if 1 in widths else ""
    print(head)
    for n in widths:
        row = f"{n:3d} " + "".join(f"{med[m][n]:16.2f}" for m in modes)
        row += "".join(f"{med[m][n] / med[first][n]:22.3f}" for m in modes[1:])
        row += "".join(f"{med[m][n] / med[m][1]:20.2f}" for m in modes) if 1 in widths else ""
        print(row)
    if args.json:
        doc = {
            "model": str(model),
            "threads": args.threads,
            "repeats": args.repeats,
            "prompt_tokens": len(prompt),
            "load_before": load_before,
            "load_after": load_after,
            "cpu_wall": cpu / wall,
            "median_ms": {m: {str(n): v for n, v in per.items()} for m, per in med.items()},
        }
        args.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0


NOTILES = "-notiles"
TILES_UP_TO = re.compile(r"-tiles(\d+)$")  # exact-tiles64: the tile kernels up to 64 columns


def _base(mode: str) -> str:
    if mode.endswith(NOTILES):
        return mode[: -len(NOTILES)]
    return TILES_UP_TO.sub("", mode)


def _tile_cols(mode: str) -> int | None:
    """The widest product the mode's passes give the tile kernels (0: none; None: the library's default)."""
    if mode.endswith(NOTILES):
        return 0
    wide = TILES_UP_TO.search(mode)
    return int(wide.group(1)) if wide else None


def _ggml() -> Any:
    from simul.decoding.backend import _llama
    from simul.decoding.backend.ggml_ops import Ggml

    g = Ggml(_llama())
    if not g.has_tiles:
        raise SystemExit(
            "this llama-cpp-python has no tile kernels (patch simul-exact/4 or later): run make setup"
        )
    return g


#: the embedded model's products (gemma-3-270m Q4_K_M): type, weight rows, row length, how many per pass; the
#: Q4_K weights repacked, as llama.cpp holds them on x86 (ggml_ops.RepackedMatMul: the repacked gemv)
SHAPES = [
    ("q8_0", 262144, 640, 1, "output head"),
    ("q8_0", 256, 640, 9, "attn_v"),
    ("q5_0", 2048, 640, 36, "ffn_gate/up"),
    ("q5_0", 1024, 640, 18, "attn_q"),
    ("q4_k", 640, 2048, 9, "ffn_down"),
    ("q6_k", 640, 2048, 9, "ffn_down"),
]
REPACKED = {"q4_k"}


def kernels(widths: list[int], repeats: int, threads: int, out: Path | None) -> int:
    """Each weight type's product alone, tiles on and off taking turns, exact mode; median ms."""
    from simul.decoding.backend.exactness import ALL_PARTS
    from simul.decoding.backend.ggml_ops import MatMul, RepackedMatMul, random_matrix

    g = _ggml()
    tiles = g.get_tile_cols()  # the library's default width ("tiles on")
    g.set_exact(ALL_PARTS)
    load_before = os.getloadavg()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    rows = []
    for type_name, n_rows, k, per_pass, what in SHAPES:
        weights = random_matrix(n_rows, k, seed=1)
        repacked = type_name in REPACKED and g.extra_buffer_type("CPU_REPACK") is not None
        product = RepackedMatMul(g, type_name, weights) if repacked else MatMul(g, type_name, weights)
        columns = random_matrix(max(widths), k, seed=2)
        for n in widths:
            med = {}
            for cols in (tiles, 0):
                g.set_tile_cols(cols)
                runs = product.times(columns[:n], threads, repeats=repeats)
                med[cols] = statistics.median(r.seconds for r in runs) * 1000
            rows.append(
                {
                    "type": type_name,
                    "what": what,
                    "rows": n_rows,
                    "k": k,
                    "per_pass": per_pass,
                    "repacked": repacked,
                    "n": n,
                    "tiles_ms": med[tiles],
                    "no_tiles_ms": med[0],
                }
            )
            print(
                f"{type_name + ('r' if repacked else ''):5} {what:12} {n_rows:7d}x{k:<5d} n={n:2d}  "
                f"tiles {med[tiles]:8.3f} ms  "
                f"without {med[0]:8.3f} ms  ratio {med[tiles] / med[0]:.3f}",
                flush=True,
            )
        product.close()
    g.set_tile_cols(tiles)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    load_after = os.getloadavg()
    print(
        f"load average {load_before[0]:.2f} -> {load_after[0]:.2f}; CPU/wall {cpu / wall:.2f}; "
        f"{threads} threads"
    )
    if out:
        out.write_text(
            json.dumps(
                {
                    "threads": threads,
                    "repeats": repeats,
                    "load_before": load_before,
                    "load_after": load_after,
                    "cpu_wall": cpu / wall,
                    "rows": rows,
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""How fast exact mode's multi-column K-quant kernels run, for one or more builds of libggml-cpu side by side:
with their operands in the cache on one thread, the speed of the kernel's instructions apart from memory; or
with the weights streaming from memory on several threads, as a model's pass meets them (--from-memory).

Calls the exported kernels directly (patch simul-exact/5, ggml/src/ggml-cpu/arch/x86): the repacked Q4_K
multi-column gemv ``ggml_gemv_q4_K_8x8_q8_K_cols`` on 512 rows x 1536 (442 KB of weights, as ggml lays them
out: 8 rows interleaved per block) and the Q6_K tile ``ggml_vec_dot_q6_K_q8_K_tile`` on 16 rows x 12,288 (161
KB), both held in a core's L2 cache; the activations are random columns quantized to q8_K by the library
itself. The weights are random bytes with every block's scales d (and dmin) set to 1/64, so that no float is
huge, NaN or subnormal. Builds take turns call by call, round after round, and each keeps its best time, so
that a drift of the machine's clock falls on all of them; the outputs of the builds are compared bit for bit.

A product of n columns does 64-byte dpbusd-equivalents (64 8-bit multiply-adds, what one 512-bit VNNI dpbusd
does): rows x K x n / 64 of them, printed per nanosecond beside the time. Compare with `tools/roofline.c` (the
same instruction's rate on registers, and with an operand broadcast from memory, as the Q4_K kernel's 8-row
form uses it).

    python tools/column_kernels.py [--lib LIBGGML_CPU.so ...] [--widths 1,2,4,8,16] [--rounds 60]
        [--kernel q4_k,q6_k] [--from-memory MB] [--threads T]

--from-memory MB: the weights copied over MB megabytes (more than the last-level cache holds), each call on
the next copy, so that they stream from memory as in a model's pass; --threads T: T threads at once, each on
its own copies (ctypes lets go of the GIL), the time per call being the wall time of the round over the calls
of one thread, so that the threads share the memory's bandwidth as a pass's threads do.

Without --lib: the libggml-cpu that llama-cpp-python ships in this environment. Needs an x86-64 build with
simul's patch and AVX-512 VNNI (the kernels these names have on other CPUs are other code).
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from simul.decoding.backend.exactness import shipped_libraries

QK_K = 256
Q8_K_BYTES = 4 + QK_K + 2 * (QK_K // 16)  # block_q8_K: float d, int8 qs[256], int16 bsums[16]
Q4_KX8_BYTES = 8 * 144  # block_q4_Kx8: fp16 d[8], fp16 dmin[8], scales[96], qs[1024]
Q6_K_BYTES = 128 + 64 + 16 + 2  # block_q6_K: ql[128], qh[64], int8 scales[16], fp16 d


@dataclass
class Shape:
    rows: int
    k: int

    @property
    def blocks(self) -> int:
        """super-blocks of QK_K in a row"""
        return self.k // QK_K

    @property
    def column_bytes(self) -> int:
        """one activation column as q8_K blocks"""
        return self.blocks * Q8_K_BYTES


SHAPES = {"q4_k": Shape(512, 1536), "q6_k": Shape(16, 12288)}


def _library_paths(given: list[str]) -> list[Path]:
    if given:
        return [Path(p) for p in given]
    import llama_cpp  # the environment's copy

    found = [p for p in shipped_libraries(llama_cpp, "ggml-cpu") if p.name.startswith("libggml-cpu.so")]
    if not found:
        sys.exit(
            f"column_kernels: no libggml-cpu.so beside {llama_cpp.__file__} (is llama-cpp-python installed?)"
        )
    return [found[0]]


def _load_base() -> None:
    """libggml-cpu needs libggml-base: the environment's, loaded first and globally, so that a copy of
    libggml-cpu elsewhere resolves to it."""
    import llama_cpp

    for base in shipped_libraries(llama_cpp, "ggml-base")[:1]:
        ctypes.CDLL(str(base), mode=ctypes.RTLD_GLOBAL)


def _load(path: Path) -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
    except OSError as e:
        sys.exit(f"column_kernels: cannot load {path}: {e}")
    for name in ("ggml_gemv_q4_K_8x8_q8_K_cols", "ggml_vec_dot_q6_K_q8_K_tile", "quantize_row_q8_K"):
        if not hasattr(lib, name):
            sys.exit(f"column_kernels: {path} has no {name}: not a build with simul's patch (make setup)")
    vp, sz, i = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
    lib.ggml_gemv_q4_K_8x8_q8_K_cols.argtypes = [i, vp, sz, vp, vp, sz, i, i]
    lib.ggml_vec_dot_q6_K_q8_K_tile.argtypes = [i, vp, sz, vp, sz, vp, sz, i, i]
    lib.quantize_row_q8_K.argtypes = [vp, vp, ctypes.c_int64]
    return lib


def _weights(kernel: str, shape: Shape, rng: np.random.Generator) -> npt.NDArray[np.uint8]:
    nb = shape.blocks
    d = np.frombuffer(np.float16(1 / 64).tobytes(), np.uint8)
    if kernel == "q4_k":
        w = rng.integers(0, 256, size=(shape.rows // 8, nb, Q4_KX8_BYTES), dtype=np.uint8)
        for j in range(16):  # d[8] and dmin[8]
            w[:, :, 2 * j : 2 * j + 2] = d
    else:
        w = rng.integers(0, 256, size=(shape.rows, nb, Q6_K_BYTES), dtype=np.uint8)
        w[:, :, Q6_K_BYTES - 2 :] = d
    return np.ascontiguousarray(w)


def _run(
    lib: ctypes.CDLL,
    kernel: str,
    shape: Shape,
    w: list[int],
    y: npt.NDArray[np.uint8],
    out: npt.NDArray[np.float32],
    n: int,
    calls: int,
    start: int,
) -> None:
    """``calls`` products of the first n q8_K activation columns ``y`` with the weights at the addresses ``w``
    (one call each, in turn from ``start``) into ``out``."""
    by = shape.column_bytes
    if kernel == "q4_k":
        f = lib.ggml_gemv_q4_K_8x8_q8_K_cols
        for c in range(calls):
            f(shape.k, out.ctypes.data, shape.rows, w[(start + c) % len(w)], y.ctypes.data, by, n, shape.rows)
    else:
        f = lib.ggml_vec_dot_q6_K_q8_K_tile
        bx = shape.blocks * Q6_K_BYTES
        for c in range(calls):
            wc = w[(start + c) % len(w)]
            f(shape.k, out.ctypes.data, shape.rows, wc, bx, y.ctypes.data, by, shape.rows, n)


def _copies(w: npt.NDArray[np.uint8], megabytes: int) -> npt.NDArray[np.uint8]:
    """The weights repeated over ``megabytes`` MB (at least once)."""
    count = max(1, megabytes * 1_000_000 // w.nbytes)
    return np.ascontiguousarray(np.broadcast_to(w, (count, *w.shape)))


def _timed_round(
    lib: ctypes.CDLL,
    kernel: str,
    shape: Shape,
    parts: list[list[int]],
    y: npt.NDArray[np.uint8],
    outs: list[npt.NDArray[np.float32]],
    n: int,
    calls: int,
    start: int,
) -> float:
    """Nanoseconds per call of one round: each thread t makes ``calls`` calls on its addresses parts[t], from
    the start-th on (a round after another goes on to copies the other has not just read)."""
    if len(parts) == 1:  # in this thread: starting one would add its start-up to a round of 20 calls
        t0 = time.perf_counter_ns()
        _run(lib, kernel, shape, parts[0], y, outs[0], n, calls, start)
        return (time.perf_counter_ns() - t0) / calls
    threads = [
        threading.Thread(target=_run, args=(lib, kernel, shape, part, y, out, n, calls, start))
        for part, out in zip(parts, outs, strict=True)
    ]
    t0 = time.perf_counter_ns()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return (time.perf_counter_ns() - t0) / calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--lib", action="append", default=[], help="a libggml-cpu.so to time (repeat to compare builds)"
    )
    ap.add_argument("--widths", default="1,2,4,8,16")
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--kernel", default="q4_k,q6_k")
    ap.add_argument(
        "--from-memory", type=int, default=0, metavar="MB", help="stream the weights from MB of memory"
    )
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if args.threads < 1:
        sys.exit("column_kernels: --threads takes 1 or more")
    kernels = args.kernel.split(",")
    unknown = [k for k in kernels if k not in SHAPES]
    if unknown:
        sys.exit(f"column_kernels: no kernel {', '.join(unknown)}; --kernel takes {','.join(SHAPES)}")
    try:
        widths = [int(w) for w in args.widths.split(",")]
    except ValueError:
        sys.exit(f"column_kernels: --widths takes column counts separated by commas, not {args.widths!r}")
    if not all(1 <= w <= 64 for w in widths):
        sys.exit("column_kernels: each width is 1 to 64 columns (what one call of the kernels takes)")
    paths = _library_paths(args.lib)
    _load_base()
    libs = [_load(p) for p in paths]
    for j, p in enumerate(paths):
        print(f"[{j + 1}] {p}")
    rng = np.random.default_rng(1)
    for kernel in kernels:
        shape = SHAPES[kernel]
        w = _weights(kernel, shape, rng)
        store = _copies(w, args.from_memory) if args.from_memory else w[np.newaxis]
        addresses = [store.ctypes.data + i * w.nbytes for i in range(len(store))]
        # thread t takes every threads-th copy from t on (one copy: all threads on it)
        parts = [addresses[t :: args.threads] or addresses for t in range(args.threads)]
        x = rng.standard_normal((max(widths), shape.k)).astype(np.float32)
        by = shape.column_bytes
        y = np.zeros(max(widths) * by, np.uint8)
        for c in range(max(widths)):
            libs[0].quantize_row_q8_K(x[c].ctypes.data, y[c * by :].ctypes.data, shape.k)
        s = [np.zeros((max(widths), shape.rows), np.float32) for _ in range(args.threads)]
        calls = 20
        where = f"from {store.nbytes / 1e6:.0f} MB of copies" if args.from_memory else "in the cache"
        print(
            f"{kernel}: {shape.rows} rows x {shape.k}, {args.threads} thread(s), weights {where}, best of "
            f"{args.rounds} rounds of {calls} calls"
        )
        for n in widths:
            best = [float("inf")] * len(libs)
            outs: list[npt.NDArray[np.float32]] = []
            for r in range(args.rounds):
                for j, lib in enumerate(libs):
                    start = (r * len(libs) + j) * calls
                    best[j] = min(best[j], _timed_round(lib, kernel, shape, parts, y, s, n, calls, start))
                    if r == 0:
                        outs.append(s[0][:n].copy())
            dp = shape.rows * shape.k * n / 64 * args.threads
            cells = [f"[{j + 1}] {b / 1000:7.2f} us {dp / b:5.2f} dpbusd/ns" for j, b in enumerate(best)]
            same = all(np.array_equal(o.view(np.uint32), outs[0].view(np.uint32)) for o in outs)
            tail = "" if len(libs) == 1 else ("  outputs bit-equal" if same else "  OUTPUTS DIFFER")
            print(f"  n={n:2d}  " + "  ".join(cells) + tail, flush=True)


if __name__ == "__main__":
    main()

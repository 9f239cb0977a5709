"""Exact mode: every forward pass gives each row exactly the logits a one-token pass gives it.

Stock llama.cpp computes a row with other kernels when it shares a pass with other rows, and each kernel
sums its products in its own order (measured with simul.decoding.backend.invariance; docs/results.md, "Exact
mode"). On the CPU, simul's build carries a small patch (``tools/llama-patches/ggml-cpu-exact.patch``, applied
by ``make setup``'s ``tools/llama_wheel.py``) with a process-wide switch, ``ggml_cpu_set_exact``: while it is
on, wider passes take the arithmetic of a one-row pass:

- no tiled K-quant matmul (GGML_CPU_TILED_MM's Q6_K/Q4_K tiles, from 8 rows);
- FlashAttention through its reference arithmetic: no query tiles (from 64 rows) and no split-KV reduction
  (one query row over 512 cells or more, whose chunks follow the thread count);
- repacked weights (the interleaved K-quant/Q4_0 rows of ``use_extra_bufts``) through gemv row by row, each
  row quantized on its own, as a one-row pass does, instead of the 4-row gemm;
- llamafile's tinyBLAS only for quantized weights, whose per-block sums and scale FMAs run in vec_dot's order;
  float weights go through vec_dot;
- in a KV cache shared by several sequences (``--parallel``: ``kv_unified``), each sequence's cells in a
  region of the cache of its own (sequence s: cells s * size / n_seq_max onwards), in the order of its
  positions. Attention visits cells in cache order and skips the masked cells of other sequences, so a
  sequence's sums run over its own cells in its own order, as in a cache of its own. llama.cpp's placement
  puts a token in the first free cell, which after other sequences free cells may lie before the sequence's
  earlier cells.

Since patch simul-exact/4 the narrow passes also have kernels of their own, in both modes: products of Q8_0
and Q5_0 weights with at most 64 activation columns (the model's output head and most of its layers, in a
one-token or a verification pass) go through tile kernels of 4 weight rows by up to 4 columns (with AVX-512,
from 3 columns, 4 rows by up to 8 columns on the columns' quants, offsets and scales packed once per product),
which load each weight block once for all columns and keep 16 multiply-add chains in flight, where ``vec_dot``
keeps one chain per (row, column) and tinyBLAS's 4 x n tiles were slow at small n. Each (row, column) runs the
one-column kernel's arithmetic (the same exact integer sums per block, the same scale product, the same FMA
chain in block order and the same horizontal sum), so every result is bit-equal to ``vec_dot``'s
(tests/test_tile_kernels.py); ``ggml_cpu_set_tile_cols(0)`` turns them off, for measuring
(tools/exact_costs.py's ``-notiles`` modes and ``--kernels``). With AVX-512 the model's K-quant layers have
multi-column kernels too, on the same switch: the repacked Q4_K weights' gemv, which exact mode runs row by
row, takes two rows or more at once (each super-block unpacked once for all of them), and Q6_K products of 2
to 64 columns take a tile; each row keeps the one-row kernel's arithmetic, so these too are bit-equal.
Since patch simul-exact/5, with AVX-512 VNNI both form their exact integer sums with VNNI (dpbusd on the
weights as they lie and dpwssd by the scales for Q4_K; maddubs and dpwssd, two rows to a register, for Q6_K)
and prefetch the weights ahead; they take one column too (``ggml_cpu_tile_from``), since the same integers and
float steps are had there for about half the instructions of the gemv and vec_dot: on the 2-core Intel Xeon
the 1.5B's one-token pass went from 80 to 44 ms (docs/results.md). Since patch simul-exact/6, with AVX-512
VNNI and from 5 columns, the repacked Q4_K gemv runs two groups of 8 rows as one group of 16: their quants
merged once per super-block so that every dword of a register meets the same 4 activations, which each dpbusd
takes as an embedded broadcast, and I and M arriving as one dword per row, so that a float step covers 16
rows; the same integers and float steps per row, in fewer instructions (1.1x as fast at 8 columns, 1.2-1.3x at
16-32, with two threads streaming the weights; docs/results.md). Since patch simul-exact/7, with F16 keys and
values on x86, exact mode's attention takes the query rows of one K/V head together (up to 8: the heads that
share it under grouped-query attention, and the rows of a wider pass), each row with the reference path's
steps and roundings (Q rounded to F16, ggml_vec_dot_f16's FMA chains and reduction, the online softmax with
libm's expf, V accumulated in F16 by ggml_vec_mad_f16's steps), sharing only the loading of each key's K and V
vectors, which the reference repeats for every row: the same bits (tests/test_exact.py holds them to the
reference path's), 4 % less time in an 8-row pass of the 1.5B and 9 % in a 32-row one.

And FlashAttention is on: without it the attention's F16 matrix products go through tinyBLAS's float kernels
and the softmax sums over every cell of the cache. The shared cache matters for speed: with a cache per
sequence llama.cpp cuts a batch into micro-batches of sequences with consecutive ids and equal token counts,
each a pass over the weights (an exact --parallel 8 then ran at 0.97 of --parallel 1's wall time).

The switch is process-wide and read inside a pass, by ggml's worker threads too, so a backend sets it before
each of its forward passes (``apply``), under a lock that lets one pass run at a time in the process
(simul.decoding.backend.llama): an exact and a fast backend can take turns in one process (``simul bench
--compare-modes``), and two threads that decode at once (lanes loading) wait for each other.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: simul's default mode where exactness can be had: exact, since its RT and SSBD run within 5 % of the fast
#: mode's tokens per second (the condition for making it the default): on 100 FLORES streams side by side
#: (2-core AMD EPYC, gemma-3-270m) exact RT ran at 0.999 and exact SSBD 0.2 at 0.976 of fast mode's TPS
#: (docs/results.md)
DEFAULT_EXACT = True
#: the patch version the library reports (ggml_cpu_exact_patch) that this simul knows how to drive
PATCH = "simul-exact/7"
#: the patch's parts (bits of ggml_cpu_set_exact's argument; every one is needed for exactness, each alone
#: serves to measure what it costs: tools/exact_costs.py)
PARTS: dict[str, int] = {"tiled": 1, "flash-attn": 2, "repack": 4, "sgemm": 8, "kv-order": 16}
ALL_PARTS = 31
PATCH_FILE = "tools/llama-patches/ggml-cpu-exact.patch"


@dataclass(frozen=True)
class ExactSupport:
    """Whether this llama.cpp can run in exact mode, and why not."""

    patch: str | None  # what the library reports, None: not patched
    reason: str = ""  # empty when available

    @property
    def available(self) -> bool:
        return self.patch == PATCH and not self.reason


class _Switch:
    """The library's process-wide switch (found once)."""

    def __init__(self) -> None:
        self.searched = False
        self.setter: Any = None  # the C function ggml_cpu_set_exact
        self.patch: str | None = None
        self.state: int | None = None  # the parts last set from here (None: never)

    def find(self, llama_cpp: object) -> None:
        # simul bench loads its lanes' backends in threads at once: the first search must finish before
        # another thread reads its result (a second thread saw no switch, and its lane ran in fast mode)
        with _FIND_LOCK:
            if not self.searched:
                self._search(llama_cpp)
                self.searched = True

    def _search(self, llama_cpp: object) -> None:
        for lib in loaded_libraries(llama_cpp, "ggml-cpu"):
            try:
                setter = lib.ggml_cpu_set_exact
                name = lib.ggml_cpu_exact_patch
            except AttributeError:
                continue
            setter.argtypes = [ctypes.c_int]
            setter.restype = None
            name.argtypes = []
            name.restype = ctypes.c_char_p
            self.setter = setter
            self.patch = (name() or b"").decode("ascii", errors="replace")
            return


_FIND_LOCK = threading.Lock()
_switch = _Switch()
#: dlopen only what is loaded already (POSIX); elsewhere the first library found
_NOLOAD = getattr(os, "RTLD_NOLOAD", 0)


def shipped_libraries(llama_cpp: object, stem: str) -> list[Path]:
    """llama.cpp's shared libraries named ``stem`` shipped beside llama_cpp (ggml-cpu: one, or one per CPU
    variant; pip installs the .so, .so.0 and .so.0.x names as separate files)."""
    base = Path(getattr(llama_cpp, "__file__", "") or ".").parent / "lib"
    if sys.platform == "win32":
        pattern = f"*{stem}*.dll"
    elif sys.platform == "darwin":
        pattern = f"lib{stem}*.dylib"
    else:
        pattern = f"lib{stem}*.so*"
    return sorted(base.glob(pattern))


def loaded_libraries(llama_cpp: object, stem: str) -> Iterator[ctypes.CDLL]:
    """The copies of ``stem`` that llama.cpp loaded, one at a time (dlopen with RTLD_NOLOAD: a switch set in
    another copy of the same library, a separate file, would change nothing; elsewhere than POSIX each copy
    found, opened only when the caller asks for the next)."""
    for path in shipped_libraries(llama_cpp, stem):
        try:
            yield ctypes.CDLL(str(path), mode=_NOLOAD)
        except OSError:
            continue


def exact_support(llama_cpp: object, gpu_layers: int) -> ExactSupport:
    """Can a backend with ``gpu_layers`` offloaded layers run exactly on this llama-cpp-python?"""
    _switch.find(llama_cpp)
    if _switch.setter is None:
        return ExactSupport(
            None,
            "this llama-cpp-python was built without simul's patch (" + PATCH_FILE + "), so wider "
            "forward passes use other kernels than one-token passes; `make setup` builds simul's own wheel",
        )
    if _switch.patch != PATCH:
        return ExactSupport(
            _switch.patch,
            f"this llama-cpp-python carries patch {_switch.patch!r}, not {PATCH!r} that this simul drives; "
            "run `make setup` again",
        )
    if gpu_layers != 0:
        return ExactSupport(
            _switch.patch,
            "layers run on the GPU, whose kernels give a row other logits in every pass wider than one token "
            "(measured on an H100 under every runtime switch: docs/results.md, Exact mode); pass "
            "--n-gpu-layers 0 for an exact run on the CPU",
        )
    return ExactSupport(_switch.patch)


def apply(exact: bool | int) -> None:
    """Set the library's switch for the next forward pass (only when it changes): True every part, False
    none, an int those parts (PARTS; for measuring what each costs, never exact unless ALL_PARTS)."""
    parts = ALL_PARTS if exact is True else 0 if exact is False else int(exact) & ALL_PARTS
    if _switch.state == parts:
        return
    if _switch.setter is None:
        if parts:
            raise RuntimeError("exact mode needs simul's patched llama.cpp (exact_support says why)")
        return
    _switch.setter(parts)
    _switch.state = parts

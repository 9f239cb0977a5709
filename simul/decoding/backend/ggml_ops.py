"""One matrix product through ggml's CPU backend, outside any model: for the kernel tests and measurements.

``MatMul`` quantizes a float weight matrix into a ggml type (``ggml_quantize_chunk``, so every block is
valid), multiplies it with a batch of activation columns (``ggml_mul_mat`` in a one-node graph computed by
``ggml_graph_compute_with_ctx``) and returns the float result, column by column. It drives the same copy of
libggml that llama-cpp-python loaded, so exact mode's switch and the tile kernels' width
(``ggml_cpu_set_tile_cols``, patch simul-exact/4) apply to it as to a model's passes.

Which kernel a product takes on x86 (ggml-cpu.c, ``ggml_compute_forward_mul_mat``): one activation column goes
through the type's ``vec_dot``; from two columns on, quantized weights go through llamafile's tinyBLAS; with
the patch, Q8_0 and Q5_0 weights up to ``tile_cols`` columns (64 by default) go through the tile kernels
instead (one column included; with AVX-512, from 3 columns, the packed tiles of 4 x 8). The tests compare
every column of a wide product with the same column alone through ``vec_dot`` (tiles off), bit for bit.

``RepackedMatMul`` is the same product with the weights in ggml's CPU_REPACK buffer (repack.cpp), as
llama.cpp loads a model's Q4_K weights on x86 with AVX2 (8 rows interleaved, ``block_q4_Kx8``): one column
goes through ``ggml_gemv_q4_K_8x8_q8_K``; in exact mode every column does (the 4-column gemm is off), and
with the patch's tile switch on and AVX-512, two columns or more through its multi-column gemv instead.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from simul.common.cpu import is_x86_64
from simul.decoding.backend.exactness import loaded_libraries

#: ggml's type ids (ggml.h, enum ggml_type) for the weight types simul's models hold
TYPES: dict[str, int] = {
    "f32": 0,
    "f16": 1,
    "q4_0": 2,
    "q5_0": 6,
    "q8_0": 8,
    "q4_k": 12,
    "q5_k": 13,
    "q6_k": 14,
    "q8_k": 15,  # activations of K-quant products, not weights
}


class _InitParams(ctypes.Structure):
    _fields_ = [("mem_size", ctypes.c_size_t), ("mem_buffer", ctypes.c_void_p), ("no_alloc", ctypes.c_bool)]


def _library(llama_cpp: object, stem: str, symbol: str) -> ctypes.CDLL:
    """The copy of ``stem`` that llama.cpp loaded and that has ``symbol`` (exactness.loaded_libraries)."""
    for lib in loaded_libraries(llama_cpp, stem):
        if hasattr(lib, symbol):
            return lib
    raise FileNotFoundError(
        f"no loaded lib{stem} with {symbol} beside {getattr(llama_cpp, '__file__', llama_cpp)}: "
        "is llama-cpp-python installed (make setup)?"
    )


@dataclass
class Product:
    """One computed product: ``out[c]`` is column c's result (n_rows floats), and the seconds it took."""

    out: npt.NDArray[np.float32]
    seconds: float


def _timed(
    compute: Any, args: tuple[Any, ...], read: Callable[[], npt.NDArray[np.float32]], repeats: int
) -> list[Product]:
    """Run a built graph ``repeats`` times (``compute(*args)``, a ggml function that returns 0 on success) and
    keep each run's result (``read()``) with the seconds the compute alone took."""
    results = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        status = compute(*args)
        seconds = time.perf_counter() - t0
        if status != 0:
            raise RuntimeError(f"{compute.__name__} returned {status}")
        results.append(Product(read(), seconds))
    return results


class _Weights:
    """What MatMul and RepackedMatMul share: ``run`` is ``times`` once; ``close`` frees what ``__init__``
    allocated outside Python (nothing, unless a subclass says otherwise); usable as a context manager."""

    def times(self, columns: npt.NDArray[np.float32], threads: int, repeats: int) -> list[Product]:
        raise NotImplementedError

    def run(self, columns: npt.NDArray[np.float32], threads: int = 1) -> Product:
        """``columns`` (n, k) floats -> out (n, n_rows): out[c] = weights @ columns[c], as ggml has it."""
        return self.times(columns, threads, repeats=1)[0]

    def close(self) -> None:
        """Nothing to free here (each product's context is its own)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Ggml:
    """The ggml functions the products need, from llama-cpp-python's own libraries."""

    def __init__(self, llama_cpp: Any | None = None) -> None:
        if llama_cpp is None:
            import llama_cpp as module

            llama_cpp = module
        # importing llama_cpp loaded libllama, and with it ggml-base and ggml-cpu
        self.base = _library(llama_cpp, "ggml-base", "ggml_quantize_chunk")
        self.cpu = _library(llama_cpp, "ggml-cpu", "ggml_graph_compute_with_ctx")
        b, c = self.base, self.cpu
        vp, i64, sz = ctypes.c_void_p, ctypes.c_int64, ctypes.c_size_t
        self._sig(b.ggml_init, [_InitParams], vp)
        self._sig(b.ggml_free, [vp], None)
        self._sig(b.ggml_new_tensor_2d, [vp, ctypes.c_int, i64, i64], vp)
        self._sig(b.ggml_mul_mat, [vp, vp, vp], vp)
        self._sig(b.ggml_new_graph, [vp], vp)
        self._sig(b.ggml_build_forward_expand, [vp, vp], None)
        self._sig(b.ggml_get_data, [vp], vp)
        self._sig(b.ggml_nbytes, [vp], sz)
        self._sig(b.ggml_row_size, [ctypes.c_int, i64], sz)
        self._sig(b.ggml_quantize_chunk, [ctypes.c_int, vp, vp, i64, i64, i64, vp], sz)
        self._sig(c.ggml_graph_compute_with_ctx, [vp, vp, ctypes.c_int], ctypes.c_int)
        self._sig(c.ggml_cpu_init, [], None)
        # the backend API, for products whose weights live in another buffer type (RepackedMatMul)
        self._sig(b.ggml_backend_reg_dev_get, [vp, sz], vp)
        self._sig(b.ggml_backend_reg_get_proc_address, [vp, ctypes.c_char_p], vp)
        self._sig(b.ggml_backend_buft_name, [vp], ctypes.c_char_p)
        self._sig(b.ggml_backend_alloc_ctx_tensors_from_buft, [vp, vp], vp)
        self._sig(b.ggml_backend_buffer_free, [vp], None)
        self._sig(b.ggml_backend_tensor_set, [vp, vp, sz, sz], None)
        self._sig(b.ggml_backend_tensor_get, [vp, vp, sz, sz], None)
        self._sig(b.ggml_backend_graph_compute, [vp, vp], ctypes.c_int)
        self._sig(b.ggml_backend_free, [vp], None)
        self._sig(b.ggml_backend_cpu_buffer_type, [], vp)
        self._sig(c.ggml_backend_cpu_reg, [], vp)
        self._sig(c.ggml_backend_cpu_init, [], vp)
        self._sig(c.ggml_backend_cpu_set_n_threads, [vp, ctypes.c_int], None)
        c.ggml_cpu_init()
        self.set_exact = self._optional(c, "ggml_cpu_set_exact", [ctypes.c_int], None)
        self.get_exact = self._optional(c, "ggml_cpu_get_exact", [], ctypes.c_int)
        self.set_tile_cols = self._optional(c, "ggml_cpu_set_tile_cols", [ctypes.c_int], None)
        self.get_tile_cols = self._optional(c, "ggml_cpu_get_tile_cols", [], ctypes.c_int)
        self.tile_products = self._optional(c, "ggml_cpu_tile_products", [], ctypes.c_int)
        self._tile_from = self._optional(c, "ggml_cpu_tile_from", [ctypes.c_int], ctypes.c_int)

    @staticmethod
    def _sig(fn: Any, argtypes: list[Any], restype: Any) -> None:
        fn.argtypes = argtypes
        fn.restype = restype

    def _optional(self, lib: ctypes.CDLL, name: str, argtypes: list[Any], restype: Any) -> Any:
        fn = getattr(lib, name, None)
        if fn is not None:
            self._sig(fn, argtypes, restype)
        return fn

    def extra_buffer_type(self, name: str) -> int | None:
        """The CPU backend's extra buffer type called ``name`` ("CPU_REPACK", ...), None where it has none."""
        reg = self.cpu.ggml_backend_cpu_reg()
        dev = self.base.ggml_backend_reg_dev_get(reg, 0)
        address = self.base.ggml_backend_reg_get_proc_address(reg, b"ggml_backend_dev_get_extra_bufts")
        if not address:
            return None
        get = ctypes.CFUNCTYPE(ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)(address)
        types = get(dev)
        i = 0
        while types and types[i]:
            if self.base.ggml_backend_buft_name(types[i]) == name.encode():
                return int(types[i])
            i += 1
        return None

    @property
    def has_avx512(self) -> bool:
        fn = getattr(self.cpu, "ggml_cpu_has_avx512", None)
        return fn is not None and bool(fn())

    @property
    def has_tiles(self) -> bool:
        """The library has the tile switch (since patch simul-exact/4)."""
        return self.set_tile_cols is not None

    def tiles_from(self, type_name: str) -> int:
        """The fewest activation columns with which a product of ``type_name`` weights takes the tile
        kernels (repacked Q4_K: the multi-column gemv), 0 where none do. The library says (patch
        simul-exact/5: from one column with AVX-512 VNNI); a library of patch simul-exact/4 has no such call,
        and there Q8_0 and Q5_0 took them from one column, Q6_K and Q4_K from two."""
        if not self.tiles_built:
            return 0
        if self._tile_from is not None:
            return int(self._tile_from(TYPES[type_name]))
        return {"q8_0": 1, "q5_0": 1, "q6_k": 2, "q4_k": 2}.get(type_name, 0)

    @property
    def tiles_built(self) -> bool:
        """The tile kernels are compiled in: x86-64 with AVX2 (elsewhere the switch is there, the kernels
        are not, and every product takes the kernels it took before the patch)."""
        has_avx2 = getattr(self.cpu, "ggml_cpu_has_avx2", None)
        return self.has_tiles and is_x86_64() and has_avx2 is not None and bool(has_avx2())


class MatMul(_Weights):
    """A weight matrix of one ggml type, ready to be multiplied with columns of activations.

    ``weights`` is (n_rows, k) floats; ggml stores it as k-long rows of ``type_name`` blocks. Each ``run``
    builds a small graph in a context of its own (the weights are copied in once per context; runs are cheap
    next to that only for big matrices, so ``times`` computes one graph several times)."""

    def __init__(self, ggml: Ggml, type_name: str, weights: npt.NDArray[np.float32]) -> None:
        self.g = ggml
        self.type = TYPES[type_name]
        w = np.ascontiguousarray(weights, dtype=np.float32)
        self.n_rows, self.k = w.shape
        row = int(ggml.base.ggml_row_size(self.type, self.k))
        self.data = ctypes.create_string_buffer(row * self.n_rows)
        if self.type == TYPES["f32"]:
            ctypes.memmove(self.data, w.ctypes.data, w.nbytes)
        else:
            done = ggml.base.ggml_quantize_chunk(
                self.type, w.ctypes.data, self.data, 0, self.n_rows, self.k, None
            )
            if done != row * self.n_rows:
                raise RuntimeError(f"ggml_quantize_chunk wrote {done} bytes, expected {row * self.n_rows}")

    def _graph(self, columns: npt.NDArray[np.float32]) -> tuple[Any, Any, Any]:
        x = np.ascontiguousarray(columns, dtype=np.float32)
        n = x.shape[0]
        mem = len(self.data) + x.nbytes + n * self.n_rows * 4 + 4 * 1024 * 1024
        ctx = self.g.base.ggml_init(_InitParams(mem, None, False))
        if not ctx:
            raise MemoryError("ggml_init failed")
        a = self.g.base.ggml_new_tensor_2d(ctx, self.type, self.k, self.n_rows)
        b = self.g.base.ggml_new_tensor_2d(ctx, TYPES["f32"], self.k, n)
        ctypes.memmove(self.g.base.ggml_get_data(a), self.data, len(self.data))
        ctypes.memmove(self.g.base.ggml_get_data(b), x.ctypes.data, x.nbytes)
        out = self.g.base.ggml_mul_mat(ctx, a, b)
        graph = self.g.base.ggml_new_graph(ctx)
        self.g.base.ggml_build_forward_expand(graph, out)
        return ctx, graph, out

    def times(self, columns: npt.NDArray[np.float32], threads: int, repeats: int) -> list[Product]:
        ctx, graph, out = self._graph(columns)
        n = int(np.shape(columns)[0])

        def read() -> npt.NDArray[np.float32]:
            buf = (ctypes.c_float * (n * self.n_rows)).from_address(self.g.base.ggml_get_data(out))
            return np.frombuffer(memoryview(buf), dtype=np.float32).reshape(n, self.n_rows).copy()

        try:
            return _timed(self.g.cpu.ggml_graph_compute_with_ctx, (ctx, graph, threads), read, repeats)
        finally:
            self.g.base.ggml_free(ctx)


class RepackedMatMul(_Weights):
    """A weight matrix in ggml's CPU_REPACK buffer, which interleaves it for the repacked gemv/gemm kernels
    (repack.cpp) when its type and shape have them (Q4_K: rows a multiple of 8), as llama.cpp holds a model's
    weights. Products run on a CPU backend (``ggml_backend_graph_compute``), the weights repacked once."""

    def __init__(self, ggml: Ggml, type_name: str, weights: npt.NDArray[np.float32]) -> None:
        self.g = ggml
        buft = ggml.extra_buffer_type("CPU_REPACK")
        if buft is None:
            raise RuntimeError("this build of ggml's CPU backend has no CPU_REPACK buffer type")
        plain = MatMul(ggml, type_name, weights)  # quantized as ggml quantizes, then repacked on upload
        self.type, self.n_rows, self.k = plain.type, plain.n_rows, plain.k
        base = ggml.base
        self._ctx = base.ggml_init(_InitParams(1024 * 1024, None, True))
        if not self._ctx:
            raise MemoryError("ggml_init failed")
        self._a = base.ggml_new_tensor_2d(self._ctx, self.type, self.k, self.n_rows)
        self._buffer = base.ggml_backend_alloc_ctx_tensors_from_buft(self._ctx, buft)
        if not self._buffer:
            base.ggml_free(self._ctx)
            raise MemoryError("could not allocate the repacked weights")
        base.ggml_backend_tensor_set(self._a, plain.data, 0, len(plain.data))
        self._backend = ggml.cpu.ggml_backend_cpu_init()

    def close(self) -> None:
        """Free the backend, the repacked weights and their context (once)."""
        if self._backend:
            self.g.base.ggml_backend_free(self._backend)
            self.g.base.ggml_backend_buffer_free(self._buffer)
            self.g.base.ggml_free(self._ctx)
            self._backend = None

    def times(self, columns: npt.NDArray[np.float32], threads: int, repeats: int) -> list[Product]:
        """The product computed ``repeats`` times on one graph, as MatMul.times."""
        if not self._backend:
            raise RuntimeError("the product was closed")
        base = self.g.base
        x = np.ascontiguousarray(columns, dtype=np.float32)
        n = x.shape[0]
        ctx = base.ggml_init(_InitParams(4 * 1024 * 1024, None, True))
        if not ctx:
            raise MemoryError("ggml_init failed")
        buffer = None
        try:
            b = base.ggml_new_tensor_2d(ctx, TYPES["f32"], self.k, n)
            out = base.ggml_mul_mat(ctx, self._a, b)
            graph = base.ggml_new_graph(ctx)
            base.ggml_build_forward_expand(graph, out)
            buffer = base.ggml_backend_alloc_ctx_tensors_from_buft(ctx, base.ggml_backend_cpu_buffer_type())
            if not buffer:
                raise MemoryError("could not allocate the product's activations")
            base.ggml_backend_tensor_set(b, x.ctypes.data, 0, x.nbytes)
            self.g.cpu.ggml_backend_cpu_set_n_threads(self._backend, threads)

            def read() -> npt.NDArray[np.float32]:
                values = np.empty((n, self.n_rows), dtype=np.float32)
                base.ggml_backend_tensor_get(out, values.ctypes.data, 0, values.nbytes)
                return values

            return _timed(base.ggml_backend_graph_compute, (self._backend, graph), read, repeats)
        finally:
            if buffer:
                base.ggml_backend_buffer_free(buffer)
            base.ggml_free(ctx)


def one_column_each(
    product: _Weights, columns: npt.NDArray[np.float32], threads: int = 1
) -> npt.NDArray[np.float32]:
    """Every column alone, a one-column product each: the reference a wide product's columns must equal."""
    return np.stack([product.run(columns[c : c + 1], threads).out[0] for c in range(columns.shape[0])])


def random_matrix(
    rows: int, k: int, seed: int, scale: Sequence[float] = (0.02, 1.0)
) -> npt.NDArray[np.float32]:
    """Weights or activations with a spread of row magnitudes (so the blocks' scales differ)."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((rows, k), dtype=np.float32)
    magnitudes = np.exp(rng.uniform(np.log(scale[0]), np.log(scale[1]), size=(rows, 1))).astype(np.float32)
    return np.ascontiguousarray(values * magnitudes, dtype=np.float32)

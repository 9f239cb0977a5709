"""The kernels of a narrow pass give every column exactly what the one-column kernel gives it (issue 50).

Each weight type of the embedded model (gemma-3-270m Q4_K_M: Q8_0 output head and attention values, Q5_0, Q4_K
and Q6_K layers) and of the tiny test model (float32) is multiplied with 1..64, 72 and 96 activation columns
in one product, and every column is compared, bit for bit, with the same column alone (a one-column product:
``vec_dot``). Since patch simul-exact/4 the Q8_0 and Q5_0 products of up to 64 columns (the default width
since 2026-11-29; 32 before) take the tile kernels (arch/x86/quants.c): with AVX-512, from three columns,
packed tiles of 4 rows by 8 columns (the columns packed once per product, in groups of 8); the other types and
the wider products take the kernels exact mode allows (tinyBLAS for quantized weights, vec_dot for float ones,
no tiled K-quant matmul). In exact mode the Q6_K products of 2 to 64 columns take a tile too (up to 4 rows,
one at a time, by up to 4 columns, each super-block unpacked once for all of them: two columns to a 512-bit
register with AVX-512, one to a 256-bit register with AVX2 alone; since simul-exact/5, with AVX-512 VNNI, from
one column, up to 16 rows two at a time by up to 64 columns, the integer sums formed with maddubs and dpwssd).
The weights have 45 rows, so the tiles at the end of a 16-row block are 1 row high; widths such as 5, 7 and 13
leave 1-7 columns in the last tile (at odd widths one column alone in a pair).

The model's Q4_K weights are not multiplied by ``vec_dot``: llama.cpp repacks them (8 rows interleaved) and
multiplies them by ``ggml_gemv_q4_K_8x8_q8_K``, column by column in exact mode. The patch gives that gemv a
multi-column form (two columns to a 512-bit register with AVX-512, one to a 256-bit register with AVX2; with
AVX-512 VNNI, since simul-exact/5, its integer sums by dpbusd and dpwssd, from one column; since
simul-exact/6, from 5 columns, two groups of 8 rows as one of 16); the repacked products below
(``RepackedMatMul``, with rows enough that the threads' chunks hold such pairs) hold it to the gemv alone.
``Ggml.tiles_from`` says from which width each type takes them in this build. The activations of the K-quant
products are quantized to q8_K by a vectorized form of the reference since simul-exact/5, held to it byte for
byte below.

The named models' weight types (Qwen2.5-Coder 1.5B: Q4_K and Q6_K at rows of 1536 and 8960; 0.5B: Q5_0 and
Q8_0 at 896, Q4_K and Q6_K at 4864) are checked the same way at their own row lengths, in exact mode; on this
code, fast mode's wide Q4_K and Q6_K products differ from the one-column ones from 4 and 8 columns.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from simul.decoding.backend import exactness
from simul.decoding.backend.ggml_ops import (
    TYPES as GGML_TYPES,
)
from simul.decoding.backend.ggml_ops import (
    Ggml,
    MatMul,
    RepackedMatMul,
    one_column_each,
    random_matrix,
)

WIDTHS = [*range(1, 65), 72, 96]
#: (type, row length): K-quants need rows of 256-element super-blocks; the model's rows are 640 or 1024 long
TYPES = [
    ("q8_0", 640),
    ("q5_0", 640),
    ("q8_0", 2048),  # a longer row: 64 blocks a column, so the packed tiles' buffer grows
    ("q4_k", 1024),
    ("q6_k", 1024),
    ("f32", 640),
]
TILED = {"q8_0", "q5_0"}
TILE_COLS = 64  # the patch's default
#: rows of the repacked Q4_K products: threads take them in chunks of 24 or 32 rows (a quarter of a thread's
#: share, rounded to the 8 interleaved rows), which hold both pairs of groups (with AVX-512 VNNI, from 5
#: columns, two groups run as 16 rows) and a group alone; with fewer rows every chunk held one group
Q4_K_ROWS = 200
STARTED_COLS: list[int] = []  # the width the library had when this module's fixture first asked


@pytest.fixture(scope="module")
def ggml() -> Iterator[Ggml]:
    from simul.decoding.backend import _llama

    support = exactness.exact_support(_llama(), 0)
    if support.patch != exactness.PATCH:
        pytest.skip(f"no exact mode here: {support.reason}")
    g = Ggml(_llama())
    before_exact, before_cols = g.get_exact(), g.get_tile_cols()
    STARTED_COLS.append(before_cols)
    yield g
    g.set_exact(before_exact)
    g.set_tile_cols(before_cols)


def _reference(
    g: Ggml, product: MatMul | RepackedMatMul, columns: npt.NDArray[np.float32], threads: int
) -> npt.NDArray[np.float32]:
    """Each column alone, tiles off, so a one-column product takes the one-row kernel: vec_dot, or for
    repacked weights the gemv (one column never takes the multi-column gemv either)."""
    g.set_tile_cols(0)
    try:
        return one_column_each(product, columns, threads)
    finally:
        g.set_tile_cols(TILE_COLS)


def _every_width(
    g: Ggml,
    product: MatMul | RepackedMatMul,
    columns: npt.NDArray[np.float32],
    alone: npt.NDArray[np.float32],
    compared_from: Callable[[int], int] = lambda n: 0,
) -> tuple[dict[int, list[int]], list[int]]:
    """Each width's product of the first n columns against the columns alone: the widths with columns
    (from ``compared_from(n)`` on) unlike their one-column product, and the widths the tile kernels took."""
    unequal, tiled = {}, []
    for n in WIDTHS:
        before = g.tile_products()
        wide = product.run(columns[:n], threads=2).out
        if g.tile_products() > before:
            tiled.append(n)
        differ = [c for c in range(compared_from(n), n) if wide[c].tobytes() != alone[c].tobytes()]
        if differ:
            unequal[n] = differ
    return unequal, tiled


@pytest.mark.parametrize("mode", ["exact", "fast"])
@pytest.mark.parametrize(("type_name", "k"), TYPES, ids=[f"{t}-{k}" for t, k in TYPES])
def test_every_column_of_a_wide_product_equals_the_column_alone(
    ggml: Ggml, type_name: str, k: int, mode: str
) -> None:
    if mode == "fast" and type_name not in TILED:
        pytest.skip(
            "fast mode lets wide K-quant and float products sum in other orders (exact mode's reason)"
        )
    ggml.set_exact(exactness.ALL_PARTS if mode == "exact" else 0)
    ggml.set_tile_cols(TILE_COLS)
    product = MatMul(ggml, type_name, random_matrix(45, k, seed=1))
    columns = random_matrix(max(WIDTHS), k, seed=2, scale=(0.1, 3.0))
    alone = _reference(ggml, product, columns, threads=2)
    assert np.all(np.isfinite(alone)) and np.abs(alone).max() > 0
    unequal, tiled = _every_width(ggml, product, columns, alone)
    assert not unequal, f"{type_name} ({mode}): columns unlike their one-column product at widths {unequal}"
    # and the widths compared are the ones the tile kernels took (the others took the kernels before them)
    assert tiled == _tiled_widths(ggml, type_name, mode), tiled


def _tiled_widths(g: Ggml, type_name: str, mode: str) -> list[int]:
    """The widths whose products the tile kernels take: Q8_0 and Q5_0 up to the tile width; in exact mode,
    Q6_K from the library's first width (one column with AVX-512 VNNI, else two; in fast mode llama.cpp's
    tiled K-quant matmul takes it from 8)."""
    if not g.tiles_built:
        return []
    if type_name in TILED:
        return [n for n in WIDTHS if n <= TILE_COLS]
    if type_name == "q6_k" and mode == "exact":
        return [n for n in WIDTHS if g.tiles_from("q6_k") <= n <= TILE_COLS]
    return []


def test_the_tile_kernels_start_where_the_cpu_allows(ggml: Ggml) -> None:
    """With AVX-512 VNNI the Q6_K tile and the multi-column Q4_K gemv take one column too (their form is the
    faster one there); without VNNI they start at two columns, as before, and the one-column products keep
    vec_dot and the gemv. Q8_0 and Q5_0 take tiles from one column wherever they are built."""
    if not ggml.tiles_built:
        assert all(ggml.tiles_from(t) == 0 for t in ("q8_0", "q5_0", "q6_k", "q4_k"))
        return
    # what the library was built for (ggml's own report of its compile-time instruction sets)
    has_vnni = getattr(ggml.cpu, "ggml_cpu_has_avx512_vnni", None)
    vnni = ggml.has_avx512 and has_vnni is not None and bool(has_vnni())
    assert ggml.tiles_from("q8_0") == ggml.tiles_from("q5_0") == 1
    assert ggml.tiles_from("q6_k") == ggml.tiles_from("q4_k") == (1 if vnni else 2)
    assert ggml.tiles_from("f32") == 0


def _exact_product_kind(ggml: Ggml, repacked: bool) -> type[MatMul] | type[RepackedMatMul]:
    """Exact mode with the tiles at the default width, and the product that holds the weights as llama.cpp
    does: repacked (skipped where this build has no CPU_REPACK buffer type) or plain."""
    if repacked and ggml.extra_buffer_type("CPU_REPACK") is None:
        pytest.skip("no CPU_REPACK buffer type in this build")
    ggml.set_exact(exactness.ALL_PARTS)
    ggml.set_tile_cols(TILE_COLS)
    return RepackedMatMul if repacked else MatMul


@pytest.mark.parametrize(
    ("type_name", "k", "repacked"),
    [("q5_0", 640, False), ("q8_0", 640, False), ("q6_k", 1024, False), ("q4_k", 1024, True)],
)
def test_the_tiles_do_not_depend_on_the_thread_count(
    ggml: Ggml, type_name: str, k: int, repacked: bool
) -> None:
    """Threads split a product by weight rows (16 at a time; repacked Q4_K in groups of 8), so a tile's rows
    move between threads: the results must not."""
    kind = _exact_product_kind(ggml, repacked)
    with kind(ggml, type_name, random_matrix(200, k, seed=3)) as product:
        columns = random_matrix(7, k, seed=4)
        outs = [product.run(columns, threads=t).out.tobytes() for t in (1, 2, 3)]
    assert outs[0] == outs[1] == outs[2]


def test_a_wide_product_is_a_real_product(ggml: Ggml) -> None:
    """The control: the tile kernels compute the product (near numpy's float product, up to Q8_0's
    quantization), and a wrong tile (columns swapped) would be caught by the equality above."""
    ggml.set_exact(exactness.ALL_PARTS)
    ggml.set_tile_cols(TILE_COLS)
    w = random_matrix(45, 640, seed=5)
    x = random_matrix(6, 640, seed=6)
    got = MatMul(ggml, "q8_0", w).run(x, threads=2).out
    want = x @ w.T
    assert np.allclose(got, want, rtol=0.05, atol=0.05 * float(np.abs(want).max()))
    assert got[0].tobytes() != got[1].tobytes()


def test_the_default_tile_width_is_the_patchs(ggml: Ggml) -> None:
    """The width the library had when the fixture first asked: the patch's default unless the environment
    set another (or a test before this module changed it, which none does)."""
    import os

    given = os.environ.get("GGML_CPU_TILE_COLS")
    assert [int(given) if given else TILE_COLS] == STARTED_COLS


def test_the_tile_width_switch_is_read_back(ggml: Ggml) -> None:
    product = MatMul(ggml, "q8_0", random_matrix(45, 640, seed=7))
    columns = random_matrix(4, 640, seed=8)
    ggml.set_tile_cols(0)
    assert ggml.get_tile_cols() == 0
    before = ggml.tile_products()
    product.run(columns, threads=2)
    assert ggml.tile_products() == before
    ggml.set_tile_cols(3)  # narrower than the product: not tiled either
    product.run(columns, threads=2)
    assert ggml.tile_products() == before
    ggml.set_tile_cols(TILE_COLS)
    assert ggml.get_tile_cols() == TILE_COLS
    product.run(columns, threads=2)
    assert ggml.tile_products() == before + (1 if ggml.tiles_built else 0)


@pytest.mark.parametrize("mode", ["exact", "fast"])
def test_every_column_of_a_repacked_q4_k_product_equals_its_gemv_alone(ggml: Ggml, mode: str) -> None:
    """Exact mode: every column of 1..64, 72 and 96 through the gemv, the multi-column one from 2 columns.
    Fast mode: the 4-column gemm takes the columns in fours, the gemv the last 1-3 (from 2 of them the
    multi-column gemv, on columns that do not start at the product's first)."""
    if ggml.extra_buffer_type("CPU_REPACK") is None:
        pytest.skip("no CPU_REPACK buffer type in this build")
    ggml.set_exact(exactness.ALL_PARTS if mode == "exact" else 0)
    ggml.set_tile_cols(TILE_COLS)
    # 200 rows: 25 groups of 8 interleaved rows, split between the threads in chunks of 24 or 32 rows, so that
    # with AVX-512 VNNI, from 5 columns, pairs of groups run as 16 rows and a chunk's odd group as 8; rows of
    # 1024: 4 super-blocks
    with RepackedMatMul(ggml, "q4_k", random_matrix(Q4_K_ROWS, 1024, seed=11)) as product:
        columns = random_matrix(max(WIDTHS), 1024, seed=12, scale=(0.1, 3.0))
        alone = _reference(ggml, product, columns, threads=2)
        assert np.all(np.isfinite(alone)) and np.abs(alone).max() > 0
        # the repacked weights are really in use: the gemv's sums differ from vec_dot's in the last bits
        plain = MatMul(ggml, "q4_k", random_matrix(Q4_K_ROWS, 1024, seed=11)).run(columns[:8], threads=2).out
        assert np.allclose(plain, alone[:8], rtol=1e-4, atol=1e-3) and plain.tobytes() != alone[:8].tobytes()
        gemv_from = (lambda n: 0) if mode == "exact" else (lambda n: n - n % 4)
        unequal, multi = _every_width(ggml, product, columns, alone, gemv_from)
        assert not unequal, f"q4_k repacked ({mode}): columns unlike their gemv alone at widths {unequal}"
        # AVX2: one column to a 256-bit register; AVX-512: two to a 512-bit one; AVX-512 VNNI: from one column
        start = ggml.tiles_from("q4_k")
        want = [n for n in WIDTHS if (n if mode == "exact" else n % 4) >= start] if start else []
        assert multi == want, multi


def _extreme_weights(rows: int, k: int) -> npt.NDArray[np.float32]:
    """Weights whose quants sit at the ends of their range: each 16-value group alternates between two
    values far apart (every quant 0 or the largest), with group magnitudes that differ, so that one sub-block
    of each super-block takes the largest scale, and some rows negative."""
    pattern = np.where((np.arange(k) // 2) % 2 == 0, 1.0, -1.0).astype(np.float32)
    groups = np.repeat(np.linspace(0.2, 1.0, k // 16, dtype=np.float32), 16)
    signs = np.where(np.arange(rows) % 3 == 0, -1.0, 1.0).astype(np.float32)[:, None]
    return np.ascontiguousarray(signs * pattern * groups * 4.0, dtype=np.float32)


def _extreme_columns(n: int, k: int) -> npt.NDArray[np.float32]:
    """Activations that quantize to -127 or 127 throughout (every value of one magnitude), with signs that
    follow the weights' pattern in some columns (the largest sums of one sign) and not in others."""
    rng = np.random.default_rng(5)
    pattern = np.where((np.arange(k) // 2) % 2 == 0, 1.0, -1.0).astype(np.float32)
    cols = np.empty((n, k), dtype=np.float32)
    for c in range(n):
        if c % 3 == 0:
            cols[c] = pattern
        elif c % 3 == 1:
            cols[c] = -pattern
        else:
            cols[c] = rng.choice(np.array([-1.0, 1.0], dtype=np.float32), size=k)
    return cols * 2.5


@pytest.mark.parametrize("type_name", ["q4_k", "q6_k"])
def test_the_k_quant_kernels_are_exact_at_the_ends_of_their_ranges(ggml: Ggml, type_name: str) -> None:
    """The VNNI forms rest on bounds (a dpbusd dword's 16 products fit an int16 for dpwssd; maddubs never
    saturates on 6-bit quants): quants at 0 and at their largest value, the largest scales and activations of
    magnitude 127 throughout, against each column alone."""
    kind = _exact_product_kind(ggml, repacked=type_name == "q4_k")
    with kind(ggml, type_name, _extreme_weights(Q4_K_ROWS if type_name == "q4_k" else 48, 1536)) as product:
        columns = _extreme_columns(17, 1536)
        alone = _reference(ggml, product, columns, threads=2)
        assert np.all(np.isfinite(alone)) and np.abs(alone).max() > 0
        for n in (1, 2, 3, 4, 5, 8, 16, 17):
            wide = product.run(columns[:n], threads=2).out
            assert wide.tobytes() == alone[:n].tobytes(), f"{type_name}: width {n} unlike its columns alone"


class _TypeTraitsCpu(ctypes.Structure):
    _fields_ = [
        ("from_float", ctypes.c_void_p),
        ("vec_dot", ctypes.c_void_p),
        ("vec_dot_type", ctypes.c_int),
        ("nrows", ctypes.c_int64),
    ]


_FROM_FLOAT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


def _q8_k_blocks(values: npt.NDArray[np.float32]) -> list[npt.NDArray[np.float32]]:
    """Rows of activations that test the quantizer's edges: random magnitudes, a largest |x| held by values of
    both signs (the first one's sign counts), halfway cases of the rounding, zeros, tiny and subnormal values,
    a block of zeros beside a block of values, NaN and infinity."""
    rng = np.random.default_rng(9)
    rows = [values[i] for i in range(len(values))]
    tie = rng.standard_normal(512).astype(np.float32)
    tie[[3, 40, 300]] = [-5.0, 5.0, -5.0]
    rows.append(tie)
    tie2 = tie.copy()
    tie2[3] = 5.0
    rows.append(tie2)
    halves = (np.arange(512, dtype=np.float32) - 256.0) / 2.0  # iscale * x lands on .5 often
    rows.append(halves)
    rows.append(np.concatenate([np.zeros(256, np.float32), rng.standard_normal(256).astype(np.float32)]))
    rows.append((rng.standard_normal(512) * 1e-40).astype(np.float32))
    rows.append((rng.standard_normal(512) * 1e-30).astype(np.float32))
    for special in (np.nan, np.inf, -np.inf):
        row = rng.standard_normal(512).astype(np.float32)
        row[17] = special
        rows.append(row)
    return rows


def test_the_activations_quantize_as_the_reference_does(ggml: Ggml) -> None:
    """The K-quant products' activations are quantized to q8_K by the CPU backend's from_float (with AVX-512
    a vectorized form since patch simul-exact/5); every byte, scale and sum must be the reference's
    (quantize_row_q8_K_ref), or a one-token pass would not be what it was. The sums of a block of zeros are
    the one thing the reference leaves unwritten."""
    get_traits = ggml.cpu.ggml_get_type_traits_cpu
    get_traits.argtypes, get_traits.restype = [ctypes.c_int], ctypes.c_void_p
    traits = ctypes.cast(get_traits(GGML_TYPES["q8_k"]), ctypes.POINTER(_TypeTraitsCpu)).contents
    from_float = _FROM_FLOAT(traits.from_float)
    ref = ggml.base.quantize_row_q8_K_ref
    ref.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    ref.restype = None
    block = 4 + 256 + 32  # d, quants, 16 sums
    for row in _q8_k_blocks(random_matrix(300, 512, seed=4, scale=(1e-3, 30.0))):
        x = np.ascontiguousarray(row, dtype=np.float32)
        got = np.full(2 * block, 0x5A, dtype=np.uint8)
        want = got.copy()
        from_float(x.ctypes.data, got.ctypes.data, 512)
        ref(x.ctypes.data, want.ctypes.data, 512)
        for b in range(2):
            g, w = got[b * block : (b + 1) * block], want[b * block : (b + 1) * block]
            zero_block = not np.any(x[b * 256 : (b + 1) * 256])
            end = 4 + 256 if zero_block else block
            assert g[:end].tobytes() == w[:end].tobytes(), f"block {b} of {x[:4]}...: quantized otherwise"


#: (named model, weight type, row length) of every matrix the named models multiply (simul models list);
#: their Q4_K weights are repacked by llama.cpp, as RepackedMatMul holds them
NAMED_MODEL_TYPES = [
    ("qwen2.5-coder-1.5b", "q4_k", 1536),
    ("qwen2.5-coder-1.5b", "q4_k", 8960),
    ("qwen2.5-coder-1.5b", "q6_k", 1536),
    ("qwen2.5-coder-1.5b", "q6_k", 8960),
    ("qwen2.5-coder-0.5b", "q4_k", 4864),
    ("qwen2.5-coder-0.5b", "q5_0", 896),
    ("qwen2.5-coder-0.5b", "q6_k", 4864),
    ("qwen2.5-coder-0.5b", "q8_0", 896),
]


@pytest.mark.parametrize(
    ("model", "type_name", "k"), NAMED_MODEL_TYPES, ids=[f"{m}-{t}-{k}" for m, t, k in NAMED_MODEL_TYPES]
)
def test_every_weight_type_of_the_named_models_is_exact_at_every_width(
    ggml: Ggml, model: str, type_name: str, k: int
) -> None:
    """In exact mode, every column of a product of 1..64, 72 or 96 columns of the named models' weight types
    at their own row lengths equals the column alone (repacked Q4_K: its gemv alone)."""
    kind = _exact_product_kind(ggml, repacked=type_name == "q4_k")
    # 24 rows: one 16-row block and part of the next; repacked Q4_K: Q4_K_ROWS (above)
    rows = Q4_K_ROWS if type_name == "q4_k" else 24
    with kind(ggml, type_name, random_matrix(rows, k, seed=21)) as product:
        columns = random_matrix(max(WIDTHS), k, seed=22, scale=(0.1, 3.0))
        alone = _reference(ggml, product, columns, threads=2)
        assert np.all(np.isfinite(alone)) and np.abs(alone).max() > 0
        unequal, _ = _every_width(ggml, product, columns, alone)
    assert not unequal, f"{model} {type_name} x {k}: columns unlike their one-column product at {unequal}"


_SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # GGUF value types


def _matrix_types(path: Path) -> set[tuple[str, int]]:
    """(weight type, row length) of every matrix in a GGUF file, from its header alone (gguf's GGUFReader
    maps every tokenizer string and takes about 15 s on these models)."""
    import gguf

    with path.open("rb") as f:

        def take(fmt: str) -> int:
            return int(struct.unpack("<" + fmt, f.read(struct.calcsize(fmt)))[0])

        def skip_string() -> None:
            f.seek(take("Q"), 1)

        def skip_value(kind: int) -> None:
            if kind == 8:
                skip_string()
            elif kind == 9:
                inner, count = take("I"), take("Q")
                if inner == 8:
                    for _ in range(count):
                        skip_string()
                else:
                    f.seek(_SCALAR_SIZES[inner] * count, 1)
            else:
                f.seek(_SCALAR_SIZES[kind], 1)

        assert f.read(4) == b"GGUF"
        take("I")  # version
        n_tensors, n_kv = take("Q"), take("Q")
        for _ in range(n_kv):
            skip_string()
            skip_value(take("I"))
        held = set()
        for _ in range(n_tensors):
            skip_string()
            dims = [take("Q") for _ in range(take("I"))]
            kind = take("I")
            take("Q")  # offset
            if len(dims) >= 2:
                held.add((gguf.GGMLQuantizationType(kind).name.lower(), dims[0]))
    return held


def test_the_named_models_hold_exactly_the_types_tested() -> None:
    """The list above against the installed models' own GGUF files (each model skipped when not installed)."""
    from simul.request import model_catalog as catalog

    checked = 0
    for model in catalog.CATALOG:
        if not catalog.availability(model).installed:
            continue
        held = _matrix_types(catalog.resolve(model))
        assert held == {(t, k) for m, t, k in NAMED_MODEL_TYPES if m == model.name}, model.name
        checked += 1
    if not checked:
        pytest.skip("no named model is installed (simul models list)")

"""The kernels of a narrow pass give every column exactly what the one-column kernel gives it (issue 50).

Each weight type of the embedded model (gemma-3-270m Q4_K_M: Q8_0 output head and attention values, Q5_0, Q4_K
and Q6_K layers) and of the tiny test model (float32) is multiplied with 1..64, 72 and 96 activation columns
in one product, and every column is compared, bit for bit, with the same column alone (a one-column product:
``vec_dot``). Since patch simul-exact/4 the Q8_0 and Q5_0 products of up to 64 columns (the default width
since 2026-11-29; 32 before) take the tile kernels (arch/x86/quants.c): with AVX-512, from three columns,
packed tiles of 4 rows by 8 columns (the columns packed once per product, in groups of 8); the other types and
the wider products take the kernels exact mode allows (tinyBLAS for quantized weights, vec_dot for float ones,
no tiled K-quant matmul). The weights have 45 rows, so the tiles at the end of a 16-row block are 1 row high;
widths such as 5, 7 and 13 leave 1-7 columns in the last tile (at odd widths one column alone in a pair).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pytest

from simul.decoding.backend import exactness
from simul.decoding.backend.ggml_ops import Ggml, MatMul, one_column_each, random_matrix

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
    g: Ggml, product: MatMul, columns: npt.NDArray[np.float32], threads: int
) -> npt.NDArray[np.float32]:
    """Each column alone through vec_dot: tiles off, so a one-column product takes the one-row kernel."""
    g.set_tile_cols(0)
    try:
        return one_column_each(product, columns, threads)
    finally:
        g.set_tile_cols(TILE_COLS)


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
    unequal, tiled = {}, []
    for n in WIDTHS:
        before = ggml.tile_products()
        wide = product.run(columns[:n], threads=2).out
        if ggml.tile_products() > before:
            tiled.append(n)
        differ = [c for c in range(n) if wide[c].tobytes() != alone[c].tobytes()]
        if differ:
            unequal[n] = differ
    assert not unequal, f"{type_name} ({mode}): columns unlike their one-column product at widths {unequal}"
    # and the widths compared are the ones the tile kernels took (the others took the kernels before them)
    assert tiled == (
        [n for n in WIDTHS if n <= TILE_COLS] if type_name in TILED and ggml.tiles_built else []
    ), tiled


@pytest.mark.parametrize("type_name", sorted(TILED))
def test_the_tiles_do_not_depend_on_the_thread_count(ggml: Ggml, type_name: str) -> None:
    """Threads split a product by weight rows (16 at a time), so a tile's rows move between threads: the
    results must not."""
    ggml.set_exact(exactness.ALL_PARTS)
    ggml.set_tile_cols(TILE_COLS)
    product = MatMul(ggml, type_name, random_matrix(200, 640, seed=3))
    columns = random_matrix(7, 640, seed=4)
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

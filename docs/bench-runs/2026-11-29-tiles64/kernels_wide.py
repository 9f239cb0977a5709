"""Each weight type's product alone at widths past 32, the tile kernels up to any width (set_tile_cols(1024)) against
none (tinyBLAS), exact mode, 2 threads, median of 9 ms; run from the repository root with tools/ on the path."""
import os, statistics, sys, time
sys.path.insert(0, "/work/main/tools")
from exact_costs import _ggml, SHAPES
from simul.decoding.backend.exactness import ALL_PARTS
from simul.decoding.backend.ggml_ops import MatMul, random_matrix
g = _ggml(); g.set_exact(ALL_PARTS)
widths = [int(w) for w in sys.argv[1].split(",")]
print("load", os.getloadavg())
c0, w0 = time.process_time(), time.perf_counter()
for type_name, n_rows, k, per_pass, what in SHAPES:
    product = MatMul(g, type_name, random_matrix(n_rows, k, seed=1))
    columns = random_matrix(max(widths), k, seed=2)
    for n in widths:
        med = {}
        for cols in (1024, 0):
            g.set_tile_cols(cols)
            runs = product.times(columns[:n], 2, repeats=9)
            med[cols] = statistics.median(r.seconds for r in runs) * 1000
        print(f"{type_name:5} {what:12} n={n:3d} tiles {med[1024]:8.3f} without {med[0]:8.3f} ratio {med[1024]/med[0]:.3f}", flush=True)
print("load", os.getloadavg(), "cpu/wall", (time.process_time()-c0)/(time.perf_counter()-w0))

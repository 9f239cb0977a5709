# A/B pass costs in one process, interleaved: tinyBLAS on (A) or off below MIN rows (B) in exact mode
import sys, time, os, statistics
import llama_cpp as lc
from simul.request.default_model import default_model_path
widths = [int(w) for w in sys.argv[1].split(",")]; reps = int(sys.argv[2]); mn = sys.argv[3]; typ = sys.argv[4] if len(sys.argv) > 4 else None
lc.llama_backend_init()
m = lc.llama_model_load_from_file(str(default_model_path()).encode(), lc.llama_model_default_params())
cp = lc.llama_context_default_params()
cp.n_ctx = 1024; cp.n_batch = 512; cp.n_ubatch = 512; cp.n_threads = 2; cp.n_threads_batch = 2; cp.flash_attn_type = 1; cp.swa_full = True
ctx = lc.llama_init_from_model(m, cp); mem = lc.llama_get_memory(ctx)
def decode(toks, pos0, all_logits):
    b = lc.llama_batch_init(len(toks), 0, 1)
    for i, t in enumerate(toks):
        b.token[i] = t; b.pos[i] = pos0 + i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1 if all_logits or i == len(toks) - 1 else 0
    b.n_tokens = len(toks); t0 = time.perf_counter(); assert lc.llama_decode(ctx, b) == 0; dt = time.perf_counter() - t0; lc.llama_batch_free(b); return dt
decode(list(range(2000, 2150)), 0, False)
import numpy as np
def logits(n):
    return np.ctypeslib.as_array(lc.llama_get_logits(ctx), shape=(n, 262144)).copy()
for n in widths:
    t = {"A": [], "B": []}; same = True
    for r in range(reps):
        outs = {}
        for k in ("A", "B") if r % 2 == 0 else ("B", "A"):
            if k == "B":
                os.environ["SIMUL_EXP_SGEMM_MIN"] = mn
                if typ: os.environ["SIMUL_EXP_SGEMM_TYPE"] = typ
            else:
                os.environ.pop("SIMUL_EXP_SGEMM_MIN", None); os.environ.pop("SIMUL_EXP_SGEMM_TYPE", None)
            t[k].append(decode(list(range(1000, 1000 + n)), 150, True)); outs[k] = logits(n)
            lc.llama_memory_seq_rm(mem, 0, 150, -1)
        same = same and np.array_equal(outs["A"], outs["B"])
    a, b = statistics.median(t["A"]) * 1e3, statistics.median(t["B"]) * 1e3
    print(f"n={n:2d}: tinyBLAS {a:6.1f} ms  vec_dot {b:6.1f} ms  ratio {b/a:.2f}  bit-equal {same}", flush=True)

"""Repeated forward passes of n rows (logits for every row, as a verification pass) after a 150-token prompt,
for a profiler to sample: the prompt once, then REPS passes, each appending the same n rows again.
Usage: GGML_CPU_EXACT=1 python repeat_passes.py MODEL.gguf N REPS   (2 threads; prints the median ms)"""

import statistics
import sys
import time

import llama_cpp as lc

model, n, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lc.llama_backend_init()
m = lc.llama_model_load_from_file(model.encode(), lc.llama_model_default_params())
cp = lc.llama_context_default_params()
cp.n_ctx = 4096
cp.n_batch = cp.n_ubatch = 512
cp.n_threads = cp.n_threads_batch = 2
ctx = lc.llama_init_from_model(m, cp)
mem = lc.llama_get_memory(ctx)
prompt = list(range(2000, 2150))


def decode(tokens: list[int], pos0: int, logits: list[int]) -> float:
    b = lc.llama_batch_init(len(tokens), 0, 1)
    for i, t in enumerate(tokens):
        b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = t, pos0 + i, 1, logits[i]
        b.seq_id[i][0] = 0
    b.n_tokens = len(tokens)
    t0 = time.perf_counter()
    rc = lc.llama_decode(ctx, b)
    dt = time.perf_counter() - t0
    lc.llama_batch_free(b)
    assert rc == 0, rc
    return dt


decode(prompt, 0, [0] * (len(prompt) - 1) + [1])
ts = []
for _ in range(reps):
    lc.llama_memory_seq_rm(mem, 0, len(prompt), -1)
    ts.append(decode(list(range(1000, 1000 + n)), len(prompt), [1] * n))
print(f"n={n}: median {statistics.median(ts) * 1000:.1f} ms, min {min(ts) * 1000:.1f} ms over {reps} passes")

import sys, time, statistics, tempfile, json
from pathlib import Path
sys.path.insert(0, "/work/main")
from simul.machine import openmp
policy = sys.argv[1]
openmp.choose_wait_policy(2 if policy == "passive" else 0)
from simul.decoding.backend import LlamaBackend
from simul.testing.tiny_gguf import build_tiny_gguf
shapes = [(2, 64, 4, 128), (4, 256, 4, 1024), (4, 512, 8, 2048), (6, 768, 12, 3072), (8, 1024, 16, 4096)]
tmp = Path(tempfile.mkdtemp())
for (l, e, h, f) in shapes:
    p = build_tiny_gguf(tmp / f"m{e}.gguf", seed=0, n_layer=l, n_embd=e, n_head=h, n_ff=f, design="random")
    mb = p.stat().st_size / 2**20
    res = {}
    with LlamaBackend(p, n_ctx=512, n_threads=2, exact=True) as b:
        prompt = b.tokenize("hello world this is a test of the tiny model", add_special=True)
        times = {1: [], 2: []}
        for rep in range(6):
            for n in (1, 2):
                b.set_threads(n)
                b.reset(); b.eval(prompt, logits_from=len(prompt) - 1)
                for t in prompt[:30]:
                    t0 = time.perf_counter(); b.eval([t], logits_from=0); times[n].append(time.perf_counter() - t0)
        for n in (1, 2):
            res[n] = statistics.median(times[n]) * 1000
    print(json.dumps({"policy": policy, "MB": round(mb, 2), "ms_1": round(res[1], 3), "ms_2": round(res[2], 3), "ratio_2_over_1": round(res[2] / res[1], 2)}), flush=True)

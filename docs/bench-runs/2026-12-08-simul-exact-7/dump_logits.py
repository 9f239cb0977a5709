"""Dump every row's logits of a fixed token sequence decoded in passes of n rows (flash attention, exact env).
Usage: python dump.py MODEL OUT.npy N"""
import sys
import numpy as np
from llama_cpp import Llama
model, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
m = Llama(model, n_ctx=1024, n_threads=2, n_threads_batch=2, logits_all=True, verbose=False, flash_attn=True)
toks = m.tokenize(("English: The new diagnostic tool was tested by researchers at Stanford University last year. "
                   "On Monday, scientists from the school of medicine announced a new test that sorts cells by type.\nGerman:").encode())
toks = (toks * 3)[:120]
m.reset()
rows = []
for i in range(0, len(toks), n):
    m.eval(toks[i:i + n])
rows = np.array(m.scores[: m.n_tokens], dtype=np.float32)
np.save(out, rows)
print(out, rows.shape)

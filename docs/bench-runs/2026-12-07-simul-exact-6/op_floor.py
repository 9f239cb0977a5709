"""The fewest vector instructions exact arithmetic leaves a pass of n rows of the 1.5B, and the pass cost they
allow at the measured instruction rate: how far the issue's pass-cost goals can be met on this CPU.

Counts per activation column and super-block of 256 weights, with AVX-512 VNNI, the instructions that every
exact form must issue on the vector ports (p0 and p5; with 512-bit instructions in flight those two are all
there are): loads, broadcasts and prefetches are left out, and so is all work the columns share (unpacking).

- Q4_K, per 16 rows (the simul-exact/6 form issues exactly these): 64 dpbusd (16 x 256 products, 64 an
  instruction), 16 dpwssd by the scales (one per chain of 16 products a dword, the most a word holds),
  4 dpwssd for the mins (16 x 8 products, 32 an instruction), the float steps for I and M (cvt, mul, fma
  each): 90.
- Q6_K, per 2 rows (the simul-exact/6 tile issues these; 22 before): 8 maddubs (512 products, 64 an
  instruction), 8 dpwssd by the scales (vec_dot's 8 lanes of 4 products each take their own scale: one
  multiply per dword), 1 madd for vec_dot's q8sclsub (its shift and subtraction folded into the lanes'
  start value), and the float steps (mul, cvt, fma): 20.

A pass of n rows then needs n x (Q4_K weights / 4096 x 90 + Q6_K weights / 512 x 20) instructions on two
threads' ports. Usage: python op_floor.py MODEL.gguf [RATE_G_PER_S ...]: the rates of two threads' vector
instructions to price them at (default: tools/roofline.c's two-thread figures of 2026-12-07, dpbusd on
registers 10.27 G/s, maddubs+add 5.77 G pairs/s = 11.54 G/s).
"""

import sys

from gguf import GGUFReader

weights = {"Q4_K": 0, "Q6_K": 0}
for t in GGUFReader(sys.argv[1]).tensors:
    if len(t.shape) >= 2 and t.tensor_type.name in weights and t.name != "token_embd.weight":
        weights[t.tensor_type.name] += int(t.n_elements)  # the embedding is read by row, not multiplied
rates = [float(r) for r in sys.argv[2:]] or [10.27, 11.54]
per_row = weights["Q4_K"] / 4096 * 90 + weights["Q6_K"] / 512 * 20
print(f"matrix weights: Q4_K {weights['Q4_K'] / 1e6:.1f} M, Q6_K {weights['Q6_K'] / 1e6:.1f} M")
print(
    f"fewest vector instructions a row: {per_row / 1e6:.2f} M "
    f"(Q4_K {weights['Q4_K'] / 4096 * 90 / 1e6:.2f} M, Q6_K {weights['Q6_K'] / 512 * 20 / 1e6:.2f} M)"
)
for n in (2, 4, 8, 16, 32):
    cells = ", ".join(f"{n * per_row / (r * 1e9) * 1e3:.1f} ms at {r} G/s" for r in rates)
    print(f"n={n:2d}: the kernels' instructions alone take {cells}")

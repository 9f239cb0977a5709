"""Pool wait_policies.py runs (several --json files) by variant: each process's TPS is one observation.

Prints, per variant and method, the mean TPS over its processes, their range, and the ratio to the fastest
variant's mean with a 95 % percentile-bootstrap interval (processes resampled within each variant, 10,000
resamples, seed 0): the between-process scatter of this KVM machine is larger than a process's own rounds.

    python pool.py A.json B.json ...
"""
import json
import random
import statistics
import sys
from collections import defaultdict

obs: dict[tuple[str, str], list[float]] = defaultdict(list)
cpw: dict[str, list[float]] = defaultdict(list)
for name in sys.argv[1:]:
    for run in json.load(open(name))["runs"]:
        cpw[run["variant"]].append(run["process_cpu_per_wall"])
        for method, record in run["methods"].items():
            obs[(run["variant"], method)].append(record["tps"]["value"])
rng = random.Random(0)
for method in sorted({m for _, m in obs}):
    variants = {v: xs for (v, m), xs in obs.items() if m == method}
    means = {v: statistics.fmean(xs) for v, xs in variants.items()}
    best = max(means, key=means.__getitem__)
    print(f"{method}: fastest by mean {best}")
    for v, xs in sorted(variants.items(), key=lambda kv: -means[kv[0]]):
        ratios = []
        for _ in range(10_000):
            a = statistics.fmean(rng.choices(xs, k=len(xs)))
            b = statistics.fmean(rng.choices(variants[best], k=len(variants[best])))
            ratios.append(a / b)
        ratios.sort()
        lo, hi = ratios[249], ratios[9749]
        print(
            f"  {v:12s} n={len(xs)} mean {means[v]:7.2f} range {min(xs):.2f}-{max(xs):.2f} "
            f"of fastest {means[v] / means[best]:.3f} [{lo:.3f}, {hi:.3f}]  CPU/wall {min(cpw[v]):.2f}-{max(cpw[v]):.2f}"
        )

"""The A/B table of exact_costs.py runs taking turns: python ab_table.py NAME DIR (DIR/NAME_A1.json ...).

Per mode and width: the median over the turns of each wheel's median ms, the median of the turns' ratios B/A
(each B run beside the A run before it), and each wheel's cost in its own one-token passes."""

import glob
import json
import statistics
import sys
from pathlib import Path


def main() -> None:
    name, folder = sys.argv[1], sys.argv[2]
    runs = {
        v: [json.loads(Path(f).read_text()) for f in sorted(glob.glob(f"{folder}/{name}_{v}[0-9].json"))]
        for v in "AB"
    }
    print("turns", len(runs["A"]), len(runs["B"]))
    for mode in runs["A"][0]["median_ms"]:
        widths = list(runs["A"][0]["median_ms"][mode])
        med = {
            v: {w: statistics.median(r["median_ms"][mode][w] for r in runs[v]) for w in widths} for v in "AB"
        }
        pairs = list(zip(runs["A"], runs["B"], strict=True))
        ratio = {
            w: statistics.median(b["median_ms"][mode][w] / a["median_ms"][mode][w] for a, b in pairs)
            for w in widths
        }
        print(mode)
        print("  n    " + " ".join(f"{w:>6}" for w in widths))
        print("  A ms " + " ".join(f"{med['A'][w]:6.2f}" for w in widths))
        print("  B ms " + " ".join(f"{med['B'][w]:6.2f}" for w in widths))
        print("  B/A  " + " ".join(f"{ratio[w]:6.3f}" for w in widths), "(median of the turns' ratios)")
        for v in "AB":
            print(f"  {v}/1  " + " ".join(f"{med[v][w] / med[v]['1']:6.2f}" for w in widths))
    loads = [r["load_before"][0] for v in "AB" for r in runs[v]]
    loads += [r["load_after"][0] for v in "AB" for r in runs[v]]
    cpu_wall = [r["cpu_wall"] for v in "AB" for r in runs[v]]
    print(f"load {min(loads):.2f}-{max(loads):.2f}, CPU/wall {min(cpu_wall):.2f}-{max(cpu_wall):.2f}")


if __name__ == "__main__":
    main()

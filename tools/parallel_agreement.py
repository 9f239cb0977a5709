#!/usr/bin/env python3
"""How far batched decoding (--parallel N) moves the results: two complete runs of the same streams compared.

For every method both runs hold: the share of streams whose final output is identical, the share of steps
whose output is identical, and the differences (new - base) of chrF, NE, A/D and A/O; then each run's
throughput (updates and output tokens per second of wall time). Usage:

    simul streams flores --data-dir ../shared/data/flores200 --src-lang eng_Latn --tgt-lang deu_Latn \\
        --limit 100 -o en-de-100.jsonl
    simul eval --streams en-de-100.jsonl --method ssbd --beta 0.2 --comet-model none --out runs/p1
    simul eval --streams en-de-100.jsonl --method ssbd --beta 0.2 --comet-model none --parallel 8 \\
        --out runs/p8
    python tools/parallel_agreement.py runs/p1 runs/p8 [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError
from simul.reports.agreement import agreement as compare_results
from simul.runs.directory import load_run


def agreement(base_dir: Path, new_dir: Path) -> dict[str, Any]:
    base, new = load_run(base_dir), load_run(new_dir)
    if base.streams.keys() != new.streams.keys():
        raise SimulError(f"{base_dir} and {new_dir} hold different streams")
    metrics_b = {m["key"]: m["metrics"] for m in base.run.get("methods", [])}
    metrics_n = {m["key"]: m["metrics"] for m in new.run.get("methods", [])}
    return {
        "base": {"path": str(base_dir), "throughput": base.run.get("throughput")},
        "new": {"path": str(new_dir), "throughput": new.run.get("throughput")},
        "methods": compare_results(base.results, new.results, metrics_b, metrics_n),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("base", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = parser.parse_args()
    try:
        doc = agreement(args.base, args.new)
    except SimulError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(doc, indent=2, sort_keys=True))
        return 0
    for side in ("base", "new"):
        t = doc[side]["throughput"] or {}
        print(
            f"{side}: {doc[side]['path']}: parallel {t.get('parallel', 1)}, "
            f"{t.get('updates_per_second', 0):.2f} updates/s, "
            f"{t.get('output_tokens_per_second', 0):.1f} output tokens/s, {t.get('wall_seconds', 0):.1f} s"
        )
    for m in doc["methods"]:
        print(
            f"{m['method']}: final outputs identical in {m['same_final_outputs']}/{m['streams']} streams, "
            f"step outputs in {m['same_step_outputs']}/{m['steps']}"
        )
        for name, d in m["metrics"].items():
            if d["delta"] is not None:
                print(f"  {name}: {d['base']:.3f} -> {d['new']:.3f} ({d['delta']:+.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

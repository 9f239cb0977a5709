"""The SSBD reference binary against simul, both capped at N tokens an update: TPS per round and method, their
ratio, and how many updates' outputs are the same text.

    python summarize.py N REF_TAG SIMUL_TAG
reads nN_REFTAG_{ssbd,rt}_{1,2}.{err,jsonl} (the binary's log and -o output) and nN_SIMULTAG_{1,2}.json and
nN_SIMULTAG_{1,2}/steps.jsonl (simul bench --json and its run directory).
"""

import json
import re
import sys
from pathlib import Path

N, REF, SIM = (sys.argv[1:4] + ["32", "ref", "simul"][len(sys.argv) - 1 :])[:3]


def ref_stats(path):
    text = Path(path).read_text()
    get = lambda key: float(re.search(key + r"\s*=\s*([\d.]+)", text).group(1))  # noqa: E731
    return {
        "tps": get("output speed"),
        "output_tokens": int(re.search(r"output tokens\s*=\s*(\d+)", text).group(1)),
        "verify_ms": get("draft verify"),
        "decode_ms": get("decode"),
        "prompt_ms": get("prompt eval"),
    }


for rnd in (1, 2):
    run = json.loads(Path(f"n{N}_{SIM}_{rnd}.json").read_text())
    by_key = {m["key"]: m for m in run["methods"]}
    steps = {}
    for line in Path(f"n{N}_{SIM}_{rnd}/steps.jsonl").read_text().splitlines():
        d = json.loads(line)
        steps.setdefault(d["method"], {}).setdefault(d["stream"], []).append((d["step"], d["output"]))
    for key, mode in (("ssbd-b0.2", "ssbd"), ("rt", "rt")):
        ref = ref_stats(f"n{N}_{REF}_{mode}_{rnd}.err")
        lines = Path(f"n{N}_{REF}_{mode}_{rnd}.jsonl").read_text().splitlines()
        outs = {r["id"]: r["stream_outs"] for r in map(json.loads, lines)}
        m = by_key[key]
        equal = total = 0
        for sid, ref_outs in outs.items():
            ours = [o for _, o in sorted(steps[key][sid])]
            for a, b in zip(ref_outs, ours, strict=True):
                total += 1
                equal += a.strip() == b.strip()
        tokens = round(m["metrics"]["tps"] * m["seconds"]["gen_seconds"])
        print(
            f"round {rnd} {mode:4}: simul {m['metrics']['tps']:7.2f} TPS ({tokens} tokens), reference "
            f"{ref['tps']:7.2f} TPS ({ref['output_tokens']} tokens), "
            f"ratio {m['metrics']['tps'] / ref['tps']:.3f}; "
            f"equal outputs {equal}/{total}; simul A/D {m['metrics']['ad']}; reference {ref}"
        )

"""Step-for-step output comparison of a run's methods (issue 40): python compare_steps.py RUN_DIR BASE METHOD...

Prints, over the streams every method finished, how many steps and final outputs of each METHOD equal BASE's
token for token (steps.jsonl's output_ids)."""

import collections
import json
import sys

run, base, *methods = sys.argv[1:]
outputs: dict[str, dict[tuple[str, int], list[int]]] = collections.defaultdict(dict)
with open(f"{run}/steps.jsonl", encoding="utf-8") as lines:
    for line in lines:
        r = json.loads(line)
        outputs[r["method"]][r["stream"], r["step"]] = r["output_ids"]
done = set.intersection(*({s for s, _ in outputs[m]} for m in [base, *methods]))
for method in methods:
    keys = [k for k in outputs[base] if k[0] in done]
    same = sum(outputs[base][k] == outputs[method].get(k) for k in keys)
    last = {s: max(i for t, i in keys if t == s) for s in done}
    finals = sum(outputs[base][s, i] == outputs[method].get((s, i)) for s, i in last.items())
    print(f"{method} vs {base}: {same}/{len(keys)} steps, {finals}/{len(done)} final outputs equal")

"""The figures of `simul bench --json` runs of SSBD and its tails: python tails_table.py RUN.json ...

Per method: TPS, speedup over RT, the calibrated bound, A/O, A/D, chrF, BLEU, NE, the gain over SSBD alone."""

import json
import sys
from pathlib import Path


def main() -> None:
    for path in sys.argv[1:]:
        run = json.loads(Path(path).read_text())
        methods = run["methods"]
        alone = [m for m in methods if m["label"].startswith("SSBD") and "tail" not in m["label"]]
        ssbd_tps = alone[0]["metrics"]["tps"] if alone else None
        costs = run["pass_costs"]
        print(path, "one-token pass", costs.get("one_token_ms"), "ms; unreliable:", run["timing_unreliable"])
        for m in methods:
            x = m["metrics"]
            gain = f"{(x['tps'] / ssbd_tps - 1) * 100:+.2f} %" if ssbd_tps else "-"
            print(
                f"  {m['label']:30} TPS {x['tps']:6.1f}  speedup {x['speedup']:.3f}  bound {m['bound']}  "
                f"A/O {x['ao']}  A/D {x['ad']}  chrF {x['chrf']}  BLEU {x['bleu']}  NE {x['ne']}  "
                f"over SSBD {gain}"
            )


if __name__ == "__main__":
    main()

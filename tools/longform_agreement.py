"""simul's long-form figures against the field's scorers on simul's own exports of a run.

For every method of every run: `simul score RUN` (SoftSegmenter) against `omnisteval longform` on
`simul export RUN --format omnisteval` (BLEU, chrF, LongYAAL/LongLAAL/LongAL/LongDAL CU and CA), and
`simul score RUN --resegment mwer` against simulstream's `stream_laal` scorer on `simul export RUN --format
simulstream` (StreamLAAL CU and CA). Prints a markdown table: run, method, metric, simul, peer, difference.

    python tools/longform_agreement.py RUN [RUN ...]
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

PY = sys.executable
SIMUL = str(Path(sys.executable).with_name("simul"))
# run.json metric -> OmniSTEval's scores.tsv name
NAMES = {
    "long_yaal": "LongYAAL (CU)",
    "ca_long_yaal": "LongYAAL (CA)",
    "long_laal": "LongLAAL (CU)",
    "ca_long_laal": "LongLAAL (CA)",
    "long_al": "LongAL (CU)",
    "ca_long_al": "LongAL (CA)",
    "long_dal": "LongDAL (CU)",
    "ca_long_dal": "LongDAL (CA)",
}


def sh(cmd: list[str]) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{shlex.join(cmd)} failed:\n{done.stderr[-1500:]}")
    return done.stdout


def metrics(run: Path, *extra: str) -> dict[str, dict[str, Any]]:
    scored = json.loads(sh([SIMUL, "score", str(run), "--json", "-q", *extra]))
    return {m["key"]: m["metrics"] for m in scored["methods"]}


def rows(run: Path) -> list[tuple[str, str, str, float | None, float | None]]:
    ours, mwer = metrics(run), metrics(run, "--resegment", "mwer")
    out = Path(tempfile.mkdtemp(prefix=f"agree-{run.name}-"))
    sh([SIMUL, "export", str(run), "--format", "omnisteval", "--out", str(out / "omni")])
    sh([SIMUL, "export", str(run), "--format", "simulstream", "--out", str(out / "ss")])
    table: list[tuple[str, str, str, float | None, float | None]] = []
    for key, mine in ours.items():
        folder = out / "omni" / key
        command = shlex.split((folder / "command.txt").read_text().strip().splitlines()[-1])
        args = command[command.index("longform") :]
        sh([PY, "-m", "omnisteval.cli", *args, "--output_folder", str(folder / "scores")])
        lines = (folder / "scores" / "scores.tsv").read_text().splitlines()[1:]
        theirs = {name: float(value) for name, value in (line.split("\t") for line in lines)}
        table += [(run.name, key, "BLEU", mine["bleu"], theirs["BLEU"])]
        table += [(run.name, key, "chrF", mine["chrf"], theirs["chrF"])]
        table += [(run.name, key, NAMES[k], mine[k], theirs.get(NAMES[k])) for k in NAMES]
        ss = out / "ss" / key
        printed = sh(
            [PY, "-m", "simulstream.metrics.score_latency", "--eval-config", str(ss / "eval.yaml"),
             "--log-file", str(ss / "log.jsonl"), "--audio-definition", str(ss / "segmentation.yaml"),
             "--reference", str(ss / "references.txt"), "--latency-unit", "word", "--scorer", "stream_laal"]
        )  # fmt: skip
        found = re.search(r"ideal_latency=([-\d.e]+), computational_aware_latency=([-\d.e]+)", printed)
        if found is None:
            raise SystemExit(f"simulstream printed no latency:\n{printed}")
        table += [(run.name, key, "StreamLAAL (mwer)", mwer[key]["long_laal"], float(found.group(1)) * 1000)]
        table += [
            (run.name, key, "StreamLAAL CA (mwer)", mwer[key]["ca_long_laal"], float(found.group(2)) * 1000)
        ]
    return table


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    print("| run | method | metric | simul | peer | difference |\n|---|---|---|---|---|---|")
    for run in argv:
        for name, key, metric, a, b in rows(Path(run)):
            diff = None if a is None or b is None else round(abs(a - b), 4)
            print(f"| {name} | {key} | {metric} | {a} | {b} | {diff} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Score a run's exports with the field's own scorers and compare with simul's figures, to 4 decimals.

    python tools/peer_agreement.py RUN_DIR [RUN_DIR ...] [--method KEY]

For each run directory: `simul export --format simuleval` and `--format simulstream` (into the run
directory), then SimulEval 1.1.4 (LAAL, AL, DAL, BLEU; its ``--score-only`` code, which prints only 3
decimals), OmniSTEval 0.1.10 (short-form YAAL and LAAL on the SimulEval log; long-form LAAL and YAAL, with
re-segmentation, on the simulstream log) and simulstream 1.0.0 (NormalizedErasure in words, on a log
exported with ``--unit word``). Prints a
Markdown table: simul's figure, the peer's, and whether they agree to 4 decimals. NE is compared with the
run's ``ne_display`` (the export is what was displayed), which must have been scored with
``--ne-tokenizer word``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from simul.cli import app
from simul.metrics.quality import bleu_tokenizer
from simul.metrics.units import target_unit
from simul.testing import peers


def _export(run_dir: Path, fmt: str, key: str, *extra: str) -> Path:
    folder = run_dir / fmt / (key + ("-" + "-".join(x.strip("-") for x in extra) if extra else ""))
    target = folder / "instances.log" if fmt == "simuleval" else folder
    args = ["export", str(run_dir), "--format", fmt, "--method", key, "-o", str(target), *extra]
    result = CliRunner().invoke(app, args)
    if result.exit_code != 0:
        raise SystemExit(result.output)
    return folder


def rows(run_dir: Path, method: str) -> list[tuple[str, str, float | None, float | None]]:
    run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    entry = next((m for m in run["methods"] if m["key"] == method), None)
    if entry is None:
        raise SystemExit(f"{run_dir} has no method {method!r}")
    ours = entry["metrics"]
    tgt = run["config"]["streams"]["tgt"]
    unit, tok = target_unit(tgt), bleu_tokenizer(tgt)
    log = _export(run_dir, "simuleval", entry["key"]) / "instances.log"
    folder = _export(run_dir, "simulstream", entry["key"])
    simuleval = peers.simuleval_scores(log, unit, tok)
    short = peers.omnisteval_shortform(log, unit)
    long = peers.omnisteval_longform(folder, unit, tok)
    # NE in words needs a log whose tokens are words (the default is characters for zh/ja/th)
    ne = peers.simulstream_normalized_erasure(
        _export(run_dir, "simulstream", entry["key"], "--unit", "word"), "word"
    )
    name = run_dir.name
    return [
        (name, "SimulEval LAAL", ours["latency"], simuleval["latency"]),
        (name, "SimulEval AL", ours["al"], simuleval["al"]),
        (name, "SimulEval DAL", ours["dal"], simuleval["dal"]),
        (name, "SimulEval BLEU", ours["bleu"], simuleval["bleu"]),
        (name, "OmniSTEval YAAL (short-form)", ours["yaal"], short["yaal"]),
        (name, "OmniSTEval LAAL (long-form, simulstream log)", ours["latency"], long["long_laal"]),
        (name, "OmniSTEval YAAL (long-form, simulstream log)", ours["yaal"], long["long_yaal"]),
        (name, "simulstream NormalizedErasure (word)", ours["ne_display"], ne),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--method", default=None, help="method key (default: the run's last method)")
    args = parser.parse_args(argv)
    print("| run | peer figure | simul | peer | agree (4 dp) |")
    print("|---|---|---|---|---|")
    ok = True
    for run_dir in args.runs:
        key = (
            args.method
            or json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["methods"][-1]["key"]
        )
        table = rows(run_dir, key)
        for name, what, mine, theirs in table:
            same = mine is not None and theirs is not None and round(theirs, 4) == mine
            ok = ok and same
            shown = "-" if theirs is None else f"{theirs:.4f}"
            print(f"| {name} | {what} | {mine} | {shown} | {'yes' if same else 'NO'} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

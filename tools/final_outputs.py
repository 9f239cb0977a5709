"""Write each method's final outputs of a run, one line per stream in stream-file order, for other scorers.

    python tools/final_outputs.py RUN_DIR OUT_DIR

Writes ``OUT_DIR/<method key>.txt`` (the output of each stream's final step, exactly as simul scored it) and
``OUT_DIR/ref<k>.txt`` for k = 1.. (the streams' k-th references), so that, e.g.,
``sacrebleu OUT_DIR/ref1.txt OUT_DIR/ref2.txt -i OUT_DIR/ssbd-b0.2-display3.txt -m bleu chrf`` scores
the same segments against the same references. An output that contains a line break is an error (it would
shift every later line).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from simul.runs.directory import load_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args()
    loaded = load_run(args.run_dir)
    order = list(loaded.streams)  # streams.jsonl order
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for key, results in loaded.results.items():
        finals = {r.stream_id: r.final_output for r in results}
        lines = [finals[sid] for sid in order]
        broken = [sid for sid, line in zip(order, lines, strict=True) if "\n" in line or "\r" in line]
        if broken:
            raise SystemExit(f"final outputs with a line break (would shift the lines): {', '.join(broken)}")
        (args.out_dir / f"{key}.txt").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    depth = max(len(s.references) for s in loaded.streams.values())
    for k in range(depth):
        refs = [loaded.streams[sid].references for sid in order]
        if any(len(r) <= k for r in refs):
            raise SystemExit(f"not every stream has {k + 1} references; sacrebleu's files need one line each")
        (args.out_dir / f"ref{k + 1}.txt").write_text("".join(r[k] + "\n" for r in refs), encoding="utf-8")
    print(f"wrote {len(loaded.results)} output files and {depth} reference files to {args.out_dir}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Are a row's logits the same alone and inside a forward pass of n rows? (simul.decoding.backend.invariance)

Decodes 40 greedy rows after each of two prompts one token at a time, then again in passes of n rows, and
prints for each n the rows that are bit-equal, the greedy choices that agree, the largest |logit difference|,
and (with --time) the median cost of a pass of n rows. Runtime switches come from the options; llama.cpp's
environment switches (GGML_CPU_TILED_MM, GGML_CUDA_*) from the environment, which is printed with the result.

Usage:
    python tools/exact_probe.py [MODEL.gguf] [--flash auto|on|off] [--no-repack] [--n-gpu-layers N]
        [--threads N] [--companions K] [--time REPEATS] [--json OUT.json] [--label TEXT]
The model defaults to simul's embedded one. Exit status 0 whatever the result (1: the probe failed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ENV_PREFIXES = ("GGML_", "LLAMA_", "SIMUL_EXACT")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("model", nargs="?", help="a GGUF file (default: the embedded model)")
    parser.add_argument("--flash", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--no-repack", action="store_true", help="model parameter use_extra_bufts=false")
    parser.add_argument(
        "--n-gpu-layers", type=int, default=None, help="default: all when the build can offload"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--widths", default="1,2,3,4,5,8,16,32")
    parser.add_argument("--rows", type=int, default=40, help="greedy rows per prompt")
    parser.add_argument(
        "--companions", type=int, default=0, help="other sequences in every pass (--parallel)"
    )
    parser.add_argument("--time", type=int, default=0, metavar="REPEATS", help="time each width's pass")
    parser.add_argument(
        "--long", action="store_true", help="long prompts: the cache passes 256 cells (llama.cpp's n_kv 512)"
    )
    parser.add_argument("--n-ctx", type=int, default=1024)
    parser.add_argument("--json", type=Path, help="write the report here")
    parser.add_argument("--label", default="", help="a name for this setting, kept in the JSON")
    args = parser.parse_args(argv)

    # A CUDA build of llama.cpp must load before numpy (simul.machine.load_order): as a decoding command does.
    from simul.machine.load_order import load_llama_first

    load_llama_first(["bench"])
    from simul.decoding.backend import LlamaBackend
    from simul.decoding.backend.invariance import PROBE_PROMPTS, long_prompts, probe
    from simul.request.default_model import default_model_path

    model = Path(args.model) if args.model else default_model_path()
    widths = [int(w) for w in args.widths.split(",") if w]
    backend = LlamaBackend(
        model,
        n_ctx=args.n_ctx,
        n_threads=args.threads,
        n_gpu_layers=args.n_gpu_layers,
        flash_attn=args.flash,
        repack=not args.no_repack,
    )
    with backend:
        prompts = long_prompts() if args.long else list(PROBE_PROMPTS)
        report = probe(
            backend,
            prompts=prompts,
            widths=widths,
            rows=args.rows,
            companions=args.companions,
            timing_repeats=args.time,
        )
        hardware = backend.describe_hardware()
    env = {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)}
    settings = {
        "label": args.label,
        "model": str(model),
        "flash_attn": args.flash,
        "repack": not args.no_repack,
        "n_gpu_layers": hardware.get("n_gpu_layers"),
        "threads": args.threads,
        "companions": args.companions,
        "long": args.long,
        "rows": args.rows,
        "environment": env,
    }
    print(f"== {args.label or 'probe'}: {json.dumps({k: v for k, v in settings.items() if k != 'model'})}")
    for line in report.lines():
        print("  ", line)
    print(f"   exact: {report.exact}  max|diff| {report.max_abs_diff:.3g}")
    if args.json:
        doc = {"settings": settings, "hardware": hardware, "report": report.to_json()}
        args.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

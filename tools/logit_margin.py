#!/usr/bin/env python3
"""How far from a tie does a decoding run take its decisions? (issue 31: the CI model's logit margins)

Decodes the streams as `simul eval` does (RT and SSBD(beta), the same template and settings), with
simul.decoding.trace recording every decision, and prints

* the smallest top-1 minus top-2 logit gap over the decisions taken by an argmax: every greedy pick, and every
  draft token verified without bias (beta 0, or --ending unbiased); where it was taken, and low percentiles;
* for draft tokens verified with a bias, the smallest slack of the biased rule, in probability:
  |(1 - beta) q[token] + beta - (1 - beta) max_(j != token) q[j]| with q = softmax(row);
* with --compare-threads, how far the logits of the same token sequences move between thread counts and
  between a batched pass and one token at a time (the numeric noise that flips a choice whose gap is smaller).

A choice flips between CPU families or thread counts only when its gap is within that noise, so the ratio of
the smallest gap to the largest noise is what keeps a baseline such as `.ci/baseline-tiny` portable:

    python tools/logit_margin.py --model .venv/ci/tiny.gguf --limit 8 --threads 2 --compare-threads 1 \\
        --streams fixtures/streams/flores200-devtest-en-de-lag3.jsonl
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from simul.decoding import trace
from simul.decoding.backend import LlamaBackend
from simul.decoding.engine import Engine, EngineSettings
from simul.decoding.records import StreamResult
from simul.request.methods import Method, methods_for
from simul.runs.evaluation import load_stream_set
from simul.streams.format import Stream


def rule_slack(decision: trace.Decision) -> float:
    """How far the biased rule's decision is from flipping, in probability (see the module docstring)."""
    facts = decision.row
    assert facts is not None
    beta = decision.bias
    own = math.exp(facts.own - facts.logsumexp)
    other = facts.runner_up if facts.best == decision.token else facts.top
    rival = math.exp(other - facts.logsumexp)
    return abs((1.0 - beta) * own + beta - (1.0 - beta) * rival)


def decode(engine: Engine, streams: Sequence[Stream], methods: Sequence[Method]) -> list[StreamResult]:
    results: list[StreamResult] = []
    engine.run(streams, methods, lambda _stream, rs: results.extend(rs))
    return results


def logits(backend: LlamaBackend, tokens: list[int], one_at_a_time: bool) -> npt.NDArray[np.float64]:
    """The logits of every position of ``tokens`` from an empty cache: in one pass, or one token a pass."""
    backend.reset()
    if not one_at_a_time:
        out = backend.eval(tokens, logits_from=0)
        assert out is not None
        return np.array(out, dtype=np.float64)
    rows = []
    for token in tokens:
        out = backend.eval([token], logits_from=0)
        assert out is not None
        rows.append(np.array(out[0], dtype=np.float64))
    return np.stack(rows)


def thread_noise(
    model: Path, sequences: list[list[int]], threads: int, other: int, n_ctx: int
) -> dict[str, float]:
    """The largest logit difference over ``sequences`` between ``threads`` and ``other`` threads (batched,
    and one token at a time), and between a batched pass and one token at a time (on ``threads``)."""
    worst = {"batched": 0.0, "one_at_a_time": 0.0, "batched_vs_one": 0.0}
    mine, theirs = (LlamaBackend(model, n_ctx=n_ctx, n_threads=n) for n in (threads, other))
    try:
        for tokens in sequences:
            batched = logits(mine, tokens, False)
            single = logits(mine, tokens, True)
            for key, a, b in (
                ("batched", batched, logits(theirs, tokens, False)),
                ("one_at_a_time", single, logits(theirs, tokens, True)),
                ("batched_vs_one", batched, single),
            ):
                worst[key] = max(worst[key], float(np.abs(a - b).max()))
    finally:
        mine.close()
        theirs.close()
    return worst


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", type=Path, required=True, help="GGUF model")
    parser.add_argument("--streams", type=Path, required=True, help="stream file (JSONL)")
    parser.add_argument("--limit", type=int, default=None, help="the first N streams")
    parser.add_argument("--threads", type=int, default=2, help="threads (as simul eval --threads)")
    parser.add_argument("--beta", type=float, default=0.2, help="SSBD's beta (as simul eval --beta)")
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument(
        "--compare-threads",
        type=int,
        default=None,
        metavar="N",
        help="also measure how far the decoded sequences' logits move at N threads and one token a pass",
    )
    parser.add_argument(
        "--sequences", type=int, default=8, help="sequences for --compare-threads (default 8)"
    )
    args = parser.parse_args(argv)

    streams = load_stream_set(args.streams, args.limit)
    methods = methods_for("ssbd", args.beta, 0, "display", True)
    engine = Engine(EngineSettings(model=args.model, threads=args.threads, n_ctx=args.n_ctx))
    try:
        engine.preflight(streams)
        with trace.recording() as recorded:
            results = decode(engine, streams, methods)
        prompts = {}
        if args.compare_threads is not None:
            by_id = {s.id: s for s in streams}
            decoder = engine.decoder(Method("rt"))
            for result in results[: args.sequences]:
                stream = by_id[result.stream_id]
                step = result.steps[-1]
                prompt = decoder.tokenize_prompt(decoder.prompt_for(stream, step.source))
                prompts[result.stream_id] = prompt + step.output_ids
    finally:
        engine.close()

    argmax = [
        d for d in recorded.decisions if d.row is not None and (d.kind == trace.GREEDY or d.bias == 0.0)
    ]
    biased = [d for d in recorded.decisions if d.row is not None and d.kind != trace.GREEDY and d.bias > 0.0]
    print(
        f"{args.model.name}, {len(streams)} streams, methods {', '.join(m.key for m in methods)}, "
        f"{args.threads} threads: {len(recorded.decisions)} decisions"
    )
    if argmax:
        margins = np.array([d.row.margin for d in argmax if d.row is not None])
        smallest = min(argmax, key=lambda d: d.row.margin if d.row is not None else math.inf)
        assert smallest.row is not None
        print(
            f"argmax decisions: {len(argmax)}; smallest top-1 minus top-2 logit gap "
            f"{smallest.row.margin:.6g} (at {smallest.where}, {smallest.kind}); "
            f"1st percentile {np.percentile(margins, 1):.4g}, "
            f"5th {np.percentile(margins, 5):.4g}, median {np.median(margins):.4g}"
        )
    if biased:
        slack = min(rule_slack(d) for d in biased)
        print(
            f"biased verifications: {len(biased)}; "
            f"smallest slack of the biased rule {slack:.6g} (probability)"
        )
    if prompts:
        noise = thread_noise(
            args.model, list(prompts.values()), args.threads, args.compare_threads, args.n_ctx
        )
        print(
            f"largest logit difference over {len(prompts)} decoded sequences: {args.threads} vs "
            f"{args.compare_threads} threads {noise['batched']:.3g} batched, "
            f"{noise['one_at_a_time']:.3g} one token a pass; "
            f"batched vs one token a pass {noise['batched_vs_one']:.3g}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

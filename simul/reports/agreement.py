"""How far two runs of the same streams agree: batched decoding (--parallel N) against one stream at a time.

Batched logits differ from single-sequence ones in the last bits, so greedy choices can flip at near-ties.
Per method both runs hold: how many streams have the same final output, how many steps the same output
tokens, and the differences (new - base) of the corpus metrics that matter for the comparison.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simul.common.errors import SimulError
from simul.decoding.records import StreamResult

METRICS = ("chrf", "ne", "ad", "ao", "tps", "speedup")


def agreement(
    base: Mapping[str, Sequence[StreamResult]],
    new: Mapping[str, Sequence[StreamResult]],
    base_metrics: Mapping[str, Mapping[str, Any]],
    new_metrics: Mapping[str, Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """One entry per method key of ``base`` that ``new`` also has (results and metrics by method key)."""
    methods = []
    for key, results in base.items():
        if key not in new:
            continue
        by_id = {r.stream_id: r for r in new[key]}
        missing = [r.stream_id for r in results if r.stream_id not in by_id]
        if missing or len(by_id) != len(results):
            raise SimulError(f"the two runs of method {key} hold different streams")
        finals = steps = same_finals = same_steps = 0
        for result in results:
            other = by_id[result.stream_id]
            if len(result.steps) != len(other.steps):
                raise SimulError(f"stream {result.stream_id} has a different number of steps in the two runs")
            finals += 1
            same_finals += result.final_output == other.final_output
            for a, b in zip(result.steps, other.steps, strict=True):
                steps += 1
                same_steps += a.output_ids == b.output_ids
        deltas = {}
        for name in METRICS:
            vb, vn = base_metrics.get(key, {}).get(name), new_metrics.get(key, {}).get(name)
            deltas[name] = {"base": vb, "new": vn, "delta": None if vb is None or vn is None else vn - vb}
        methods.append(
            {
                "method": key,
                "streams": finals,
                "same_final_outputs": same_finals,
                "final_agreement": same_finals / finals if finals else None,
                "steps": steps,
                "same_step_outputs": same_steps,
                "metrics": deltas,
            }
        )
    return methods

"""The figures of `simul bench`: where update time goes, the speed bound the machine allows at the run's
acceptance, and what decoding N streams at a time buys beside one at a time (simul.runs.side_by_side).

Computed here from the run (its step records, counts and calibrated pass costs) so that the command only
prints them; the tables are in simul.reports.bench_tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simul.decoding.records import StreamResult
from simul.machine.calibration import PassCosts
from simul.metrics.speed import calibrated_bound
from simul.reports.agreement import agreement
from simul.reports.timing_notes import TimingNotes
from simul.runs.evaluation import EvalOutcome
from simul.runs.side_by_side import LaneRecord


def time_split(counts: dict[str, Any]) -> dict[str, float]:
    """Shares (percent) of total update time spent in each part."""
    total = counts["prompt_seconds"] + counts["gen_seconds"]
    if total <= 0:
        return {"prompt": 0.0, "verify": 0.0, "decode": 0.0, "python": 0.0}
    prompt = counts["prompt_eval_seconds"]
    verify = counts["verify_seconds"]
    decode = counts["decode_seconds"]
    return {
        "prompt": round(100 * prompt / total, 1),
        "verify": round(100 * verify / total, 1),
        "decode": round(100 * decode / total, 1),
        "python": round(100 * (total - prompt - verify - decode) / total, 1),
    }


def verification_passes(results: list[StreamResult], chunk: int) -> list[int]:
    """The widths (rows) of a method's verification passes, from its step records: one pass per step with
    draft rows, or passes of ``chunk`` rows and a remainder with --verify-chunk. A step that verified in
    several passes (a tail drafter's drafts after the previous output's, an n-gram method's drafts) has its
    rows shared out evenly among them: the records keep the count of passes, not each one's width."""
    widths: list[int] = []
    for result in results:
        for step in result.steps:
            rows = step.verify_rows
            if rows <= 0:
                continue
            if chunk > 0:
                widths += [chunk] * (rows // chunk) + ([rows % chunk] if rows % chunk else [])
            elif step.verify_passes > 1:
                n = step.verify_passes
                widths += [rows // n + (1 if i < rows % n else 0) for i in range(n)]
            else:
                widths.append(rows)
    return widths


def speed_bounds(
    costs: PassCosts | None, metrics: dict[str, Any], widths: list[int], draft_cost: float = 0.0
) -> tuple[float | None, float | None, float | None]:
    """(bound at c_min, bound for the run's own pass widths, c_run) at the method's A/D and A/O
    (simul.machine.calibration); Nones without a calibration or a draft. ``draft_cost``: d, what drafting a
    token costs in one-token passes of the target (a draft model's; 0 for the other drafters), added to
    every row's c (simul.metrics.speed.modelled_speedup_with_draft)."""
    ad, ao = metrics.get("ad"), metrics.get("ao")
    if costs is None or not isinstance(ad, int | float) or not isinstance(ao, int | float) or ad <= 0:
        return None, None, None
    at_min = calibrated_bound(costs, float(ad), float(ao), draft_cost=draft_cost)
    at_run = calibrated_bound(costs, float(ad), float(ao), widths, draft_cost)
    c_run = costs.run_row_cost(widths)

    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 3)

    return r(at_min), r(at_run), r(c_run)


def draft_cost(counts: dict[str, Any], costs: PassCosts | None) -> float:
    """d of a draft-model method, what drafting a token costs in one-token passes of the target, from the
    calibrated costs and the run's counts: c_L x draft passes / drafted tokens, c_L the calibrated draft
    pass over the target's (PassCosts.c_draft). Without a calibrated draft pass: the run's drafting seconds
    per drafted token over the calibrated one-token pass of the target (:func:`run_draft_cost`). 0 for
    methods without a draft model, or without a calibration."""
    drafted = int(counts.get("model_drafted") or 0)
    if costs is None or not drafted:
        return 0.0
    c_draft = costs.c_draft
    if c_draft is None or "draft_passes" not in counts:
        return run_draft_cost(counts, costs) or 0.0
    return c_draft * int(counts["draft_passes"]) / drafted


def model_share(counts: dict[str, Any]) -> float:
    """The draft model's share of a method's drafted tokens (model_drafted / draft_tokens, the latter A/D's
    denominator, every drafter's): 1 for spec and bild, less for SSBD with a draft-model tail, whose previous
    output drafts for free. The speed model's d is per drafted token of any drafter, so the bound charges
    d x this share (0 without a draft model)."""
    drafted = int(counts.get("draft_tokens") or 0)
    model = int(counts.get("model_drafted") or 0)
    return min(model / drafted, 1.0) if drafted > 0 else 0.0


def run_draft_cost(counts: dict[str, Any], costs: PassCosts | None) -> float | None:
    """d as the run measured it: drafting seconds per drafted token (the draft model's passes and the
    drafter's Python) over the calibrated one-token pass of the target; None without a draft model."""
    drafted = int(counts.get("model_drafted") or 0)
    if costs is None or not drafted or "draft_seconds" not in counts or costs.one_token_ms <= 0:
        return None
    return float(counts["draft_seconds"]) / drafted * 1000.0 / costs.one_token_ms


def per_update(results: Sequence[StreamResult]) -> dict[str, float | None]:
    """Draft tokens and forward passes (one-token plus verification passes, the prompt pass left out) per
    update, for every method: from the step records in memory, which count verification passes
    whatever the method (steps.jsonl holds them only for methods with a drafter beside the built-in ones)."""
    steps = [s for r in results for s in r.steps]
    if not steps:
        return {"draft_tokens_per_update": None, "passes_per_update": None}
    return {
        "draft_tokens_per_update": round(sum(s.drafted_total for s in steps) / len(steps), 3),
        "passes_per_update": round(sum(s.decode_passes + s.verify_passes for s in steps) / len(steps), 3),
    }


def bench_rows(outcome: EvalOutcome, costs: PassCosts | None) -> list[dict[str, Any]]:
    """One row per method: its metrics, SSBD's bound at the run's A/D and A/O (:func:`speed_bounds`;
    ``of_bound`` = speedup / bound), the split of update time (:func:`time_split`), the seconds and pass
    counts it comes from, and the frozen steps (kept the whole draft, decoded nothing new)."""
    rows = []
    chunk = int(outcome.run["config"].get("verify_chunk") or 0)
    for method in outcome.scored.methods_json():
        counts = method["counts"]
        # every method that verifies drafts (not CD, which keeps its draft unverified): its own A/D and A/O,
        # its own pass widths and, for a draft model, its drafting cost (simul.metrics.speed)
        bound_min = bound = c_run = None
        d = d_run = share = None
        if method.get("name") not in ("rt", "cd"):
            results = outcome.results.get(method["key"], [])
            widths = verification_passes(results, chunk)
            d = draft_cost(counts, costs)
            d_run = run_draft_cost(counts, costs)
            share = model_share(counts)
            bound_min, bound, c_run = speed_bounds(costs, method["metrics"], widths, d * share)
        speedup = method["metrics"].get("speedup")
        rows.append(
            {
                "key": method["key"],
                "label": method["label"],
                "metrics": method["metrics"],
                "bound": bound,
                "bound_c_min": bound_min,
                "c_run": c_run,
                "d_draft": None if d is None else round(d, 3),
                "d_draft_run": None if d_run is None else round(d_run, 3),
                "d_share": None if share is None else round(share, 4),
                "of_bound": round(speedup / bound, 3) if bound and isinstance(speedup, int | float) else None,
                "time_split": time_split(counts),
                "seconds": {
                    k: counts[k]
                    for k in (
                        "prompt_seconds",
                        "gen_seconds",
                        "prompt_eval_seconds",
                        "verify_seconds",
                        "decode_seconds",
                    )
                },
                "verify_rows": counts.get("verify_rows", 0),
                "decode_passes": counts.get("decode_passes", 0),
                "frozen_steps": counts["frozen_steps"],
                "steps": counts["steps"],
                **per_update(outcome.results.get(method["key"], [])),
            }
        )
    return rows


def side_by_side_json(
    base: EvalOutcome, batched: EvalOutcome, lanes: list[LaneRecord], parallel: int
) -> dict[str, Any]:
    """Throughput of the single-stream and the batched run (their own turns' wall and CPU time), the ratio
    of their wall times, and how far the batched results move (simul.reports.agreement)."""
    sides = []
    for outcome, lane in zip((base, batched), lanes, strict=True):
        rate = outcome.run.get("throughput") or {}
        sides.append(
            {
                **lane.to_json(),
                **{
                    k: rate.get(k)
                    for k in (
                        "parallel",
                        "streams",
                        "updates",
                        "output_tokens",
                        "updates_per_second",
                        "output_tokens_per_second",
                    )
                },
            }
        )
    wall_1, wall_n = lanes[0].wall_seconds, lanes[1].wall_seconds
    metrics = [{m["key"]: m["metrics"] for m in outcome.scored.methods_json()} for outcome in (base, batched)]
    return {
        "parallel": parallel,
        "runs": sides,
        "wall_ratio": round(wall_n / wall_1, 4) if wall_1 > 0 else None,
        "throughput_gain": round(wall_1 / wall_n, 3) if wall_n > 0 else None,
        "agreement": agreement(base.results, batched.results, metrics[0], metrics[1]),
    }


def bench_title(outcome: EvalOutcome) -> str:
    """The table's title: model, streams, language pair and threads (data text: escape before printing)."""
    cfg = outcome.run["config"]
    return (
        f"simul bench: {cfg['model']['name']}, {outcome.streams_done} streams "
        f"{cfg['streams']['src']}->{cfg['streams']['tgt']}, {cfg['threads']} threads"
    )


def bench_json(
    outcome: EvalOutcome,
    rows: list[dict[str, Any]],
    timing: TimingNotes,
    out: Path | None,
    side_by_side: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The document `simul bench --json` prints: the rows, the run's conditions and, with --parallel N, the
    side-by-side comparison."""
    cfg, environment = outcome.run["config"], outcome.run["environment"]
    return {
        "methods": rows,
        "model": cfg["model"]["name"],
        "streams": outcome.streams_done,
        "threads": cfg["threads"],
        "cpu": environment["cpu"],
        "timing_unreliable": timing.unreliable,
        "pass_costs": environment.get("pass_costs"),
        "openmp": environment.get("openmp"),
        "run_dir": str(out) if out else None,
        **({"side_by_side": side_by_side} if side_by_side is not None else {}),
    }


def modes_json(exact: EvalOutcome, fast: EvalOutcome, lanes: list[LaneRecord]) -> dict[str, Any]:
    """Exact mode beside fast mode (``simul bench --compare-modes``): per method the tokens per second and
    speedup in each mode and their ratio (exact / fast), each lane's turns (wall, CPU/wall, load), and how
    far the fast run's outputs and metrics are from the exact run's (simul.reports.agreement)."""
    metrics = [{m["key"]: m["metrics"] for m in o.scored.methods_json()} for o in (exact, fast)]
    methods = []
    for key, mine in metrics[0].items():
        theirs = metrics[1].get(key)
        if theirs is None:
            continue
        row: dict[str, Any] = {"method": key}
        for name in ("tps", "speedup", "chrf", "bleu", "ad", "ao", "ne"):
            a, b = mine.get(name), theirs.get(name)
            row[name] = {"exact": a, "fast": b}
        a, b = mine.get("tps"), theirs.get("tps")
        row["tps_ratio"] = (
            round(a / b, 4) if isinstance(a, int | float) and isinstance(b, int | float) and b else None
        )
        methods.append(row)
    return {
        "lanes": [lane.to_json() for lane in lanes],
        "methods": methods,
        "agreement": agreement(fast.results, exact.results, metrics[1], metrics[0]),
    }

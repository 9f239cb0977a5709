"""The speed family: TPS and TPS e2e, the speedups over RT, the efficiency, the row cost c of the speed model
and the update-time percentiles (formulas and source: simul.metrics.speed), with the seconds and passes
behind them.

    efficiency = speedup / ideal speedup        (ideal speedup = 1 / (1 - A/O), simul.metrics.acceptance)

RT's speedups are 1 by definition; another method's are None when the run has no RT with a TPS.

A method that drafts with a draft model (spec, bild, SSBD's --tail-draft model) has three more:

    draft_acceptance = draft-model tokens kept / drafted x 100
    draft_ms         = 1000 x draft seconds / drafted tokens
    draft_cost (d)   = (draft seconds / drafted tokens) / (decode seconds / decode passes)

d is the drafting cost per token in one-token passes of the target, as in the speed model with a draft
(simul.metrics.speed.modelled_speedup_with_draft); c_L of Leviathan et al. (ICML 2023, Theorem 3.8) is the
same ratio per draft pass."""

from __future__ import annotations

from collections.abc import Sequence

from simul.decoding.records import StreamResult
from simul.metrics.acceptance import acceptance
from simul.metrics.family import Family, FamilyInput, Figures, RtReference, rounded
from simul.metrics.spec import MetricInfo
from simul.metrics.speed import row_cost, speed, speedup
from simul.request.methods import Method


def acceptance_by_position(drafts: Sequence[Sequence[int]]) -> list[float]:
    """For each draft position i (from 0), the share of the drafts reaching it whose token there was kept:
    #(drafts with kept > i) / #(drafts with offered > i); ``drafts`` are [offered, kept] pairs."""
    longest = max((offered for offered, _ in drafts), default=0)
    out = []
    for i in range(longest):
        reached = sum(1 for offered, _ in drafts if offered > i)
        out.append(round(sum(1 for _, kept in drafts if kept > i) / reached, 4))
    return out


def speed_figures(method: Method, results: Sequence[StreamResult], rt: RtReference | None) -> Figures:
    steps = [s for r in results for s in r.steps]
    spd = speed((len(s.output_ids), s.t_prompt, s.t_gen) for s in steps)
    rt_tps = rt.tps if rt else None
    rt_tps_e2e = rt.tps_e2e if rt else None
    is_rt = method.name == "rt"
    method_speedup = 1.0 if is_rt else (speedup(spd.tps, rt_tps) if rt_tps else None)
    method_speedup_e2e = 1.0 if is_rt else (speedup(spd.tps_e2e, rt_tps_e2e) if rt_tps_e2e else None)
    ideal = acceptance((s.drafted_total, s.accepted_total, len(s.output_ids)) for s in steps).ideal_speedup
    efficiency = method_speedup / ideal if (method_speedup is not None and ideal) else None
    verify_seconds = sum(s.t_verify for s in steps)
    decode_seconds = sum(s.t_decode for s in steps)
    verify_rows = sum(s.verify_rows for s in steps)
    decode_passes = sum(s.decode_passes for s in steps)
    counts: dict[str, object] = {}
    draft_metrics: dict[str, float | None] = {}
    if method.uses_draft_model:  # only then, so that other methods' run files keep their keys
        # the draft model's passes and seconds: (draft_seconds / draft_passes) / (decode_seconds /
        # decode_passes) is its pass cost in one-token target passes, c_L of Leviathan et al.'s Theorem 3.8
        drafts = [d for s in steps for d in s.model_drafts]
        draft_seconds = sum(s.t_draft for s in steps)
        drafted = sum(offered for offered, _ in drafts)
        kept = sum(kept for _, kept in drafts)
        one_token = decode_seconds / decode_passes if decode_passes else 0.0
        draft_metrics = {
            # draft acceptance = kept / drafted x 100; d = (draft seconds / drafted) / (decode seconds /
            # decode passes), the drafting cost per token in the speed model (simul.metrics.speed.
            # modelled_speedup_with_draft)
            "draft_acceptance": round(100.0 * kept / drafted, 2) if drafted else None,
            "draft_ms": round(1000.0 * draft_seconds / drafted, 3) if drafted else None,
            "draft_cost": round(draft_seconds / drafted / one_token, 3)
            if drafted and one_token > 0
            else None,
        }
        counts = {
            "draft_seconds": round(draft_seconds, 4),
            "draft_passes": sum(s.draft_passes for s in steps),
            "model_drafts": len(drafts),
            "model_drafted": drafted,
            "model_accepted": kept,
            "model_rejections": sum(1 for offered, kept in drafts if kept < offered),
            "acceptance_by_position": acceptance_by_position(drafts),
        }
    return Figures(
        metrics={
            "tps": round(spd.tps, 2),
            "speedup": rounded(method_speedup, 3),
            "tps_e2e": round(spd.tps_e2e, 2),
            "speedup_e2e": rounded(method_speedup_e2e, 3),
            "efficiency": rounded(efficiency, 3),
            "row_cost": rounded(row_cost(verify_seconds, verify_rows, decode_seconds, decode_passes), 3),
            "p50_update_ms": round(spd.p50_update_ms, 2),
            "p95_update_ms": round(spd.p95_update_ms, 2),
            **draft_metrics,
        },
        counts={
            "gen_seconds": round(spd.gen_seconds, 4),
            "prompt_seconds": round(spd.prompt_seconds, 4),
            "prompt_eval_seconds": round(sum(s.t_prompt_eval for s in steps), 4),
            "verify_seconds": round(verify_seconds, 4),
            "decode_seconds": round(decode_seconds, 4),
            "verify_rows": verify_rows,
            "decode_passes": decode_passes,
            **counts,
        },
    )


def _figures(given: FamilyInput) -> Figures:
    return speed_figures(given.method, given.results, given.rt)


TIMED = ("model_tokens", "timing")  # what a TPS needs
MODELLED = ("draft", "model_tokens", "timing")  # what the figures of the speed model need

FAMILY = Family(
    name="speed",
    specs=(
        MetricInfo(
            "tps",
            True,
            "TPS",
            "output tokens per second of generation time",
            timing=True,
            fmt=".0f",
            needs=TIMED,
        ),
        MetricInfo(
            "speedup",
            True,
            "Speedup",
            "TPS / TPS of RT in the same run",
            timing=True,
            fmt=".2f",
            relative_to_rt=True,
            needs=TIMED,
        ),
        MetricInfo(
            "tps_e2e",
            True,
            "TPS e2e",
            "output tokens per second of update time, prompt included",
            timing=True,
            fmt=".0f",
            needs=TIMED,
        ),
        MetricInfo(
            "speedup_e2e",
            True,
            "Speedup e2e",
            "TPS e2e / TPS e2e of RT in the same run",
            timing=True,
            fmt=".2f",
            relative_to_rt=True,
            needs=TIMED,
        ),
        MetricInfo(
            "efficiency",
            True,
            "Eff.",
            "speedup / ideal speedup",
            timing=True,
            fmt=".2f",
            relative_to_rt=True,
            needs=MODELLED,
        ),
        MetricInfo(
            "row_cost",
            False,
            "c",
            "time per draft row in verification / time per one-token decode (the speed model's c)",
            timing=True,
            fmt=".2f",
            needs=MODELLED,
        ),
        MetricInfo(
            "p50_update_ms",
            False,
            "p50 ms",
            "median time per update, prompt included",
            timing=True,
            fmt=".0f",
            needs=("timing",),
        ),
        MetricInfo(
            "p95_update_ms",
            False,
            "p95 ms",
            "95th percentile time per update",
            timing=True,
            fmt=".0f",
            needs=("timing",),
        ),
        MetricInfo(
            "draft_acceptance",
            True,
            "Draft A",
            "draft-model tokens kept / draft-model tokens drafted, percent",
            draft_model=True,
        ),
        MetricInfo(
            "draft_ms",
            False,
            "Draft ms",
            "draft model's milliseconds per drafted token",
            timing=True,
            draft_model=True,
        ),
        MetricInfo(
            "draft_cost",
            False,
            "d",
            "draft time per drafted token / time per one-token decode of the target (same run)",
            timing=True,
            draft_model=True,
        ),
    ),
    figures=_figures,
    counts_need={
        "model_tokens": ("verify_rows", "decode_passes"),
        "timing": (
            "gen_seconds",
            "prompt_seconds",
            "prompt_eval_seconds",
            "verify_seconds",
            "decode_seconds",
        ),
    },
)

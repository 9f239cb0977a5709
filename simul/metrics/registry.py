"""Every metric simul reports: its name, direction and meaning. Run files and `simul diff` use these names."""

from __future__ import annotations

from dataclasses import dataclass

from simul.common.errors import UsageError


@dataclass(frozen=True)
class MetricInfo:
    name: str
    higher_is_better: bool
    title: str
    description: str
    # figures that depend on wall-clock time, not only on the outputs
    timing: bool = False
    # False for diagnostics with no better direction (SWF, EFSW, DSPTV): `simul diff` shows their change
    # but takes no threshold on them, and run.json's ``higher_is_better`` leaves them out
    directional: bool = True


METRICS: dict[str, MetricInfo] = {
    m.name: m
    for m in [
        MetricInfo("comet", True, "COMET", "COMET system score (mean of segment scores)"),
        MetricInfo(
            "xcomet",
            True,
            "XCOMET",
            "XCOMET system score (mean of segment scores; IWSLT 2026 ranks by XCOMET-XL)",
        ),
        MetricInfo("bleu", True, "BLEU", "corpus BLEU of the final outputs (sacrebleu)"),
        MetricInfo("bleurt", True, "BLEURT", "BLEURT system score (mean of segment scores; bleurt-pytorch)"),
        MetricInfo("chrf", True, "chrF", "corpus chrF of the final outputs (sacrebleu)"),
        MetricInfo("ne", False, "NE", "normalized erasure of the raw outputs"),
        MetricInfo("ne_display", False, "NE disp", "normalized erasure of what was displayed"),
        MetricInfo("ad", True, "A/D", "accepted draft tokens / draft tokens, percent"),
        MetricInfo("ao", True, "A/O", "accepted draft tokens / output tokens, percent"),
        MetricInfo("tps", True, "TPS", "output tokens per second of generation time", timing=True),
        MetricInfo("speedup", True, "Speedup", "TPS / TPS of RT in the same run", timing=True),
        MetricInfo(
            "tps_e2e",
            True,
            "TPS e2e",
            "output tokens per second of update time, prompt included",
            timing=True,
        ),
        MetricInfo(
            "speedup_e2e", True, "Speedup e2e", "TPS e2e / TPS e2e of RT in the same run", timing=True
        ),
        MetricInfo("ideal_speedup", True, "Ideal", "1 / (1 - A/O): speedup if verification were free"),
        MetricInfo("efficiency", True, "Eff.", "speedup / ideal speedup", timing=True),
        MetricInfo(
            "row_cost",
            False,
            "c",
            "time per draft row in verification / time per one-token decode (the speed model's c)",
            timing=True,
        ),
        MetricInfo("ne_mean", False, "NE mean", "normalized erasure of the raw outputs, mean over streams"),
        MetricInfo(
            "ne_display_mean",
            False,
            "NE disp mean",
            "normalized erasure of what was displayed, mean over streams",
        ),
        MetricInfo("latency", False, "LAAL", "length-adaptive average lagging of finalised displayed units"),
        MetricInfo("al", False, "AL", "average lagging (SimulEval) of finalised displayed units"),
        MetricInfo(
            "dal", False, "DAL", "differentiable average lagging (SimulEval) of finalised displayed units"
        ),
        MetricInfo("yaal", False, "YAAL", "yet another average lagging (OmniSTEval, short-form)"),
        MetricInfo(
            "latency_ca",
            False,
            "LAAL CA",
            "computation-aware LAAL (elapsed = delay + update time)",
            timing=True,
        ),
        MetricInfo("al_ca", False, "AL CA", "computation-aware AL", timing=True),
        MetricInfo("dal_ca", False, "DAL CA", "computation-aware DAL", timing=True),
        MetricInfo("yaal_ca", False, "YAAL CA", "computation-aware YAAL", timing=True),
        MetricInfo("p50_update_ms", False, "p50 ms", "median time per update, prompt included", timing=True),
        MetricInfo("p95_update_ms", False, "p95 ms", "95th percentile time per update", timing=True),
        MetricInfo("agreement_rt", True, "=RT", "share of steps whose output equals RT's, percent"),
        # methods that draft with a draft model only (spec, bild, SSBD's --tail-draft model; issue 34)
        MetricInfo(
            "draft_acceptance",
            True,
            "Draft A",
            "draft-model tokens kept / draft-model tokens drafted, percent",
        ),
        MetricInfo(
            "draft_ms", False, "Draft ms", "draft model's milliseconds per drafted token", timing=True
        ),
        MetricInfo(
            "draft_cost",
            False,
            "d",
            "draft time per drafted token / time per one-token decode of the target (same run)",
            timing=True,
        ),
        # long-form runs (whole talks), OmniSTEval's definitions (simul.metrics.longform.latency)
        MetricInfo("long_yaal", False, "LongYAAL", "long-form YAAL over re-segmented talks (IWSLT 2026)"),
        MetricInfo("long_laal", False, "LongLAAL", "long-form LAAL (= StreamLAAL) over re-segmented talks"),
        MetricInfo("long_al", False, "LongAL", "long-form AL over re-segmented talks"),
        MetricInfo("long_dal", False, "LongDAL", "long-form DAL over re-segmented talks"),
        MetricInfo("ca_long_yaal", False, "LongYAAL CA", "computation-aware LongYAAL", timing=True),
        MetricInfo("ca_long_laal", False, "LongLAAL CA", "computation-aware LongLAAL", timing=True),
        MetricInfo("ca_long_al", False, "LongAL CA", "computation-aware LongAL", timing=True),
        MetricInfo("ca_long_dal", False, "LongDAL CA", "computation-aware LongDAL", timing=True),
        MetricInfo(
            "cost_growth",
            False,
            "Growth",
            "long-form: mean update time in the talks' last quarter / first quarter (metrics.talk_cost)",
            timing=True,
        ),
        # OmniSTEval's short-form degeneracy diagnostics (metrics/degeneracy.py); None for long-form runs
        MetricInfo(
            "swf",
            False,
            "SWF",
            "simultaneous words fraction: percent of displayed units finalised before the source ended",
            directional=False,
        ),
        MetricInfo(
            "efsw",
            False,
            "EFSW",
            "expected fraction of simultaneous words: percent of the source before YAAL",
            directional=False,
        ),
        MetricInfo(
            "dsptv",
            False,
            "DSPTV",
            "degenerate simultaneous policy test value: EFSW - SWF, percentage points",
            directional=False,
        ),
        MetricInfo(
            "degenerate_policy",
            False,
            "Degenerate",
            "1 when |DSPTV| > 20 (OmniSTEval's 'likely degenerate simultaneous policy'), else 0",
        ),
    ]
}


def metric_info(name: str) -> MetricInfo:
    try:
        return METRICS[name]
    except KeyError:
        raise UsageError(f"unknown metric {name!r}; known metrics: {', '.join(METRICS)}") from None


# present in a method's metrics only when it drafts with a draft model (simul.metrics.families.speed)
DRAFT_MODEL_METRICS = ("draft_acceptance", "draft_ms", "draft_cost")

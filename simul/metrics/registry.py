"""Every metric simul reports: one record each (simul.metrics.spec.MetricInfo: name, direction, title,
meaning, unit, number format, timing, whether its system score is a mean of segment scores, its
computation-aware variant). Run files, the tables, `simul rank`, `simul diff` and `simul sweep` use these
names. The metrics of the families in ``FAMILIES`` come with their family's module."""

from __future__ import annotations

from simul.common.errors import UsageError
from simul.metrics.families import reader_stability
from simul.metrics.spec import Family, MetricInfo

__all__ = ["DRAFT_MODEL_METRICS", "FAMILIES", "METRICS", "Family", "MetricInfo", "metric_info"]

# Metric families that bring their own records and computation (simul.metrics.spec.Family): adding one is
# one module and one line here.
FAMILIES: tuple[Family, ...] = (reader_stability.FAMILY,)

METRICS: dict[str, MetricInfo] = {
    m.name: m
    for m in [
        MetricInfo(
            "comet",
            True,
            "COMET",
            "COMET system score (mean of segment scores)",
            fmt=".3f",
            segment_mean=True,
            learned=True,
        ),
        MetricInfo(
            "xcomet",
            True,
            "XCOMET",
            "XCOMET system score (mean of segment scores; IWSLT 2026 ranks by XCOMET-XL)",
            fmt=".3f",
            segment_mean=True,
            learned=True,
            replaces="comet",
        ),
        MetricInfo("bleu", True, "BLEU", "corpus BLEU of the final outputs (sacrebleu)", fmt=".1f"),
        MetricInfo(
            "bleurt",
            True,
            "BLEURT",
            "BLEURT system score (mean of segment scores; bleurt-pytorch)",
            fmt=".3f",
            segment_mean=True,
            learned=True,
        ),
        MetricInfo("chrf", True, "chrF", "corpus chrF of the final outputs (sacrebleu)", fmt=".1f"),
        MetricInfo(
            "ne", False, "NE", "normalized erasure of the raw outputs", fmt=".2f", needs=("revisions",)
        ),
        MetricInfo(
            "ne_display",
            False,
            "NE disp",
            "normalized erasure of what was displayed",
            fmt=".2f",
            needs=("revisions",),
        ),
        MetricInfo("ad", True, "A/D", "accepted draft tokens / draft tokens, percent", fmt=".1f"),
        MetricInfo("ao", True, "A/O", "accepted draft tokens / output tokens, percent", fmt=".1f"),
        MetricInfo("tps", True, "TPS", "output tokens per second of generation time", timing=True, fmt=".0f"),
        MetricInfo("speedup", True, "Speedup", "TPS / TPS of RT in the same run", timing=True, fmt=".2f"),
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
        MetricInfo(
            "ne_mean",
            False,
            "NE mean",
            "normalized erasure of the raw outputs, mean over streams",
            needs=("revisions",),
        ),
        MetricInfo(
            "ne_display_mean",
            False,
            "NE disp mean",
            "normalized erasure of what was displayed, mean over streams",
            needs=("revisions",),
        ),
        MetricInfo(
            "latency",
            False,
            "LAAL",
            "length-adaptive average lagging of finalised displayed units",
            fmt=".2f",
            ca="latency_ca",
        ),
        MetricInfo("al", False, "AL", "average lagging (SimulEval) of finalised displayed units", ca="al_ca"),
        MetricInfo(
            "dal",
            False,
            "DAL",
            "differentiable average lagging (SimulEval) of finalised displayed units",
            ca="dal_ca",
        ),
        MetricInfo(
            "yaal", False, "YAAL", "yet another average lagging (OmniSTEval, short-form)", ca="yaal_ca"
        ),
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
        MetricInfo(
            "long_yaal",
            False,
            "LongYAAL",
            "long-form YAAL over re-segmented talks (IWSLT 2026)",
            fmt=".0f",
            ca="ca_long_yaal",
        ),
        MetricInfo(
            "long_laal",
            False,
            "LongLAAL",
            "long-form LAAL (= StreamLAAL) over re-segmented talks",
            ca="ca_long_laal",
        ),
        MetricInfo("long_al", False, "LongAL", "long-form AL over re-segmented talks", ca="ca_long_al"),
        MetricInfo("long_dal", False, "LongDAL", "long-form DAL over re-segmented talks", ca="ca_long_dal"),
        MetricInfo(
            "ca_long_yaal", False, "LongYAAL CA", "computation-aware LongYAAL", timing=True, fmt=".0f"
        ),
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
for _family in FAMILIES:
    for _spec in _family.specs:
        if _spec.name in METRICS:
            raise ValueError(f"metric {_spec.name} of family {_family.name} is registered twice")
        METRICS[_spec.name] = _spec


def metric_info(name: str) -> MetricInfo:
    try:
        return METRICS[name]
    except KeyError:
        raise UsageError(f"unknown metric {name!r}; known metrics: {', '.join(METRICS)}") from None


# present in a method's metrics only when it drafts with a draft model (simul.metrics.families.speed)
DRAFT_MODEL_METRICS = ("draft_acceptance", "draft_ms", "draft_cost")

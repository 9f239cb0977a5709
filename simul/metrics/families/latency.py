"""The latency family: LAAL, AL, DAL and YAAL of the finalised displayed units, computation-unaware and
-aware, each the mean over the streams that give a value (definitions and sources: simul.metrics.latency;
delays: simul.metrics.delays), with the units they are counted in.

They measure a sentence from its start, so a run with whole talks gets None (its latencies are the
long-form ones of simul.metrics.families.longform): ``delays`` is None then."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simul.common.languages import get_language
from simul.decoding.records import StreamResult
from simul.metrics.delays import StreamDelays
from simul.metrics.family import Family, FamilyInput, Figures, mean_of, rounded
from simul.metrics.spec import MetricInfo
from simul.metrics.units import source_unit, target_unit
from simul.streams.format import Stream


def latency_figures(
    results: Sequence[StreamResult], streams: Mapping[str, Stream], delays: Sequence[StreamDelays] | None
) -> Figures:
    first = streams[results[0].stream_id] if results else None
    steps = [s for r in results for s in r.steps]
    timed = bool(steps) and all(s.time_ms is not None for s in steps)
    counts: dict[str, Any] = {
        "latency_unit": source_unit(get_language(first.src if first else "en").short, timed),
        "target_latency_unit": target_unit(first.tgt if first else "en"),
        "latency_ca_unit": "ms",
    }
    if delays is None:
        return Figures(
            metrics=dict.fromkeys(s.name for s in FAMILY.specs),
            counts=counts,
            rows=[{"latency": None, "yaal": None} for _ in results],
        )
    lags = [d.lagging() for d in delays]
    aware = [d.lagging_aware() for d in delays]
    return Figures(
        metrics={
            "latency": mean_of([lag.laal for lag in lags]),
            "al": mean_of([lag.al for lag in lags]),
            "dal": mean_of([lag.dal for lag in lags]),
            "yaal": mean_of([lag.yaal for lag in lags]),
            "latency_ca": mean_of([lag.laal for lag in aware]),
            "al_ca": mean_of([lag.al for lag in aware]),
            "dal_ca": mean_of([lag.dal for lag in aware]),
            "yaal_ca": mean_of([lag.yaal for lag in aware]),
        },
        counts=counts,
        rows=[{"latency": rounded(lag.laal, 4), "yaal": rounded(lag.yaal, 4)} for lag in lags],
    )


def _figures(given: FamilyInput) -> Figures:
    return latency_figures(given.results, given.streams, given.delays)


FAMILY = Family(
    name="latency",
    specs=(
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
            needs=("timing",),
        ),
        MetricInfo("al_ca", False, "AL CA", "computation-aware AL", timing=True, needs=("timing",)),
        MetricInfo("dal_ca", False, "DAL CA", "computation-aware DAL", timing=True, needs=("timing",)),
        MetricInfo("yaal_ca", False, "YAAL CA", "computation-aware YAAL", timing=True, needs=("timing",)),
    ),
    figures=_figures,
)

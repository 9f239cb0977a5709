"""Every metric simul reports, and the families that compute them.

``FAMILIES`` lists the metric families (simul.metrics.family.Family), each a module of
simul.metrics.families with its records (simul.metrics.spec.MetricInfo) and its code: adding one is one
module and one line here. ``LEARNED`` lists the learned metrics (simul.metrics.learned.LearnedMetric), each
with its record, option, config field and loader beside its scorer: adding one is its module (and a tiny
checkpoint for its tests, simul.testing) and one line here. ``METRICS`` is every record by run.json name,
the learned metrics' first, then the families' in their order. Run files, the tables, `simul rank`,
`simul diff` and `simul sweep` use these names, and every list of metric names that the commands need is
read from the records (:func:`names`, :func:`needing`)."""

from __future__ import annotations

from collections.abc import Callable

from simul.common.errors import UsageError
from simul.metrics import bleurt, comet
from simul.metrics.families import (
    acceptance,
    degeneracy,
    drafters,
    latency,
    longform,
    quality,
    reader_stability,
    speed,
    stability,
)
from simul.metrics.family import Family
from simul.metrics.learned import LearnedMetric
from simul.metrics.spec import RECORD_FIELDS, MetricInfo

__all__ = [
    "DRAFT_MODEL_METRICS",
    "FAMILIES",
    "LEARNED",
    "METRICS",
    "Family",
    "MetricInfo",
    "metric_info",
    "names",
    "needing",
]

FAMILIES: tuple[Family, ...] = (
    quality.FAMILY,
    stability.FAMILY,
    acceptance.FAMILY,
    drafters.FAMILY,
    speed.FAMILY,
    latency.FAMILY,
    degeneracy.FAMILY,
    longform.FAMILY,
    reader_stability.FAMILY,
)


# The learned metrics, each with its record, option, config field and loader (simul.metrics.learned): the
# quality family scores every one a run is scored with; adding one is its module and one line here.
LEARNED: tuple[LearnedMetric, ...] = (comet.COMET, comet.XCOMET, bleurt.BLEURT)


def _records(families: tuple[Family, ...], learned: tuple[LearnedMetric, ...]) -> dict[str, MetricInfo]:
    records: dict[str, MetricInfo] = {}
    owners = [("learned", tuple(m.info for m in learned))]
    owners += [(family.name, family.specs) for family in families]
    for owner, specs in owners:
        for spec in specs:
            if spec.name in records:
                raise ValueError(f"metric {spec.name} of {owner} is registered twice")
            unknown = set(spec.needs) - set(RECORD_FIELDS)
            if unknown:
                raise ValueError(f"metric {spec.name} needs {', '.join(sorted(unknown))}: not a record field")
            records[spec.name] = spec
    return records


METRICS: dict[str, MetricInfo] = _records(FAMILIES, LEARNED)


def metric_info(name: str) -> MetricInfo:
    try:
        return METRICS[name]
    except KeyError:
        raise UsageError(f"unknown metric {name!r}; known metrics: {', '.join(METRICS)}") from None


def names(flag: Callable[[MetricInfo], bool]) -> tuple[str, ...]:
    """The metrics whose record ``flag`` holds for, in the records' order: ``names(lambda m: m.quality)``."""
    return tuple(name for name, info in METRICS.items() if flag(info))


def needing(field: str) -> tuple[str, ...]:
    """Every figure (metric, count or per-stream column) that needs ``field`` of the step records
    (spec.RECORD_FIELDS): None in a method's report when its records lack it."""
    return (
        *names(lambda m: field in m.needs),
        *(name for family in FAMILIES for name in family.counts_need.get(field, ())),
    )


# present in a method's metrics only when it drafts with a draft model (simul.metrics.families.speed)
DRAFT_MODEL_METRICS = names(lambda m: m.draft_model)

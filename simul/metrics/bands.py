"""IWSLT 2026's latency bands: where a system is ranked.

The IWSLT 2026 simultaneous track ranks systems by quality within latency bands, and sets each system's band
from its computation-unaware LongYAAL on the dev set (OmniSTEval >= 0.1.7): **low** up to 2 s, **high** up to
4 s (above 2 s); a system above 4 s is in neither (``over``). simul applies the rule to a method's figures as
run.json holds them: LongYAAL (``long_yaal``) for a run of whole talks, YAAL (``yaal``, OmniSTEval's
short-form definition) for sentence-level streams. Bands are in seconds, so only timed streams (latency in
ms) have one; text streams measure latency in source words and get none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# name, lower and upper bound (ms, upper inclusive)
BANDS = (("low", 0.0, 2000.0), ("high", 2000.0, 4000.0))
OVER = "over"
BAND_TITLES = {"low": "Low (<= 2 s)", "high": "High (2-4 s)", OVER: "over 4 s (no band)", None: "no band"}


def band_of(latency_ms: float | None) -> str | None:
    """``low``, ``high`` or ``over`` for a computation-unaware (Long)YAAL in ms; None without a value."""
    if latency_ms is None:
        return None
    for name, _, upper in BANDS:
        if latency_ms <= upper:
            return name
    return OVER


@dataclass(frozen=True)
class MethodBand:
    """A method's band, the figure it comes from, and why it has none (when it has none)."""

    band: str | None
    metric: str  # long_yaal or yaal
    value: float | None
    unit: str
    why_none: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "band": self.band,
            "metric": self.metric,
            "value": self.value,
            "unit": self.unit,
            "why_none": self.why_none,
        }


def method_band(method: Mapping[str, Any]) -> MethodBand:
    """The band of a scored method of run.json (its ``metrics`` and ``counts``)."""
    metrics = method.get("metrics") or {}
    counts = method.get("counts") or {}
    longform = counts.get("longform")
    if isinstance(longform, dict):
        name, unit = "long_yaal", str(longform.get("latency_unit", "?"))
    else:
        name, unit = "yaal", str(counts.get("latency_unit", "?"))
    value = metrics.get(name)
    value = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    if unit != "ms":
        why = f"{name} is in source {unit}, not time: bands need timed streams"
        return MethodBand(None, name, value, unit, why)
    if value is None:
        return MethodBand(None, name, None, unit, f"no {name} (no displayed unit could be timed)")
    return MethodBand(band_of(value), name, value, unit)

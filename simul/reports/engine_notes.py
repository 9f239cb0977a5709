"""What a run's quality differences between methods can be trusted to mean: the engine's mode, and the noise
an exact-method control measures.

A method that keeps only the model's greedy tokens (SSBD at beta 0: a draft token is kept exactly when it is
the argmax) gives re-translation's outputs when every row's logits are those of a one-token pass (exact mode,
simul.decoding.backend.exactness). In fast mode a row's logits depend on the width of its pass, greedy choices
flip at near-ties, and such a control differs from RT by kernel noise alone. So in a run that holds RT and the
control, |metric(control) - metric(RT)| is a floor under which a method's quality difference from RT cannot
be told from that noise (about +-0.3 chrF per 100 FLORES streams in fast mode). Such differences
carry the mark ``~`` in the tables and in ``simul diff``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simul.metrics.registry import names

#: the quality metrics the control measures noise for (final outputs against the references)
QUALITY_METRICS = names(lambda m: m.quality)
NOISE_MARK = "~"


def engine_line(run: Mapping[str, Any]) -> str | None:
    """The caption line that says how the run's forward passes computed: "exact", or "batch-dependent (max
    |diff| X)" with the self-check's figure, and why a run made by default is not exact."""
    engine = (run.get("environment") or {}).get("engine")
    if not isinstance(engine, Mapping):
        return None
    check = engine.get("self_check") or {}
    widths = ", ".join(str(w.get("width")) for w in check.get("widths", []) if isinstance(w, Mapping))
    diff = check.get("max_abs_diff")
    if engine.get("mode") == "exact":
        line = "engine: exact (every row's logits those of a one-token pass"
        if widths and diff is not None:
            line += f"; start-up check max |diff| {diff:.3g} in passes of {widths} rows"
        return line + ")"
    line = "engine: batch-dependent"
    if diff is not None:
        line += f" (max |diff| {diff:.3g} between a row alone and in passes of {widths} rows)"
    line += ": quality differences between methods include kernel noise (--exact removes it)"
    because = engine.get("fast_because")
    if because:
        line += f"; not exact because {because}"
    return line


def _is_control(row: Mapping[str, Any]) -> bool:
    """SSBD at beta 0 without a target bias: greedy-exact, so in exact mode it equals RT token for token."""
    return (
        row.get("name") == "ssbd"
        and float(row.get("beta") or 0.0) == 0.0
        and not row.get("target_bias")
        and row.get("display", "mask") == "mask"
    )


def control_noise(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """|metric(control) - metric(RT)| for each quality metric both have (empty without RT or a control)."""
    rt = next((r for r in rows if r.get("name") == "rt"), None)
    control = next((r for r in rows if _is_control(r)), None)
    if rt is None or control is None:
        return {}
    out = {}
    for name in QUALITY_METRICS:
        a, b = (rt.get("metrics") or {}).get(name), (control.get("metrics") or {}).get(name)
        if isinstance(a, int | float) and isinstance(b, int | float):
            out[name] = abs(float(b) - float(a))
    return out


def within_noise(rows: Sequence[Mapping[str, Any]]) -> dict[str, set[str]]:
    """For each method key other than RT and the control: the quality metrics whose difference from RT is
    not zero and at most the control's noise."""
    noise = control_noise(rows)
    if not noise:
        return {}
    rt = next(r for r in rows if r.get("name") == "rt")
    out: dict[str, set[str]] = {}
    for row in rows:
        if row is rt or _is_control(row):
            continue
        marked = set()
        for name, floor in noise.items():
            a, b = (rt.get("metrics") or {}).get(name), (row.get("metrics") or {}).get(name)
            if isinstance(a, int | float) and isinstance(b, int | float):
                delta = abs(float(b) - float(a))
                if 0 < delta <= floor:
                    marked.add(name)
        if marked:
            out[str(row.get("key", row.get("name")))] = marked
    return out


def noise_line(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """The caption line for the marks of ``within_noise`` (None when nothing is marked)."""
    noise = control_noise(rows)
    marks = within_noise(rows)
    if not marks:
        return None
    floors = ", ".join(f"{name} {value:.3g}" for name, value in noise.items())
    return (
        f"{NOISE_MARK} quality difference from RT within the kernel noise that SSBD at beta 0 (an "
        f"exact-method control) measures against RT in this run: {floors}"
    )

"""The per-drafter lines under `simul eval`'s and `simul bench`'s tables: for each method whose
run files name the drafter of each token, A/D and A/O per drafter (run.json ``counts.drafters``,
simul.metrics.families.drafters), draft tokens and forward passes per update."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simul.common.safe_text import markup


def drafter_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per method that has per-drafter figures (none for RT, SSBD and CD: their A/D and A/O are the
    table's)."""
    lines = []
    for row in rows:
        figures = (row.get("counts") or {}).get("drafters")
        if not figures:
            continue
        parts = []
        for name, one in figures["by_drafter"].items():
            ad = "-" if one["ad"] is None else f"{one['ad']:.1f}"
            parts.append(f"{name} A/D {ad} A/O {one['ao']:.1f} ({one['accepted']}/{one['drafted']} drafted)")
        parts.append(f"draft tokens/update {figures['draft_tokens_per_update']:.1f}")
        parts.append(f"passes/update {figures['passes_per_update']:.1f} (one-token + verification)")
        lines.append(markup(f"{row['label']}: " + "; ".join(parts), newlines=False))
    return lines


def per_update_line(rows: Sequence[dict[str, Any]]) -> str:
    """`simul bench`'s line of draft tokens and forward passes per update, every method (its rows carry them:
    simul.reports.bench.per_update)."""

    def one(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    parts = [
        f"{row['label']} {one(row.get('passes_per_update'))} / {one(row.get('draft_tokens_per_update'))}"
        for row in rows
    ]
    return markup("per update, forward passes (one-token + verification) / draft tokens: " + "; ".join(parts))

"""Rich tables of run results, shaped like the SSBD paper's tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from simul.safe_text import markup

# metric, header, format; the order follows the paper's Table 2, then the figures it does not report
TABLE2_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("comet", "COMET", ".3f"),
    ("ne", "NE", ".2f"),
    ("ad", "A/D", ".1f"),
    ("ao", "A/O", ".1f"),
    ("tps", "TPS", ".0f"),
    ("speedup", "Speedup", ".2f"),
    ("chrf", "chrF", ".1f"),
    ("bleu", "BLEU", ".1f"),
    ("ne_display", "NE disp", ".2f"),
    ("latency", "LAAL", ".2f"),
)


def fmt(value: Any, spec: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, float | int):
        return format(value, spec)
    return markup(value)


def methods_table(
    methods: Sequence[dict[str, Any]],
    title: str | None = None,
    caption: str | None = None,
    columns: Sequence[tuple[str, str, str]] = TABLE2_COLUMNS,
    comet_available: bool = True,
) -> Table:
    """A row per method with the given metric columns."""
    table = Table(title=title, caption=caption, caption_justify="left", header_style="bold")
    table.add_column("Method", no_wrap=True)
    for _, header, _ in columns:
        table.add_column(header, justify="right")
    for method in methods:
        metrics = method["metrics"]
        cells = []
        for name, _, spec in columns:
            if name == "comet" and not comet_available and metrics.get(name) is None:
                cells.append("n/a")
            else:
                cells.append(fmt(metrics.get(name), spec))
        table.add_row(markup(method.get("label", method["name"]), newlines=False), *cells)
    return table

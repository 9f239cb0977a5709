"""Rich tables of run results, shaped like the SSBD paper's tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from simul.common.safe_text import markup
from simul.metrics.registry import METRICS
from simul.reports.engine_notes import NOISE_MARK, noise_line, within_noise
from simul.reports.timing_notes import MARK, TimingNotes


def spec_column(name: str) -> tuple[str, str, str]:
    """A table column of a metric as its record (simul.metrics.registry) titles and formats it."""
    info = METRICS[name]
    return (info.name, info.title, info.fmt)


# (metric, header, format) columns, titled and formatted by the metric records; the order follows the paper's
# Table 2, then the figures it does not report
TABLE2_NAMES = ("comet", "ne", "ad", "ao", "tps", "speedup", "chrf", "bleu", "ne_display", "latency")
TABLE2_COLUMNS: tuple[tuple[str, str, str], ...] = tuple(spec_column(name) for name in TABLE2_NAMES)

# Long-form runs (whole talks): resegmented quality and IWSLT 2026's latency (LongYAAL, its regime) instead
# of the sentence-level LAAL.
LONGFORM_COLUMNS: tuple[tuple[str, str, str], ...] = (
    *(c for c in TABLE2_COLUMNS if c[0] != "latency"),
    spec_column("long_yaal"),
    spec_column("ca_long_yaal"),
    ("regime", "Regime", ""),
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
    timing: TimingNotes | None = None,
) -> Table:
    """A row per method with the given metric columns; speed figures measured while the process got
    clearly less CPU than it asked for (``timing``) carry a mark, explained in the caption."""
    if tuple(columns) == TABLE2_COLUMNS and any("longform" in m.get("counts", {}) for m in methods):
        columns = LONGFORM_COLUMNS
    columns = learned_columns(methods, columns)
    truncated = xcomet_note(methods)
    if truncated:
        caption = f"{caption}\n{truncated}" if caption else truncated
    for note in (timing.threads_note, timing.changes_note, timing.note()) if timing is not None else ():
        if note:
            note = markup(note, newlines=False)
            caption = f"{caption}\n{note}" if caption else note
    degenerate = degeneracy_note(methods)
    if degenerate:
        caption = f"{caption}\n{degenerate}" if caption else degenerate
    noisy = within_noise(methods)
    noise = noise_line(methods)
    if noise:
        caption = f"{caption}\n{noise}" if caption else noise
    table = Table(title=title, caption=caption, caption_justify="left", header_style="bold")
    table.add_column("Method", no_wrap=True)
    for _, header, _ in columns:
        table.add_column(header, justify="right")
    for method in methods:
        metrics = method["metrics"]
        marked = timing.marks(method["key"]) if timing is not None and "key" in method else set()
        cells = []
        for name, _, spec in columns:
            if name == "regime":
                cells.append(markup(str((method.get("counts", {}).get("longform") or {}).get("regime", "-"))))
            elif name in ("comet", "xcomet") and not comet_available and metrics.get(name) is None:
                cells.append("n/a")
            else:
                cell = fmt(metrics.get(name), spec)
                if name in noisy.get(str(method.get("key", method.get("name"))), ()):
                    cell += NOISE_MARK
                cells.append(cell + MARK if name in marked and metrics.get(name) is not None else cell)
        table.add_row(markup(method.get("label", method["name"]), newlines=False), *cells)
    return table


def learned_columns(
    methods: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str, str]]
) -> list[tuple[str, str, str]]:
    """The columns with every learned metric the methods have (simul.metrics.registry: ``learned``) that
    they lack: one that ``replaces`` another goes in that column when no method has a figure there (XCOMET in
    COMET's column for a run scored with an XCOMET model alone), after it when some method has one, and
    nowhere when the columns lack it; the others at the end. A metric of Table 2's own columns (COMET) is
    never added: a table without it was asked for so (``--metric``)."""
    out = list(columns)
    for info in (i for i in METRICS.values() if i.learned and i.name not in TABLE2_NAMES):
        if info.name in {c[0] for c in out} or not any(info.name in m.get("metrics", {}) for m in methods):
            continue
        column = (info.name, info.title, info.fmt)
        names = [c[0] for c in out]
        if info.replaces is None:
            out.append(column)
        elif info.replaces not in names:
            continue
        elif any(m.get("metrics", {}).get(info.replaces) is not None for m in methods):
            out.insert(names.index(info.replaces) + 1, column)
        else:
            out[names.index(info.replaces)] = column
    return out


def xcomet_note(methods: Sequence[dict[str, Any]]) -> str | None:
    """A caption line when XCOMET cut some segments' input at its token limit (their spans and scores cover
    only what it read); None when none was cut or the run has no XCOMET."""
    parts = []
    for method in methods:
        counts = method.get("counts", {})
        cut = counts.get("xcomet_truncated")
        if isinstance(cut, int) and cut > 0:
            label = markup(method.get("label", method.get("name", "?")), newlines=False)
            parts.append(f"{label} {cut}")
    if not parts:
        return None
    limit = next((m["counts"].get("xcomet_max_tokens") for m in methods if "counts" in m), None)
    return (
        f"XCOMET truncated segments (input longer than the model's {limit or '?'} tokens, cut; "
        "error_spans.jsonl marks them): " + "; ".join(parts)
    )


def reference_note(methods: Sequence[dict[str, Any]]) -> str | None:
    """A caption line when some streams have no reference: quality figures then cover fewer streams."""
    counts = methods[0].get("counts", {}) if methods else {}
    streams, refs = counts.get("streams"), counts.get("references")
    if not isinstance(streams, int) or not isinstance(refs, int) or refs == streams:
        return None
    if refs == 0:
        return f"chrF, BLEU and COMET blank: none of the {streams} streams has a reference"
    missing = streams - refs
    return (
        f"chrF, BLEU and COMET on the {refs} of {streams} streams that have a reference; "
        f"{missing} {'has' if missing == 1 else 'have'} reference: null"
    )


def units_caption(methods: Sequence[dict[str, Any]]) -> str:
    """The footer line that states the units of every count-based figure in a table."""
    counts = methods[0].get("counts", {}) if methods else {}
    source = counts.get("latency_unit", "?")
    target = counts.get("target_latency_unit", "?")
    ne = counts.get("ne_unit", "?")
    line = (
        f"units: LAAL/AL/DAL/YAAL in source {source}, target counted in {target}s (metrics/units.py); "
        f"CA latencies in ms; NE in {ne} tokens, pooled over streams (ne_mean: mean of per-stream NE)"
    )
    if counts.get("talk_cost") or counts.get("longform"):
        info = counts.get("longform") or {}
        tool = (info.get("signatures") or {}).get("resegmentation", "?")
        line = (
            f"long-form (whole talks): NE in {ne} tokens over each talk's updates; COMET, chrF and BLEU on "
            f"the output re-segmented onto the reference segments ({tool}); "
            f"LongYAAL in {info.get('latency_unit', '?')} (CA: computation-aware), regime of IWSLT 2026 "
            "(low < 2 s, high 2-4 s)"
        )
        if counts.get("talk_cost"):
            line += "\n" + talk_cost_caption(methods)
    missing = counts.get("not_available")
    if isinstance(missing, list) and missing:
        line += f"; not available in these outputs: {', '.join(str(m) for m in missing)}"
    return line


def talk_cost_caption(methods: Sequence[dict[str, Any]]) -> str:
    """Long-form runs: mean time per update in each quarter of the talks, per method (metrics.talk_cost)."""
    parts = []
    largest = 0
    for method in methods:
        cost = method.get("counts", {}).get("talk_cost") or {}
        quarters = cost.get("cost_quarters_ms") or []
        if not quarters:
            continue
        shown = "/".join("-" if q is None else f"{q:.0f}" for q in quarters)
        growth = cost.get("cost_growth")
        label = method.get("label", method.get("name", "?"))
        parts.append(f"{label} {shown}" + (f" (x{growth:.2f})" if growth is not None else ""))
        largest = max(largest, int(cost.get("prompt_tokens_max") or 0))
    return (
        "ms per update by quarter of the talk (last/first in brackets): "
        + "; ".join(parts)
        + f"; largest prompt {largest} tokens"
    )


def degeneracy_note(methods: Sequence[dict[str, Any]]) -> str | None:
    """The footer line with OmniSTEval's short-form degeneracy diagnostics of every method
    (``metrics/degeneracy.py``), flagging a likely degenerate policy; None when no method has them."""
    parts = []
    for method in methods:
        metrics = method.get("metrics", {})
        swf, efsw, dsptv = (metrics.get(name) for name in ("swf", "efsw", "dsptv"))
        if swf is None:
            continue
        label = markup(method.get("label", method.get("name", "?")), newlines=False)
        efsw_text = "-" if efsw is None else f"{fmt(efsw, '.1f')}%"
        part = f"{label} SWF {fmt(swf, '.1f')}% EFSW {efsw_text} DSPTV {fmt(dsptv, '+.1f')}"
        if metrics.get("degenerate_policy") == 1:
            part += " [bold red]LIKELY DEGENERATE POLICY[/]"
        parts.append(part)
    if not parts:
        return None
    return "degeneracy (OmniSTEval short-form; |DSPTV| > 20 flags a degenerate policy): " + "; ".join(parts)

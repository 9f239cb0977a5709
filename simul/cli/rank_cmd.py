"""`simul rank RUN...`: rank systems as IWSLT 2026 does (simul.reports.rank): bands, quality, bootstrap."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from simul.cli.aliases import command_class
from simul.cli.common import JsonOpt, err_console, handle_errors, print_json
from simul.common.errors import UsageError
from simul.common.safe_text import markup, visible
from simul.metrics.bands import BAND_TITLES
from simul.metrics.registry import METRICS
from simul.reports.rank import METRIC_CHOICES, Group, Ranked, Ranking, System, rank
from simul.reports.significance import RankBootstrap


def _num(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _spec(metric: str) -> str:
    """The score's format: one decimal finer than the tables' (the metric record's), as a ranking tells
    close systems apart."""
    fmt = METRICS[metric].fmt
    decimals = re.fullmatch(r"\.(\d+)f", fmt)
    return f".{int(decimals[1]) + 1}f" if decimals else fmt


def _next(pair: RankBootstrap | None, spec: str) -> str:
    if pair is None:
        return "-"
    return (
        f"{format(pair.delta, '+' + spec)} [{format(pair.delta_low, '+' + spec)}, "
        f"{format(pair.delta_high, '+' + spec)}] p={pair.p:.3f}"
    )


def _ci(system: System, band: Ranked, index: int, spec: str) -> str:
    """The system's bootstrap mean ± half-interval, from the test with its better or worse neighbour."""
    pair = band.neighbours[index] if index < len(band.neighbours) else None
    if pair is not None:
        return f"{format(pair.a_mean, spec)} ± {format(pair.a_ci, spec)}"
    before = band.neighbours[index - 1] if index > 0 else None
    if before is not None:
        return f"{format(before.b_mean, spec)} ± {format(before.b_ci, spec)}"
    return "-"


def _latency(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:.2f} s" if unit == "ms" else f"{value:.2f} {unit}"


def rows(group: Group) -> list[tuple[str, ...]]:
    """A tuple per system: band, rank, system, score, mean ± CI, vs next, (Long)YAAL, StreamLAAL, CA,
    hardware."""
    spec = _spec(group.metric)
    out: list[tuple[str, ...]] = []
    for band in group.bands:
        for index, system in enumerate(band.systems):
            out.append(
                (
                    BAND_TITLES[band.band],
                    str(index + 1),
                    system.name,
                    _num(system.metrics.get(group.metric), spec),
                    _ci(system, band, index, spec),
                    _next(band.neighbours[index] if index < len(band.neighbours) else None, spec),
                    _latency(system.band.value, system.band.unit),
                    _latency(system.stream_laal, system.latency_unit),
                    _latency(system.ca_yaal, "ms"),
                    system.hardware,
                )
            )
    return out


def _headers(group: Group) -> tuple[str, ...]:
    title = METRICS[group.metric].title
    sentences = group.form == "sentences"
    return (
        "band",
        "#",
        "system",
        title,
        "mean ± 95% CI",
        "vs next: Δ [95% CI] p",
        "YAAL" if sentences else "LongYAAL",
        "LAAL" if sentences else "StreamLAAL",
        "YAAL CA" if sentences else "LongYAAL CA",
        "hardware",
    )


def _caption(group: Group, ranking: Ranking) -> list[str]:
    lines = [
        f"ranked by {METRICS[group.metric].title} ({group.metric_why})"
        + (f"; {group.signature}" if group.signature else ""),
        f"paired bootstrap with the next system: {ranking.samples} resamples, seed {ranking.seed} "
        + (
            "(sacrebleu's test on corpus scores)"
            if METRICS[group.metric].corpus_resampled
            else "(resampled segment scores)"
        ),
    ]
    for system, why in group.unranked:
        lines.append(f"unranked: {system.name}: {why}")
    for band in group.bands:
        if band.band is None:
            for system in band.systems:
                lines.append(f"no band: {system.name}: {system.band.why_none}")
    return lines


def render_table(ranking: Ranking) -> list[Table]:
    tables = []
    for group in ranking.groups:
        table = Table(
            title=markup(f"{group.pair}, {group.form}", newlines=False),
            caption="\n".join(markup(line, newlines=False) for line in _caption(group, ranking)),
            caption_justify="left",
            header_style="bold",
        )
        for header in _headers(group):
            table.add_column(header, justify="left" if header in ("band", "system", "hardware") else "right")
        for row in rows(group):
            table.add_row(*(markup(cell, newlines=False) for cell in row))
        tables.append(table)
    return tables


def _md(text: str) -> str:
    return visible(text, newlines=False).replace("|", "\\|")


def render_markdown(ranking: Ranking) -> str:
    lines = ["## simul rank", ""]
    for group in ranking.groups:
        lines += [f"### {_md(group.pair)}, {group.form}", ""]
        headers = _headers(group)
        lines.append("| " + " | ".join(headers) + " |")
        lines.append(
            "|" + "|".join("---" if h in ("band", "system", "hardware") else "---:" for h in headers) + "|"
        )
        for row in rows(group):
            lines.append("| " + " | ".join(_md(cell) for cell in row) + " |")
        lines.append("")
        lines += [f"> {_md(line)}" for line in _caption(group, ranking)]
        lines.append("")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    @app.command("rank", cls=command_class())
    @handle_errors
    def rank_command(
        runs: Annotated[
            list[Path], typer.Argument(help="Run directories (simul's own or `simul ingest`'s).")
        ],
        metric: Annotated[
            str,
            typer.Option(
                "--metric",
                help=f"Quality metric to rank by: {', '.join(METRIC_CHOICES)}. auto: XCOMET where every "
                "system has it from one model, else COMET likewise, else chrF.",
            ),
        ] = "auto",
        bootstrap: Annotated[
            int, typer.Option(help="Paired bootstrap resamples between neighbours (0: off).")
        ] = 1000,
        as_json: JsonOpt = False,
        markdown: Annotated[
            bool,
            typer.Option(
                "--markdown", help="Print the ranking as markdown on stdout (instead of the table)."
            ),
        ] = False,
    ) -> None:
        """Rank systems as IWSLT 2026 does: latency band from LongYAAL, then quality, with bootstrap CIs.

        Per language pair and set of streams: each system's band from its non-computation-aware LongYAAL
        (sentence-level runs: YAAL), Low up to 2 s and High up to 4 s; within a band, systems ranked by XCOMET
        where scored, else COMET, else chrF (--metric), with sacrebleu's paired bootstrap between neighbours;
        StreamLAAL, computation-aware LongYAAL and the hardware beside each system."""
        if as_json and markdown:
            raise UsageError("--json and --markdown are two forms of the same report: choose one")
        ranking = rank(runs, metric, bootstrap)
        if as_json:
            print_json(ranking.to_json())
        elif markdown:
            typer.echo(render_markdown(ranking), nl=False)
        else:
            for table in render_table(ranking):
                err_console.print(table)

"""`simul diff BASE NEW`: compare two runs, for people (a table) and for CI (exit code 3 on a regression)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from simul.cli.aliases import Alias, command_class
from simul.cli.common import err_console, handle_errors, print_json
from simul.common.errors import UsageError
from simul.common.safe_text import markup, visible
from simul.metrics.registry import METRICS, metric_info
from simul.reports.compare import (
    ALPHA,
    DEFAULT_MAX_DROP,
    DEFAULT_MAX_INCREASE,
    Comparison,
    Incomparable,
    MethodComparison,
    MetricRow,
    compare,
    parse_pairs,
    parse_thresholds,
)
from simul.reports.engine_notes import NOISE_MARK
from simul.reports.timing_notes import MARK, UNRELIABLE_WHY

EXIT_REGRESSION = 3
EXIT_INCOMPARABLE = 2
# The old --format table|markdown|json: --format names the format of a data file everywhere else (ingest,
# export, streams text, streams export), so the report's form is a flag, as --json is in every command.
OLD_FORMAT = Alias(
    "--format", "--json or --markdown", {"json": ("--json",), "markdown": ("--markdown",), "table": ()}
)


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _value(value: float | None, unreliable: str | None) -> str:
    """A figure, marked when it was measured while the process got clearly less CPU than it asked for."""
    return _num(value) + (MARK if unreliable is not None and value is not None else "")


def timing_lines(method: MethodComparison) -> list[str]:
    """Why the marked speed figures of a method are unreliable, once per run and reason."""
    seen: dict[str, None] = {}
    for row in method.rows:
        for side, why in (("base", row.base_unreliable), ("new", row.new_unreliable)):
            if why is not None:
                seen.setdefault(f"{side} run: {why}", None)
    if not seen:
        return []
    return [f"{MARK} speed figures unreliable ({UNRELIABLE_WHY}): " + "; ".join(seen)]


def _delta(row: MetricRow) -> str:
    """The change; marked ``~`` when it is within the kernel noise of the runs' SSBD beta-0 control."""
    delta = row.delta
    if delta is None:
        return "-"
    return f"{delta:+.3f}" + (
        f" {NOISE_MARK} (noise {row.kernel_noise:.3g})" if row.within_kernel_noise else ""
    )


def _noise(row: MetricRow) -> str:
    """The paired bootstrap of a quality metric, or a speed figure's 95 % intervals in both runs."""
    if row.intervals is not None:
        (b_low, b_high), (n_low, n_high) = row.intervals
        return f"95%: [{b_low:.4g}, {b_high:.4g}] -> [{n_low:.4g}, {n_high:.4g}]"
    b = row.bootstrap
    if b is None:
        return ""
    return f"p={b.p:.3f} [{b.ci_low:+.2f}, {b.ci_high:+.2f}]"


def _threshold(row: MetricRow) -> str:
    if row.threshold is None:
        return ""
    return f"{'-' if row.higher_is_better else '+'}{row.threshold:g}"


STYLE = {"better": "green", "worse": "yellow", "REGRESSION": "bold red", "within noise": "cyan"}


def render_table(comparison: Comparison) -> list[Table]:
    tables = []
    for method in comparison.methods:
        table = Table(title=markup(method.label, newlines=False), title_justify="left", header_style="bold")
        for header in ("metric", "base", "new", "delta", "limit", "paired bootstrap", "verdict"):
            table.add_column(
                header, justify="left" if header in ("metric", "verdict", "paired bootstrap") else "right"
            )
        for row in method.rows:
            style = STYLE.get(row.verdict, "")
            table.add_row(
                METRICS[row.name].title,
                _value(row.base, row.base_unreliable),
                _value(row.new, row.new_unreliable),
                _delta(row),
                _threshold(row),
                _noise(row),
                f"[{style}]{row.verdict}[/]" if style else row.verdict,
            )
        streams = method.streams
        caption = [markup(line, newlines=False) for line in timing_lines(method)]
        if streams:
            worst = ", ".join(
                f"{markup(w['stream'], newlines=False)} ({w['chrf_delta']:+.1f})" for w in streams["worst"]
            )
            caption.insert(
                0,
                f"per stream (sentence chrF): {streams['worse']} worse, {streams['better']} better, "
                f"{streams['same']} same of {streams['compared']}" + (f"; worst: {worst}" if worst else ""),
            )
        if caption:
            table.caption = "\n".join(caption)
            table.caption_justify = "left"
        tables.append(table)
    return tables


def render_markdown(comparison: Comparison) -> str:
    regressions = comparison.regressions
    count = len(regressions) + len(comparison.band_regressions)
    lines = [
        "## simul diff",
        "",
        f"base `{_md(comparison.base)}` vs new `{_md(comparison.new)}`: "
        + (f"**{count} regression(s)**" if count else "no regression"),
        "",
    ]
    for note in comparison.notes + [f"not comparable: {r} (forced)" for r in comparison.reasons]:
        lines.append(f"> {_md(note)}")
    for method in comparison.methods:
        lines += [
            "",
            f"### {_md(method.label)}",
            "",
            "| metric | base | new | delta | limit | paired bootstrap | verdict |",
        ]
        lines.append("|---|---:|---:|---:|---:|---|---|")
        for row in method.rows:
            verdict = f"**{row.verdict}**" if row.verdict == "REGRESSION" else row.verdict
            lines.append(
                f"| {METRICS[row.name].title} | {_value(row.base, row.base_unreliable)} | "
                f"{_value(row.new, row.new_unreliable)} | {_delta(row)} | "
                f"{_threshold(row)} | {_noise(row)} | {verdict} |"
            )
        lines += [f"\n> {_md(line)}" for line in timing_lines(method)]
        streams = method.streams
        if streams:
            lines += [
                "",
                f"Per stream (sentence chrF): {streams['worse']} worse, {streams['better']} better, "
                f"{streams['same']} unchanged of {streams['compared']}.",
            ]
            if streams["worst"]:
                lines += ["", "| stream | chrF delta | base | new |", "|---|---:|---|---|"]
                for w in streams["worst"]:
                    base, new, stream = (_md(w[k]) for k in ("base", "new", "stream"))
                    lines.append(f"| {stream} | {w['chrf_delta']:+.2f} | {base} | {new} |")
    return "\n".join(lines) + "\n"


def _md(text: object) -> str:
    """Data text in a markdown table or line: one line, no control characters, ``|`` escaped."""
    return visible(text, newlines=False).replace("|", "\\|")


def _defaults(values: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in values.items())


def register(app: typer.Typer) -> None:
    @app.command("diff", cls=command_class(OLD_FORMAT))
    @handle_errors
    def diff_command(
        base: Annotated[Path, typer.Argument(help="Baseline run directory (or its run.json).")],
        new: Annotated[Path, typer.Argument(help="New run directory (or its run.json).")],
        max_drop: Annotated[
            list[str] | None,
            typer.Option(
                "--max-drop",
                help="Fail when a higher-is-better metric drops by more, e.g. chrf=0.5 (repeatable; 'none' "
                f"disables a default). Defaults: {_defaults(DEFAULT_MAX_DROP)}.",
            ),
        ] = None,
        max_increase: Annotated[
            list[str] | None,
            typer.Option(
                "--max-increase",
                help="Fail when a lower-is-better metric rises by more, e.g. ne=0.05. Defaults: "
                f"{_defaults(DEFAULT_MAX_INCREASE)}.",
            ),
        ] = None,
        pair: Annotated[
            list[str] | None,
            typer.Option(
                "--pair",
                help="Compare base method BASE_KEY with new method NEW_KEY although their keys differ, e.g. "
                "--pair rt=ext-mysystem for an RT baseline against an ingested system (repeatable; keys as "
                "in run.json).",
            ),
        ] = None,
        force: Annotated[
            bool,
            typer.Option(
                help="Compare runs over different streams or signature parameters, or that lack a metric."
            ),
        ] = False,
        strict_versions: Annotated[
            bool,
            typer.Option(
                "--strict-versions",
                help="Refuse runs scored or decoded with other library versions (sacrebleu, unbabel-comet, "
                "torch, llama-cpp-python, ...) or another COMET batch size; by default these are noted.",
            ),
        ] = False,
        allow_missing: Annotated[
            list[str] | None,
            typer.Option(
                "--allow-missing",
                help="Compare although the new run lacks this metric that the base run has and a threshold "
                "checks, e.g. comet (repeatable); by default that is refused.",
            ),
        ] = None,
        bootstrap: Annotated[
            int, typer.Option(help="Paired bootstrap resamples for chrF, BLEU and COMET (0: off).")
        ] = 1000,
        worst: Annotated[int, typer.Option(help="How many of the most degraded streams to list.")] = 5,
        allow_noise: Annotated[
            bool,
            typer.Option(
                "--allow-noise",
                help="Let a threshold crossing pass when the paired bootstrap finds it within noise "
                "(p >= 0.05).",
            ),
        ] = False,
        keep_band: Annotated[
            bool,
            typer.Option(
                "--keep-band",
                help="Fail (exit 3) when a method leaves the base run's IWSLT 2026 latency band (Low up to "
                "2 s, High up to 4 s of non-computation-aware LongYAAL; YAAL for sentences), either way.",
            ),
        ] = False,
        as_json: Annotated[
            bool,
            typer.Option("--json", help="Print the comparison as JSON on stdout (instead of the table)."),
        ] = False,
        markdown: Annotated[
            bool,
            typer.Option(
                "--markdown",
                help="Print the comparison as markdown on stdout, for a CI comment (instead of the table).",
            ),
        ] = False,
    ) -> None:
        """Compare two runs; exit 3 when a metric regresses beyond its threshold (and beyond noise).

        Refuses (exit 2) runs over other streams or references, with metric signatures of other parameters
        (tokenizer, references, n-gram orders, COMET model, NE unit), or whose new run lacks a thresholded
        metric of the base run; library versions, COMET's batch size and the CPU are noted, naming both
        sides (refused with --strict-versions, except the CPU).
        """
        if as_json and markdown:
            raise UsageError("--json and --markdown are two forms of the same report: choose one")
        drops = parse_thresholds(max_drop or [], "--max-drop")
        increases = parse_thresholds(max_increase or [], "--max-increase")
        pairs = parse_pairs(pair or [])
        allowed = [metric_info(name.strip()).name for name in allow_missing or []]
        try:
            comparison = compare(
                base,
                new,
                drops,
                increases,
                force=force,
                bootstrap_samples=bootstrap,
                worst=worst,
                allow_noise=allow_noise,
                pairs=pairs,
                strict_versions=strict_versions,
                allow_missing=allowed,
                keep_band=keep_band,
            )
        except Incomparable as exc:
            err_console.print(f"[bold red]refused:[/] {markup(exc)}", soft_wrap=True)
            raise typer.Exit(code=EXIT_INCOMPARABLE) from None
        regressions = comparison.regressions
        left = comparison.band_regressions
        if as_json:
            failing = regressions or left
            print_json({**comparison.to_json(), "exit_code": EXIT_REGRESSION if failing else 0})
        elif markdown:
            typer.echo(render_markdown(comparison), nl=False)
        else:
            for note in comparison.notes:
                err_console.print(f"[dim]note:[/] {markup(note)}", soft_wrap=True)
            for table in render_table(comparison):
                err_console.print(table)
        if regressions:
            listed = ", ".join(
                f"{METRICS[r.name].title} ({markup(label)}"
                f"{', within noise' if r.verdict == 'within noise' else ''})"
                for label, r in regressions
            )
            err_console.print(f"[bold red]regression:[/] {listed}")
        if left:
            listed = ", ".join(f"{markup(m.label)} ({m.band[0]} -> {m.band[1] or 'no band'})" for m in left)
            err_console.print(f"[bold red]left its latency band (--keep-band):[/] {listed}")
        if regressions or left:
            raise typer.Exit(code=EXIT_REGRESSION)
        noted = sum(1 for m in comparison.methods for r in m.rows if r.verdict == "within noise")
        extra = f"; {noted} threshold crossing(s) within noise allowed" if noted else ""
        err_console.print(f"[green]no regression[/] (alpha {ALPHA} for the paired bootstrap{extra})")

"""The tables of `simul bench` (Rich): the methods with their speed figures and where update time went, and
the batched run beside the single-stream one (the figures: simul.reports.bench)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from simul.common.safe_text import markup
from simul.machine.calibration import PassCosts
from simul.metrics.intervals import read_interval
from simul.metrics.registry import METRICS
from simul.reports.tables import fmt, spec_column
from simul.reports.timing_notes import MARK, TimingNotes

# the speedup the machine allows each method (simul.reports.bench), a column of its own beside the metrics
BOUND = ("bound", "Bound", ".2f")
# the methods' speed figures, titled and formatted by the metric records, and the bound after the speedup
BENCH_COLUMNS: tuple[tuple[str, str, str], ...] = (
    spec_column("tps"),
    spec_column("speedup"),
    BOUND,
    *(
        spec_column(name)
        for name in (
            *("ideal_speedup", "efficiency", "row_cost", "ad", "ao"),
            *("p50_update_ms", "p95_update_ms", "tps_e2e", "speedup_e2e", "chrf"),
        )
    ),
)


# the speed figures whose cells carry their 95 % interval (run.json's speed_intervals)
WITH_INTERVAL = ("tps", "speedup", "tps_e2e", "speedup_e2e")


def interval_text(intervals: Mapping[str, Any] | None, key: str, name: str, spec: str) -> str:
    """``[low-high]`` of a method's speed figure, formatted as the figure; "" without an interval."""
    bounds = read_interval(intervals, key, name)
    return "" if bounds is None else f"[{fmt(bounds[0], spec)}-{fmt(bounds[1], spec)}]"


def intervals_line(intervals: Mapping[str, Any] | None) -> str | None:
    """What the bracketed intervals are, for the caption."""
    if not intervals:
        return None
    rounds, streams = intervals.get("rounds"), intervals.get("streams")
    over = f"{rounds} rounds and {streams} streams" if rounds != 1 else f"{streams} streams (one round)"
    return (
        f"[a-b] under a speed figure: its 95 % interval, paired bootstrap over {over} "
        f"({intervals.get('resamples')} resamples; simul bench --rounds N adds the machine's drift between "
        "passes)"
    )


def bench_table(
    rows: list[dict[str, Any]],
    title: str,
    timing: TimingNotes | None = None,
    costs: PassCosts | None = None,
    intervals: Mapping[str, Any] | None = None,
) -> Table:
    table = Table(title=title, header_style="bold", caption_justify="left")
    table.add_column("Method", justify="left", no_wrap=True)
    for _, header, _ in BENCH_COLUMNS:
        table.add_column(header, justify="right", no_wrap=True)
    for part in ("prompt%", "verify%", "decode%", "py%"):
        table.add_column(part, justify="right", no_wrap=True)
    table.add_column("frozen", justify="right")
    for row in rows:
        cells = [markup(row["label"], newlines=False)]
        marked = timing.marks(row["key"]) if timing is not None else set()
        for name, _, spec in BENCH_COLUMNS:
            value = row.get(BOUND[0]) if name == BOUND[0] else row["metrics"].get(name)
            cell = fmt(value, spec) + (MARK if name in marked and value is not None else "")
            spread = interval_text(intervals, row["key"], name, spec) if name in WITH_INTERVAL else ""
            if spread and value is not None:
                cell += "\n" + spread  # below the figure: the columns stay as narrow as the figures
            cells.append(cell)
        cells += [f"{row['time_split'][p]:.1f}" for p in ("prompt", "verify", "decode", "python")]
        cells.append(f"{row['frozen_steps']}/{row['steps']}")
        table.add_row(*cells)
    table.caption = (
        "TPS: output tokens per second of generation (after the prompt; SSBD's verification included), as in "
        "the paper; e2e: per second of whole updates. Eff. = speedup / ideal, ideal = 1/(1-A/O). c: time per "
        "draft row in verification passes / time per one-token decode; speedup ~ 1/((1-A/O) + c*A/O/A/D). "
        "frozen: steps that kept the whole draft and decoded nothing new. prompt/verify/decode/py%: shares "
        "of update time in prompt passes, draft passes, one-token passes and the rest (Python)."
    )
    explained = intervals_line(intervals)
    if explained:
        table.caption += "\n" + markup(explained, newlines=False)
    if costs is not None:
        table.caption += "\n" + calibration_line(costs)
    for note in (timing.threads_note, timing.changes_note, timing.note()) if timing is not None else ():
        if note:
            table.caption += "\n" + markup(note, newlines=False)
    return table


def calibration_line(costs: PassCosts) -> str:
    """The machine's pass costs as calibrated before the run, and what the Bound column is."""
    single = (
        f" (1 thread: {costs.one_token_single_ms:.2f} ms, thread efficiency {costs.efficiency:.2f})"
        if costs.one_token_single_ms is not None and costs.efficiency is not None
        else ""
    )
    return (
        f"Machine, calibrated before the run on {costs.threads} thread{'s' if costs.threads != 1 else ''}: "
        f"one-token pass {costs.one_token_ms:.2f} ms{single}, verified row {costs.row_ms:.2f} ms in a "
        f"{costs.draft}-row pass, c_min {costs.c_min:.3f}. Bound: the speedup the machine allows each method "
        "that verifies drafts at its own A/D and A/O, 1/((1-A/O) + (c+d)*A/O/A/D), with c what its "
        "verification passes cost at their widths as calibrated (c_min: if every pass were as wide as the "
        "calibration's) and d a draft model's seconds per drafted token over a one-token pass (else 0)."
    )


def side_by_side_table(doc: dict[str, Any]) -> Table:
    table = Table(
        title=f"--parallel {doc['parallel']} beside --parallel 1, taking turns in one process",
        header_style="bold",
    )
    for header in ("N", "turns", "wall s", "CPU/wall", "load", "updates/s", "out tok/s"):
        table.add_column(header, justify="right", no_wrap=True)
    for side in doc["runs"]:
        table.add_row(
            str(side["parallel"]),
            str(side["turns"]),
            fmt(side["wall_seconds"], ".1f"),
            fmt(side["cpu_per_wall"], ".2f"),
            fmt(side["load1_mean"], ".2f"),
            fmt(side["updates_per_second"], ".2f"),
            fmt(side["output_tokens_per_second"], ".1f"),
        )
    return table


AGREEMENT_NAMES = {name: METRICS[name].title for name in ("chrf", "ne", "ad", "ao")}


def side_by_side_notes(doc: dict[str, Any], labels: dict[str, str]) -> list[str]:
    """The ratio, and per method how far the batched run's outputs and metrics moved (Rich markup)."""
    n = doc["parallel"]
    lines = [
        f"N = {n} took {fmt(doc['wall_ratio'], '.3f')} of the wall time of N = 1 "
        f"({fmt(doc['throughput_gain'], '.2f')}x the throughput); wall, CPU/wall and load are over each "
        "run's own turns of decoding."
    ]
    for m in doc["agreement"]:
        d = m["metrics"]
        deltas = ", ".join(
            f"{label} {d[name]['delta']:+.2f}"
            for name, label in AGREEMENT_NAMES.items()
            if d[name]["delta"] is not None
        )
        lines.append(
            f"{markup(labels.get(m['method'], m['method']), newlines=False)}: final outputs identical in "
            f"{m['same_final_outputs']}/{m['streams']} streams, step outputs in "
            f"{m['same_step_outputs']}/{m['steps']}; N = {n} minus N = 1: {deltas}"
        )
    return lines


def modes_table(doc: dict[str, Any], labels: dict[str, str]) -> Table:
    """Exact mode beside fast mode, taking turns in one process (simul.reports.bench.modes_json)."""
    table = Table(title="exact mode beside fast mode, taking turns in one process", header_style="bold")
    for header in (
        "Method",
        "TPS exact",
        "TPS fast",
        "exact/fast",
        "Spd exact",
        "Spd fast",
        "chrF exact",
        "chrF fast",
        "same finals",
    ):
        table.add_column(header, justify="left" if header == "Method" else "right", no_wrap=True)
    same = {m["method"]: m for m in doc["agreement"]}
    for row in doc["methods"]:
        agree = same.get(row["method"])
        table.add_row(
            markup(labels.get(row["method"], row["method"]), newlines=False),
            fmt(row["tps"]["exact"], ".1f"),
            fmt(row["tps"]["fast"], ".1f"),
            fmt(row["tps_ratio"], ".3f"),
            fmt(row["speedup"]["exact"], ".2f"),
            fmt(row["speedup"]["fast"], ".2f"),
            fmt(row["chrf"]["exact"], ".2f"),
            fmt(row["chrf"]["fast"], ".2f"),
            f"{agree['same_final_outputs']}/{agree['streams']}" if agree else "-",
        )
    lanes = ", ".join(
        f"{lane['name']}: {fmt(lane['wall_seconds'], '.1f')} s over {lane['turns']} turns, CPU/wall "
        f"{fmt(lane['cpu_per_wall'], '.2f')}, load {fmt(lane['load1_mean'], '.2f')}"
        for lane in doc["lanes"]
    )
    table.caption = (
        "TPS and speedup as in the table above, each mode against its own RT; exact/fast: the ratio of their "
        f"TPS; same finals: streams whose final output is the same in both modes. Lanes: {lanes}"
    )
    table.caption_justify = "left"
    return table


def speed_intervals_caption(
    intervals: Mapping[str, Any] | None, rows: Sequence[Mapping[str, Any]]
) -> str | None:
    """`simul eval`'s caption line: each method's TPS and speedup intervals (the table keeps its columns)."""
    if not intervals:
        return None
    parts = []
    for row in rows:
        tps = interval_text(intervals, row["key"], "tps", ".0f")
        speedup = interval_text(intervals, row["key"], "speedup", ".2f")
        if tps:
            parts.append(f"{row['label']} TPS {tps}" + (f", speedup {speedup}" if speedup else ""))
    if not parts:
        return None
    line = intervals_line(intervals) or ""
    return f"{'; '.join(parts)}. {line}"


def kv_cache_line(record: Mapping[str, Any] | None) -> str | None:
    """The KV cache the run's context held (run.json's ``environment.kv_cache``), for a caption."""
    if not isinstance(record, Mapping):
        return None
    values = [record.get(k) for k in ("streams", "positions_per_stream", "bytes_per_stream", "bytes")]
    whole = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    if len(whole) != len(values):
        return None
    streams, positions, each, total = whole
    mib = 2.0**20
    return (
        f"KV cache ({record.get('type', 'f16')} keys and values): {streams} stream"
        f"{'s' if streams != 1 else ''} x {positions} positions, {each / mib:.1f} MiB a stream, "
        f"{total / mib:.1f} MiB in all"
    )

"""`simul bench`: RT, SSBD and CD on the same streams, with where the time goes.

It runs `simul eval`'s code path (one model load, methods interleaved stream by stream) and adds the split of
update time into prompt evaluation, draft verification, one-token decoding and the rest (tokenizing, argmax,
acceptance tests, detokenizing: Python-side work).

With ``--parallel N`` it also decodes the same streams N at a time (batched forward passes) beside the
single-stream run, the two taking turns in one process (simul.runs.side_by_side), and reports what
batching buys: throughput of each, their ratio, and how far the batched outputs and metrics move. TPS and
speedup in the paper's sense stay those of the single-stream run.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from simul.cli.common import (
    ContextSentencesOpt,
    FuseOpt,
    LimitOpt,
    MaxWindowOpt,
    ModelOpt,
    NCtxOpt,
    NGpuLayersOpt,
    OverwriteOpt,
    ParallelOpt,
    TemplateOpt,
    ThreadsOpt,
    VerifyChunkOpt,
    err_console,
    handle_errors,
    print_json,
)
from simul.cli.running import engine_settings, run_side_by_side_with_progress, run_with_progress
from simul.common.errors import UsageError
from simul.common.paths import default_streams_file
from simul.common.safe_text import markup
from simul.decoding.longform import WindowPolicy
from simul.decoding.records import StreamResult
from simul.machine.calibration import PassCosts
from simul.metrics.speed import calibrated_bound
from simul.reports.agreement import agreement
from simul.reports.tables import fmt
from simul.reports.timing_notes import MARK, TimingNotes
from simul.request.methods import Method
from simul.runs.evaluation import EvalOutcome, EvalRequest
from simul.runs.side_by_side import LaneRecord


def time_split(counts: dict[str, Any]) -> dict[str, float]:
    """Shares (percent) of total update time spent in each part."""
    total = counts["prompt_seconds"] + counts["gen_seconds"]
    if total <= 0:
        return {"prompt": 0.0, "verify": 0.0, "decode": 0.0, "python": 0.0}
    prompt = counts["prompt_eval_seconds"]
    verify = counts["verify_seconds"]
    decode = counts["decode_seconds"]
    return {
        "prompt": round(100 * prompt / total, 1),
        "verify": round(100 * verify / total, 1),
        "decode": round(100 * decode / total, 1),
        "python": round(100 * (total - prompt - verify - decode) / total, 1),
    }


def verification_passes(results: list[StreamResult], chunk: int) -> list[int]:
    """The widths (rows) of a method's verification passes, from its step records: one pass per step with
    draft rows, or passes of ``chunk`` rows and a remainder with --verify-chunk."""
    widths: list[int] = []
    for result in results:
        for step in result.steps:
            rows = step.verify_rows
            if rows <= 0:
                continue
            if chunk > 0:
                widths += [chunk] * (rows // chunk) + ([rows % chunk] if rows % chunk else [])
            else:
                widths.append(rows)
    return widths


def speed_bounds(
    costs: PassCosts | None, metrics: dict[str, Any], widths: list[int]
) -> tuple[float | None, float | None, float | None]:
    """(bound at c_min, bound for the run's own pass widths, c_run) at the method's A/D and A/O
    (simul.machine.calibration); Nones without a calibration or a draft."""
    ad, ao = metrics.get("ad"), metrics.get("ao")
    if costs is None or not isinstance(ad, int | float) or not isinstance(ao, int | float) or ad <= 0:
        return None, None, None
    at_min = calibrated_bound(costs, float(ad), float(ao))
    at_run = calibrated_bound(costs, float(ad), float(ao), widths)
    c_run = costs.run_row_cost(widths)

    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 3)

    return r(at_min), r(at_run), r(c_run)


def bench_rows(outcome: EvalOutcome, costs: PassCosts | None) -> list[dict[str, Any]]:
    rows = []
    chunk = int(outcome.run["config"].get("verify_chunk") or 0)
    for method in outcome.scored.methods_json():
        counts = method["counts"]
        # the model of the bound is SSBD's (biased verification of the whole draft, logits at every row)
        bound_min = bound = c_run = None
        if method.get("name") == "ssbd":
            widths = verification_passes(outcome.results.get(method["key"], []), chunk)
            bound_min, bound, c_run = speed_bounds(costs, method["metrics"], widths)
        speedup = method["metrics"].get("speedup")
        rows.append(
            {
                "key": method["key"],
                "label": method["label"],
                "metrics": method["metrics"],
                "bound": bound,
                "bound_c_min": bound_min,
                "c_run": c_run,
                "of_bound": round(speedup / bound, 3) if bound and isinstance(speedup, int | float) else None,
                "time_split": time_split(counts),
                "seconds": {
                    k: counts[k]
                    for k in (
                        "prompt_seconds",
                        "gen_seconds",
                        "prompt_eval_seconds",
                        "verify_seconds",
                        "decode_seconds",
                    )
                },
                "verify_rows": counts.get("verify_rows", 0),
                "decode_passes": counts.get("decode_passes", 0),
                "frozen_steps": counts["frozen_steps"],
                "steps": counts["steps"],
            }
        )
    return rows


def bench_table(
    rows: list[dict[str, Any]],
    title: str,
    timing: TimingNotes | None = None,
    costs: PassCosts | None = None,
) -> Table:
    table = Table(title=title, header_style="bold", caption_justify="left")
    columns = [
        ("Method", None),
        ("TPS", ("tps", ".0f")),
        ("Speedup", ("speedup", ".2f")),
        ("Bound", ("bound", ".2f")),
        ("Ideal", ("ideal_speedup", ".2f")),
        ("Eff.", ("efficiency", ".2f")),
        ("c", ("row_cost", ".2f")),
        ("A/D", ("ad", ".1f")),
        ("A/O", ("ao", ".1f")),
        ("p50 ms", ("p50_update_ms", ".0f")),
        ("p95 ms", ("p95_update_ms", ".0f")),
        ("TPS e2e", ("tps_e2e", ".0f")),
        ("Spd e2e", ("speedup_e2e", ".2f")),
        ("chrF", ("chrf", ".1f")),
    ]
    for header, _ in columns:
        table.add_column(header, justify="left" if header == "Method" else "right", no_wrap=True)
    for part in ("prompt%", "verify%", "decode%", "py%"):
        table.add_column(part, justify="right", no_wrap=True)
    table.add_column("frozen", justify="right")
    for row in rows:
        cells = [markup(row["label"], newlines=False)]
        marked = timing.marks(row["key"]) if timing is not None else set()
        for _, spec in columns[1:]:
            assert spec is not None
            value = row.get("bound") if spec[0] == "bound" else row["metrics"].get(spec[0])
            cells.append(fmt(value, spec[1]) + (MARK if spec[0] in marked and value is not None else ""))
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
    if costs is not None:
        table.caption += "\n" + calibration_line(costs)
    for note in (timing.threads_note, timing.note()) if timing is not None else ():
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
        f"{costs.draft}-row pass, c_min {costs.c_min:.3f}. Bound: SSBD's speedup that the machine allows at "
        "the run's A/D and A/O, 1/((1-A/O) + c*A/O/A/D), with c what the run's verification passes cost at "
        "their widths as calibrated (c_min: if every pass were as wide as the calibration's)."
    )


def side_by_side_json(
    base: EvalOutcome, batched: EvalOutcome, lanes: list[LaneRecord], parallel: int
) -> dict[str, Any]:
    """Throughput of the single-stream and the batched run (their own turns' wall and CPU time), the ratio
    of their wall times, and how far the batched results move (simul.reports.agreement)."""
    sides = []
    for outcome, lane in zip((base, batched), lanes, strict=True):
        rate = outcome.run.get("throughput") or {}
        sides.append(
            {
                **lane.to_json(),
                **{
                    k: rate.get(k)
                    for k in (
                        "parallel",
                        "streams",
                        "updates",
                        "output_tokens",
                        "updates_per_second",
                        "output_tokens_per_second",
                    )
                },
            }
        )
    wall_1, wall_n = lanes[0].wall_seconds, lanes[1].wall_seconds
    metrics = [{m["key"]: m["metrics"] for m in outcome.scored.methods_json()} for outcome in (base, batched)]
    return {
        "parallel": parallel,
        "runs": sides,
        "wall_ratio": round(wall_n / wall_1, 4) if wall_1 > 0 else None,
        "throughput_gain": round(wall_1 / wall_n, 3) if wall_n > 0 else None,
        "agreement": agreement(base.results, batched.results, metrics[0], metrics[1]),
    }


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


AGREEMENT_NAMES = {"chrf": "chrF", "ne": "NE", "ad": "A/D", "ao": "A/O"}


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


def register(app: typer.Typer) -> None:
    @app.command("bench")
    @handle_errors
    def bench_command(
        streams: Annotated[
            Path | None, typer.Option(help="Stream file. Default: the shipped sample.")
        ] = None,
        beta: Annotated[float, typer.Option(help="SSBD bias.")] = 0.2,
        ending: Annotated[str, typer.Option(help="SSBD ending option: keep, unbiased or reopen.")] = "keep",
        resync: Annotated[int, typer.Option(help="SSBD re-synchronisation n-gram (0: off).")] = 0,
        compare_options: Annotated[
            bool,
            typer.Option(
                "--options/--no-options",
                help="Also run SSBD with the given ending/resync next to plain SSBD.",
            ),
        ] = False,
        cd: Annotated[bool, typer.Option("--cd/--no-cd", help="Include continuous decoding.")] = True,
        model: ModelOpt = None,
        template: TemplateOpt = "auto",
        limit: LimitOpt = None,
        threads: ThreadsOpt = None,
        n_ctx: NCtxOpt = 2048,
        fuse: FuseOpt = False,
        verify_chunk: VerifyChunkOpt = 0,
        max_window: MaxWindowOpt = 30,
        context_sentences: ContextSentencesOpt = 1,
        n_gpu_layers: NGpuLayersOpt = None,
        parallel: ParallelOpt = 1,
        out: Annotated[Path | None, typer.Option(help="Also write the run directory here.")] = None,
        parallel_out: Annotated[
            Path | None,
            typer.Option(help="With --parallel N > 1: also write the batched run directory here."),
        ] = None,
        overwrite: OverwriteOpt = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON on stdout.")] = False,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or table.")] = False,
    ) -> None:
        """Measure decoding speed of RT, SSBD and CD on the same streams, and where the time goes."""
        methods = [Method("rt")]
        options = {"ending": ending, "resync": resync}
        if compare_options:
            methods.append(Method("ssbd", beta=beta))
        methods.append(Method("ssbd", beta=beta, **options))  # type: ignore[arg-type]
        if cd:
            methods.append(Method("cd"))
        if parallel_out is not None and parallel == 1:
            raise UsageError("--parallel-out needs --parallel N with N > 1")
        if parallel_out is not None and out is not None and parallel_out.resolve() == out.resolve():
            raise UsageError("--out and --parallel-out must be different directories")
        # checked as given (--parallel included); the N = 1 run and, with N > 1, the batched one beside it
        settings = engine_settings(
            model,
            template,
            n_ctx,
            threads,
            fuse,
            verify_chunk,
            n_gpu_layers,
            parallel,
            window=WindowPolicy(max_window, context_sentences),
        )
        request = EvalRequest(
            streams_path=streams or default_streams_file(),
            methods=list({m.key: m for m in methods}.values()),
            engine=dataclasses.replace(settings, parallel=1, calibrate=True),
            limit=limit,
            out=out,
            overwrite=overwrite,
            comet_model="none",
        )
        batched: dict[str, Any] | None = None
        if parallel == 1:
            outcome = run_with_progress(request, quiet, "benchmark")
        else:
            other = dataclasses.replace(
                request, engine=settings, out=parallel_out, out_option="--parallel-out"
            )
            names = ["--parallel 1", f"--parallel {parallel}"]
            (outcome, wide), lanes = run_side_by_side_with_progress([request, other], names, quiet, "bench")
            batched = side_by_side_json(outcome, wide, lanes, parallel)
        recorded = outcome.run["environment"].get("pass_costs")  # as run.json has it
        costs = PassCosts.from_json(recorded)
        rows = bench_rows(outcome, costs)
        cfg = outcome.run["config"]
        title = markup(
            f"simul bench: {cfg['model']['name']}, {outcome.streams_done} streams "
            f"{cfg['streams']['src']}->{cfg['streams']['tgt']}, {cfg['threads']} threads",
            newlines=False,
        )
        timing = TimingNotes.from_run(outcome.run)
        if not quiet:
            err_console.print(bench_table(rows, title, timing, costs))
            if batched is not None:
                labels = {row["key"]: row["label"] for row in rows}
                err_console.print(side_by_side_table(batched))
                for line in side_by_side_notes(batched, labels):
                    err_console.print(line)
        if as_json:
            print_json(
                {
                    "methods": rows,
                    "model": cfg["model"]["name"],
                    "streams": outcome.streams_done,
                    "threads": cfg["threads"],
                    "cpu": outcome.run["environment"]["cpu"],
                    "timing_unreliable": timing.unreliable,
                    "pass_costs": recorded,
                    "openmp": outcome.run["environment"].get("openmp"),
                    "run_dir": str(out) if out else None,
                    **({"side_by_side": batched} if batched is not None else {}),
                }
            )

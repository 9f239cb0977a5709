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

from simul.cli.aliases import command_class, print_keep_hint
from simul.cli.common import JsonOpt, QuietOpt, err_console, handle_errors, print_json
from simul.cli.eval_cmd import EndingOpt, ResyncOpt
from simul.cli.option_groups import with_group
from simul.cli.request_options import NOT_FOR_BENCH, RequestOptions
from simul.cli.running import run_side_by_side_with_progress, run_with_progress
from simul.common.errors import UsageError
from simul.common.safe_text import markup
from simul.machine.calibration import PassCosts
from simul.reports.bench import bench_json, bench_rows, bench_title, side_by_side_json
from simul.reports.bench_tables import bench_table, side_by_side_notes, side_by_side_table
from simul.reports.timing_notes import TimingNotes
from simul.request.method_settings import Ending
from simul.request.methods import DEFAULT_BETA, Method


def bench_methods(beta: float, ending: Ending, resync: int, compare_options: bool, cd: bool) -> list[Method]:
    """RT, SSBD (with --ending/--resync, and plain beside it with --options) and CD, each once."""
    methods = [Method("rt")]
    if compare_options:
        methods.append(Method("ssbd", beta=beta))
    methods.append(Method("ssbd", beta=beta, ending=ending, resync=resync))
    if cd:
        methods.append(Method("cd"))
    return list({m.key: m for m in methods}.values())


def register(app: typer.Typer) -> None:
    @app.command("bench", cls=command_class())
    @handle_errors
    @with_group("request", RequestOptions, omit=NOT_FOR_BENCH)
    def bench_command(
        ctx: typer.Context,
        beta: Annotated[float, typer.Option("--beta", help="SSBD bias.")] = DEFAULT_BETA,
        ending: EndingOpt = "keep",
        resync: ResyncOpt = 0,
        compare_options: Annotated[
            bool,
            typer.Option(
                "--options/--no-options",
                help="Also run SSBD with the given ending/resync next to plain SSBD.",
            ),
        ] = False,
        cd: Annotated[bool, typer.Option("--cd/--no-cd", help="Include continuous decoding.")] = True,
        parallel_out: Annotated[
            Path | None,
            typer.Option(
                "--parallel-out", help="With --parallel N > 1: also write the batched run directory here."
            ),
        ] = None,
        as_json: JsonOpt = False,
        quiet: QuietOpt = False,
        *,
        request: RequestOptions,
    ) -> None:
        """Measure decoding speed of RT, SSBD and CD on the same streams, and where the time goes."""
        methods = bench_methods(beta, ending, resync, compare_options, cd)
        out, parallel = request.out, request.parallel
        if parallel_out is not None and parallel == 1:
            raise UsageError("--parallel-out needs --parallel N with N > 1")
        if parallel_out is not None and out is not None and parallel_out.resolve() == out.resolve():
            raise UsageError("-o/--out and --parallel-out must be different directories")
        # checked as given (--parallel included); the N = 1 run and, with N > 1, the batched one beside it
        options = request.without_comet()
        settings = options.engine()
        single = options.request(methods, dataclasses.replace(settings, parallel=1, calibrate=True))
        batched: dict[str, Any] | None = None
        if parallel == 1:
            outcome = run_with_progress(single, quiet, "benchmark")
        else:
            other = dataclasses.replace(
                single, engine=settings, out=parallel_out, out_option="--parallel-out"
            )
            names = ["--parallel 1", f"--parallel {parallel}"]
            (outcome, wide), lanes = run_side_by_side_with_progress([single, other], names, quiet, "bench")
            batched = side_by_side_json(outcome, wide, lanes, parallel)
        costs = PassCosts.from_json(outcome.run["environment"].get("pass_costs"))
        rows = bench_rows(outcome, costs)
        timing = TimingNotes.from_run(outcome.run)
        if not quiet:
            err_console.print(bench_table(rows, markup(bench_title(outcome), newlines=False), timing, costs))
            if batched is not None:
                labels = {row["key"]: row["label"] for row in rows}
                err_console.print(side_by_side_table(batched))
                for line in side_by_side_notes(batched, labels):
                    err_console.print(line)
        if as_json:
            print_json(bench_json(outcome, rows, timing, out, batched))
        if out is None:
            print_keep_hint(ctx)

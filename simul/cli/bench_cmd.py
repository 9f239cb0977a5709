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
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from simul.cli.aliases import command_class, print_keep_hint
from simul.cli.common import JsonOpt, QuietOpt, err_console, handle_errors, print_json
from simul.cli.draft_options import DraftOptions, TailDraftOpt
from simul.cli.eval_cmd import EndingOpt, ResyncOpt
from simul.cli.ignored import refuse
from simul.cli.method_specs import spec_methods
from simul.cli.option_groups import with_group
from simul.cli.request_options import NOT_FOR_BENCH, RequestOptions
from simul.cli.running import run_side_by_side_with_progress, run_with_progress
from simul.common.errors import UsageError
from simul.common.files import write_atomic
from simul.common.safe_text import markup
from simul.machine.calibration import PassCosts
from simul.reports.bench import bench_json, bench_rows, bench_title, modes_json, side_by_side_json
from simul.reports.bench_tables import bench_table, modes_table, side_by_side_notes, side_by_side_table
from simul.reports.draft_notes import draft_model_lines
from simul.reports.drafters import drafter_lines, per_update_line
from simul.reports.engine_notes import engine_line
from simul.reports.timing_notes import TimingNotes
from simul.request.method_settings import Ending
from simul.request.methods import DEFAULT_BETA, Method, unique_methods
from simul.request.ngram_settings import NgramDrafter
from simul.runs.directory import RUN_FILE, dump_json
from simul.runs.evaluation import EvalOutcome, EvalRequest
from simul.runs.rounds import differing_outputs, rounds_record


def bench_methods(
    beta: float,
    ending: Ending,
    resync: int,
    compare_options: bool,
    cd: bool,
    extra: Sequence[Method] = (),
    tail_draft: NgramDrafter | None = None,
    drafts: DraftOptions | None = None,
) -> list[Method]:
    """RT, SSBD (with --ending/--resync/--tail-draft, and plain beside it with --options), CD, and the
    methods of ``--method SPEC`` (``extra``, built by simul.cli.method_specs), each once. The n-gram options
    (``drafts``) serve SSBD's --tail-draft here (and the specs that draft with an n-gram drafter, there),
    each with the defaults of its use for what is not given."""
    drafts = drafts or DraftOptions()
    extra = list(extra)
    ngram_kinds = {m.ngram.kind for m in extra if m.ngram is not None} | (
        {tail_draft} if tail_draft is not None else set()
    )
    given = drafts.given()
    if given and not ngram_kinds and not any(m.uses_draft_model for m in extra):
        refuse(
            [
                f"{', '.join(given)} set the n-gram drafter: pass --method lookup/ngram-cache or --tail-draft"
                " (or give them inside a --method spec)"
            ]
        )
    if drafts.ngram_cache_file is not None and "ngram-cache" not in ngram_kinds:
        refuse(
            [
                "--ngram-cache-file is ngram-cache's static cache: pass --method ngram-cache or --tail-draft "
                "ngram-cache"
            ]
        )
    tail = drafts.settings(tail_draft, tail=True) if tail_draft is not None else None
    methods = [Method("rt")]
    if compare_options:
        methods.append(Method("ssbd", beta=beta))
    methods.append(Method("ssbd", beta=beta, ending=ending, resync=resync, ngram=tail))
    if cd:
        methods.append(Method("cd"))
    methods += extra
    return unique_methods(methods)


def run_rounds(request: EvalRequest, rounds: int, quiet: bool) -> tuple[EvalOutcome, list[str]]:
    """``rounds`` copies of the evaluation taking turns in one process (round 1 keeps the run directory);
    round 1's outcome carries the intervals over all of them (run.json's ``speed_intervals``, rewritten
    once every round is done), and the updates whose outputs differ between rounds."""
    requests = [request, *(dataclasses.replace(request, out=None) for _ in range(rounds - 1))]
    names = [f"round {k + 1}" for k in range(rounds)]
    outcomes, lanes = run_side_by_side_with_progress(requests, names, quiet, "bench")
    first = outcomes[0]
    first.run["speed_intervals"] = rounds_record(request.methods, outcomes, lanes)
    if first.run_dir is not None:
        write_atomic(first.run_dir / RUN_FILE, dump_json(first.run))
    return first, differing_outputs(outcomes)


def warn_rounds_differ(differing: Sequence[str]) -> None:
    shown = "; ".join(differing[:5]) + ("; ..." if len(differing) > 5 else "")
    message = (
        f"{len(differing)} updates gave another output than in round 1 ({shown}): the outputs depend on "
        "more than the stream, method, model and settings here"
    )
    err_console.print(f"[yellow]warning:[/] {markup(message)}", soft_wrap=True)


def register(app: typer.Typer) -> None:
    @app.command("bench", cls=command_class())
    @handle_errors
    @with_group("request", RequestOptions, omit=NOT_FOR_BENCH)
    @with_group("drafts", DraftOptions)
    def bench_command(
        ctx: typer.Context,
        method: Annotated[
            list[str] | None,
            typer.Option(
                "--method",
                metavar="<spec>",
                help="Also run this method (repeatable) beside RT, SSBD and CD: a name (lookup, ngram-cache, "
                "spec, bild, a plug-in) or a spec with its own options as `simul eval` takes them, e.g. "
                '"ssbd --beta 0.2 --tail-draft lookup" (quote each spec).',
            ),
        ] = None,
        tail_draft: TailDraftOpt = None,
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
        compare_modes: Annotated[
            bool,
            typer.Option(
                "--compare-modes",
                help="Run exact and fast mode side by side (taking turns in one process) and compare their "
                "speed and outputs; -o/--out keeps the exact run, --compare-out the fast one.",
            ),
        ] = False,
        compare_out: Annotated[
            Path | None,
            typer.Option(
                "--compare-out", help="With --compare-modes: write the fast-mode run directory here."
            ),
        ] = None,
        rounds: Annotated[
            int,
            typer.Option(
                "--rounds",
                min=1,
                help="Decode the whole stream set N times, the rounds taking turns in one process, and give "
                "TPS and speedup a 95 % interval over rounds and streams (paired bootstrap; with 1, over "
                "streams alone); -o/--out keeps round 1's records.",
            ),
        ] = 1,
        as_json: JsonOpt = False,
        quiet: QuietOpt = False,
        *,
        request: RequestOptions,
        drafts: DraftOptions,
    ) -> None:
        """Measure decoding speed of RT, SSBD and CD on the same streams, and where the time goes."""
        extra = spec_methods(method or [], request, drafts)
        methods = bench_methods(beta, ending, resync, compare_options, cd, extra, tail_draft, drafts)
        out, parallel = request.out, request.parallel
        if parallel_out is not None and parallel == 1:
            raise UsageError("--parallel-out needs --parallel N with N > 1")
        if parallel_out is not None and out is not None and parallel_out.resolve() == out.resolve():
            raise UsageError("-o/--out and --parallel-out must be different directories")
        if compare_out is not None and not compare_modes:
            raise UsageError("--compare-out needs --compare-modes")
        if compare_modes and parallel > 1:
            raise UsageError("--compare-modes compares one stream at a time in each mode; drop --parallel")
        if compare_modes and request.exact is not None:
            raise UsageError("--compare-modes runs both modes: drop --exact/--no-exact")
        if compare_out is not None and out is not None and compare_out.resolve() == out.resolve():
            raise UsageError("-o/--out and --compare-out must be different directories")
        if rounds > 1 and (compare_modes or parallel > 1):
            raise UsageError(
                "--rounds repeats the one-stream-at-a-time run; drop --parallel/--compare-modes (or --rounds)"
            )
        # checked as given (--parallel included); the N = 1 run and, with N > 1, the batched one beside it
        options = request.without_comet()
        settings = options.engine()
        single = options.request(methods, dataclasses.replace(settings, parallel=1, calibrate=True))
        batched: dict[str, Any] | None = None
        modes: dict[str, Any] | None = None
        if compare_modes:
            exact = dataclasses.replace(single, engine=dataclasses.replace(single.engine, exact=True))
            fast = dataclasses.replace(
                single,
                engine=dataclasses.replace(single.engine, exact=False),
                out=compare_out,
                out_option="--compare-out",
            )
            (outcome, fast_outcome), lanes = run_side_by_side_with_progress(
                [exact, fast], ["exact", "fast"], quiet, "bench"
            )
            modes = modes_json(outcome, fast_outcome, lanes)
        elif parallel == 1 and rounds > 1:
            outcome, differing = run_rounds(single, rounds, quiet)
            if differing:
                warn_rounds_differ(differing)
        elif parallel == 1:
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
            title = markup(bench_title(outcome), newlines=False)
            intervals = outcome.run.get("speed_intervals")
            err_console.print(bench_table(rows, title, timing, costs, intervals))
            err_console.print(per_update_line(rows))
            engine = engine_line(outcome.run)
            if engine:
                err_console.print(markup(engine, newlines=False))
            for line in drafter_lines(outcome.scored.methods_json()):
                err_console.print(line)
            for line in draft_model_lines(outcome.scored.methods_json(), costs):
                err_console.print(line)
            if batched is not None:
                labels = {row["key"]: row["label"] for row in rows}
                err_console.print(side_by_side_table(batched))
                for line in side_by_side_notes(batched, labels):
                    err_console.print(line)
            if modes is not None:
                err_console.print(modes_table(modes, {row["key"]: row["label"] for row in rows}))
        if as_json:
            doc = bench_json(outcome, rows, timing, out, batched)
            doc["speed_intervals"] = outcome.run.get("speed_intervals")
            if modes is not None:
                doc["modes"] = modes
            print_json(doc)
        if out is None:
            print_keep_hint(ctx)

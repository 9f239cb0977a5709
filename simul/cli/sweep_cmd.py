"""`simul sweep`: beta and mask-k sweeps in one process (the paper's Tables 3 and 4), with plots."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simul.cli.aliases import command_class, print_keep_hint
from simul.cli.common import JsonOpt, QuietOpt, err_console, handle_errors, print_json
from simul.cli.draft_options import DraftOptions, TailDraftOpt
from simul.cli.ignored import refuse, sweep_mask_options
from simul.cli.method_specs import SPEC_HELP, spec_methods
from simul.cli.option_groups import with_group
from simul.cli.request_options import RequestOptions
from simul.cli.scaleout import ScalingOptions, run_scaled, with_scaling_options
from simul.common.errors import UsageError
from simul.common.safe_text import markup
from simul.reports.drafters import drafter_lines
from simul.reports.engine_notes import engine_line
from simul.reports.sweep_tables import plot_beta, table3_rows, table4_rows
from simul.reports.tables import methods_table, spec_column, units_caption
from simul.reports.timing_notes import TimingNotes
from simul.request.method_settings import MASK_MODES
from simul.request.methods import DEFAULT_BETA, unique_methods
from simul.request.sweep import parse_floats, parse_ints, parse_masks, sweep_methods
from simul.runs.evaluation import EvalOutcome
from simul.runs.lock import locked_run_dir

# the paper's Tables 3 and 4, titled and formatted by the metric records
TABLE3_COLUMNS = tuple(spec_column(n) for n in ("comet", "ne", "ad", "ao", "speedup", "chrf", "tps"))
TABLE4_COLUMNS = tuple(
    spec_column(n)
    for n in (
        *("comet", "ne", "ne_display", "ad", "ao", "speedup", "chrf"),
        # what display-only mask-k trades: how long a reader waits for a shown word to be final, and how
        # many of the shown words change (simul.metrics.families.reader_stability)
        *("ttf_display", "changed_share_display"),
    )
)


def register(app: typer.Typer) -> None:
    @app.command("sweep", cls=command_class())
    @handle_errors
    @with_scaling_options
    @with_group("request", RequestOptions)
    @with_group("drafts", DraftOptions)
    def sweep_command(
        ctx: typer.Context,
        beta: Annotated[
            str, typer.Option("--beta", help="SSBD biases, comma-separated.")
        ] = "0,0.1,0.2,0.3,0.4,0.5,1.0",
        mask_k: Annotated[
            str, typer.Option("--mask-k", help="mask-k values, comma-separated (0: none).")
        ] = "0,3,5",
        mask: Annotated[
            str | None,
            typer.Option(
                "--mask",
                help=f"Mask modes to sweep, comma-separated: {' and/or '.join(MASK_MODES)} (default: both).",
            ),
        ] = None,
        local_agreement: Annotated[
            str,
            typer.Option(
                "--local-agreement",
                help="n values of LocalAgreement-n display rows at --mask-beta, comma-separated (0: none).",
            ),
        ] = "0",
        mask_beta: Annotated[
            float | None,
            typer.Option(
                "--mask-beta", help=f"The SSBD bias used for the mask-k table (default {DEFAULT_BETA:g})."
            ),
        ] = None,
        cd: Annotated[bool, typer.Option("--cd/--no-cd", help="Include continuous decoding.")] = True,
        tail_draft: TailDraftOpt = None,
        method: Annotated[
            list[str] | None,
            typer.Option(
                "--method",
                metavar="<spec>",
                help="Also run this method beside the sweep (repeatable), shown in a table of its own: "
                + SPEC_HELP,
            ),
        ] = None,
        as_json: JsonOpt = False,
        quiet: QuietOpt = False,
        *,
        request: RequestOptions,
        drafts: DraftOptions,
        scale: ScalingOptions,
    ) -> None:
        """Sweep the SSBD bias (Table 3) and mask-k vs display-only mask-k (Table 4) over the same streams."""
        betas = parse_floats(beta, "--beta")
        if any(not 0 <= b <= 1 for b in betas):
            raise UsageError("--beta values must be between 0 and 1")
        ks = parse_ints(mask_k, "--mask-k")
        masks = parse_masks("display,output" if mask is None else mask)
        agreements = [n for n in parse_ints(local_agreement, "--local-agreement") if n > 0]
        refuse(sweep_mask_options(mask, mask_beta, ks, agreements))
        mask_beta = DEFAULT_BETA if mask_beta is None else mask_beta
        extra = spec_methods(method or [], request, drafts)
        given = drafts.given()
        if given and tail_draft is None and not any(m.ngram is not None for m in extra):
            refuse(
                [
                    f"{', '.join(given)} set SSBD's tail drafter in a sweep: pass --tail-draft (or a "
                    "--method spec with an n-gram drafter), or drop them"
                ]
            )
        tail = drafts.for_method("ssbd", tail_draft) if tail_draft is not None else None
        methods = unique_methods([*sweep_methods(betas, ks, masks, cd, mask_beta, agreements, tail), *extra])
        evaluation = request.request(methods, extra_config={"sweep": {"mask_beta": mask_beta}})
        outcome = run_scaled(evaluation, scale.scaling(), quiet, f"{len(methods)} methods")
        report_sweep(outcome, mask_beta, as_json, quiet)
        if request.out is None:
            print_keep_hint(ctx)


def report_sweep(outcome: EvalOutcome, mask_beta: float, as_json: bool, quiet: bool) -> None:
    """Tables 3 and 4 on stderr, the beta plots into the run directory (not for a shard), JSON on stdout."""
    out = outcome.run_dir
    rows = outcome.scored.methods_json()
    t3 = table3_rows(rows)
    t4 = table4_rows(rows, mask_beta)
    swept = {r["key"] for r in (*t3, *t4)}
    others = [r for r in rows if r["key"] not in swept]  # --method SPEC, beside RT
    if others:
        others = [r for r in rows if r["name"] == "rt" and not r["mask_k"]][:1] + others
    comet_ok = bool(outcome.scored.comet.get("available"))
    cfg = outcome.run["config"]
    pair = f"{cfg['streams']['src']}->{cfg['streams']['tgt']}"
    title = f"{cfg['model']['name']}, {outcome.streams_done} streams {pair}"
    plots: list[Path] = []
    shard = cfg.get("shard")
    if out is not None and not shard:
        with locked_run_dir(out):  # the plots are part of the run directory: written under its lock
            plots = plot_beta(rows, out / "sweep-beta", title)
    timing = TimingNotes.from_run(outcome.run)
    if not quiet:
        err_console.print(
            methods_table(
                t3,
                title=f"Table 3: effect of beta ({markup(title, newlines=False)})",
                columns=TABLE3_COLUMNS,
                comet_available=comet_ok,
                timing=timing,
            )
        )
        if t4:
            err_console.print(
                methods_table(
                    t4,
                    title=f"Table 4: mask-k at beta {mask_beta:g}",
                    columns=TABLE4_COLUMNS,
                    comet_available=comet_ok,
                    timing=timing,
                )
            )
        if others:
            err_console.print(
                methods_table(
                    others,
                    title="Other methods (--method)",
                    comet_available=comet_ok,
                    timing=timing,
                )
            )
        err_console.print(units_caption(rows))
        engine = engine_line(outcome.run)
        if engine:
            err_console.print(markup(engine, newlines=False))
        tails = sorted({r["label"].split("+tail-", 1)[1] for r in rows if "+tail-" in r["label"]})
        if tails:
            err_console.print(
                f"every SSBD row drafts its tail with {markup(', '.join(tails))} (--tail-draft)"
            )
        for line in drafter_lines(rows):
            err_console.print(line)
        if not comet_ok:
            err_console.print(f"COMET unavailable: {markup(outcome.scored.comet.get('reason'))}")
        if shard:
            err_console.print(
                f"shard {shard['index']}/{shard['count']}: join the shards with `simul merge` "
                "(it draws the plots)"
            )
        for path in plots:
            err_console.print(f"plot: {markup(path)}")
    if as_json:
        print_json(
            {
                "table3": [{k: r[k] for k in ("label", "name", "beta", "key", "metrics")} for r in t3],
                "table4": [
                    {k: r[k] for k in ("label", "name", "beta", "mask_k", "mask", "key", "metrics")}
                    for r in t4
                ],
                "others": [{k: r[k] for k in ("label", "name", "key", "metrics")} for r in others],
                "plots": [str(p) for p in plots],
                "run_dir": str(out) if out else None,
                "comet": outcome.scored.comet,
                "signatures": outcome.scored.signatures,
                "timing_unreliable": timing.unreliable,
            }
        )

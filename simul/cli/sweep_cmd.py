"""`simul sweep`: beta and mask-k sweeps in one process (the paper's Tables 3 and 4), with plots."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simul.cli.common import (
    CometModelOpt,
    ContextSentencesOpt,
    FuseOpt,
    LimitOpt,
    MaxWindowOpt,
    ModelOpt,
    NCtxOpt,
    NeTokenizerOpt,
    NGpuLayersOpt,
    OverwriteOpt,
    ParallelOpt,
    ResumeOpt,
    TemplateOpt,
    ThreadsOpt,
    VerifyChunkOpt,
    err_console,
    handle_errors,
    print_json,
)
from simul.cli.ignored import refuse, sweep_mask_options
from simul.cli.running import engine_settings
from simul.cli.scaleout import NO_SCALING, Scaling, run_scaled, with_scaling_options
from simul.common.errors import UsageError
from simul.common.paths import default_streams_file
from simul.common.safe_text import markup
from simul.decoding.longform import WindowPolicy
from simul.metrics.comet import DEFAULT_COMET_MODEL
from simul.reports.tables import methods_table, units_caption
from simul.reports.timing_notes import TimingNotes
from simul.request.methods import DEFAULT_BETA
from simul.request.sweep import (
    parse_floats,
    parse_ints,
    parse_masks,
    plot_beta,
    sweep_methods,
    table3_rows,
    table4_rows,
)
from simul.runs.evaluation import EvalOutcome, EvalRequest
from simul.runs.lock import locked_run_dir

TABLE3_COLUMNS = (
    ("comet", "COMET", ".3f"),
    ("ne", "NE", ".2f"),
    ("ad", "A/D", ".1f"),
    ("ao", "A/O", ".1f"),
    ("speedup", "Speedup", ".2f"),
    ("chrf", "chrF", ".1f"),
    ("tps", "TPS", ".0f"),
)
TABLE4_COLUMNS = (
    ("comet", "COMET", ".3f"),
    ("ne", "NE", ".2f"),
    ("ne_display", "NE disp", ".2f"),
    ("ad", "A/D", ".1f"),
    ("ao", "A/O", ".1f"),
    ("speedup", "Speedup", ".2f"),
    ("chrf", "chrF", ".1f"),
)


def register(app: typer.Typer) -> None:
    @app.command("sweep")
    @handle_errors
    @with_scaling_options
    def sweep_command(
        beta: Annotated[
            str, typer.Option(help="SSBD biases, comma-separated.")
        ] = "0,0.1,0.2,0.3,0.4,0.5,1.0",
        mask_k: Annotated[
            str, typer.Option("--mask-k", help="mask-k values, comma-separated (0: none).")
        ] = "0,3,5",
        mask: Annotated[
            str | None, typer.Option(help="Mask modes to sweep: display and/or output (default: both).")
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
            typer.Option(help=f"The SSBD bias used for the mask-k table (default {DEFAULT_BETA:g})."),
        ] = None,
        cd: Annotated[bool, typer.Option("--cd/--no-cd", help="Include continuous decoding.")] = True,
        streams: Annotated[
            Path | None, typer.Option(help="Stream file. Default: the shipped sample.")
        ] = None,
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
        out: Annotated[Path | None, typer.Option(help="Run directory; plots are written there.")] = None,
        resume: ResumeOpt = False,
        overwrite: OverwriteOpt = False,
        comet_model: CometModelOpt = DEFAULT_COMET_MODEL,
        ne_tokenizer: NeTokenizerOpt = "auto",
        as_json: Annotated[bool, typer.Option("--json", help="Print both tables as JSON on stdout.")] = False,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or tables.")] = False,
        scale: Scaling = NO_SCALING,
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
        methods = sweep_methods(betas, ks, masks, cd, mask_beta, agreements)
        request = EvalRequest(
            streams_path=streams or default_streams_file(),
            methods=methods,
            engine=engine_settings(
                model,
                template,
                n_ctx,
                threads,
                fuse,
                verify_chunk,
                n_gpu_layers,
                parallel,
                window=WindowPolicy(max_window, context_sentences),
            ),
            limit=limit,
            out=out,
            resume=resume,
            overwrite=overwrite,
            ne_tokenizer=ne_tokenizer,
            comet_model=comet_model,
            extra_config={"sweep": {"mask_beta": mask_beta}},
        )
        outcome = run_scaled(request, scale, quiet, f"{len(methods)} methods")
        report_sweep(outcome, mask_beta, as_json, quiet)


def report_sweep(outcome: EvalOutcome, mask_beta: float, as_json: bool, quiet: bool) -> None:
    """Tables 3 and 4 on stderr, the beta plots into the run directory (not for a shard), JSON on stdout."""
    out = outcome.run_dir
    rows = outcome.scored.methods_json()
    t3 = table3_rows(rows)
    t4 = table4_rows(rows, mask_beta)
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
        err_console.print(units_caption(rows))
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
                "plots": [str(p) for p in plots],
                "run_dir": str(out) if out else None,
                "comet": outcome.scored.comet,
                "signatures": outcome.scored.signatures,
                "timing_unreliable": timing.unreliable,
            }
        )

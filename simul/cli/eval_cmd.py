"""`simul eval`: decode streams with RT and a chosen method, print the paper's Table 2, write the run."""

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
    ResegmentOpt,
    ResumeOpt,
    TemplateOpt,
    ThreadsOpt,
    VerifyChunkOpt,
    check_resegment,
    err_console,
    handle_errors,
    print_json,
)
from simul.cli.ignored import eval_method_options, refuse
from simul.cli.running import engine_settings
from simul.cli.scaleout import NO_SCALING, Scaling, run_scaled, with_scaling_options
from simul.common.paths import default_streams_file
from simul.common.safe_text import markup
from simul.decoding.longform import WindowPolicy
from simul.metrics.comet import DEFAULT_COMET_MODEL, NO_COMET
from simul.metrics.scoring import DEFAULT_RESEGMENT
from simul.reports.eval_json import summary_json
from simul.reports.tables import methods_table, reference_note, units_caption
from simul.reports.timing_notes import TimingNotes
from simul.request.methods import DEFAULT_BETA, methods_for
from simul.runs.evaluation import EvalOutcome, EvalRequest
from simul.streams.references import references_caption


def print_outcome(outcome: EvalOutcome, as_json: bool, quiet: bool, command: str = "simul eval") -> None:
    rows = outcome.scored.methods_json()
    if not quiet:
        cfg = outcome.run["config"]
        comet = outcome.scored.comet
        caption_lines = [
            markup(
                f"model {cfg['model']['name']} ({cfg['model']['file']}), template {cfg['template']}, "
                f"{outcome.streams_done} streams {cfg['streams']['src']}->{cfg['streams']['tgt']}, "
                f"{cfg['threads']} threads",
                newlines=False,
            ),
            markup(
                f"NE tokenizer {outcome.scored.signatures.get('ne_tokenizer')}; "
                f"chrF {outcome.scored.signatures.get('chrf', '-')}"
            ),
            units_caption(rows),
        ]
        for line in (reference_note(rows), references_caption(cfg["streams"].get("references"))):
            if line:
                caption_lines.append(line)
        throughput = outcome.run.get("throughput") or {}
        if throughput.get("parallel", 1) > 1:
            caption_lines.append(
                f"--parallel {throughput['parallel']}: per-update times, TPS and speedup are batched "
                "(forward passes shared by several streams), not single-user latency"
            )
        if throughput.get("updates"):
            caption_lines.append(
                f"throughput: {throughput['updates_per_second']:.2f} updates/s, "
                f"{throughput['output_tokens_per_second']:.1f} output tokens/s of wall time "
                f"({throughput['updates']} updates in {throughput['wall_seconds']:.1f} s)"
            )
        if not comet.get("available"):
            caption_lines.append(f"COMET unavailable: {markup(comet.get('reason'))}")
        if outcome.run_dir:
            caption_lines.append(f"run directory: {markup(outcome.run_dir)}")
        shard = cfg.get("shard")
        if shard:
            caption_lines.append(
                f"shard {shard['index']}/{shard['count']} of {cfg['streams'].get('total')} streams: "
                "join the shards with `simul merge`"
            )
        title = (
            command
            if outcome.complete
            else (f"{command}: INTERRUPTED, {outcome.streams_done} of {outcome.streams_total} streams")
        )
        err_console.print(
            methods_table(
                rows,
                title=title,
                caption="\n".join(caption_lines),
                comet_available=bool(comet.get("available")),
                timing=TimingNotes.from_run(outcome.run),
            )
        )
    if as_json:
        print_json(summary_json(outcome))


def register(app: typer.Typer) -> None:
    @app.command("eval")
    @handle_errors
    @with_scaling_options
    def eval_command(
        streams: Annotated[
            Path | None,
            typer.Option("--streams", help="Stream file (JSONL). Default: the shipped FLORES en->de sample."),
        ] = None,
        method: Annotated[str, typer.Option(help="Decoding method: rt, ssbd or cd.")] = "ssbd",
        beta: Annotated[
            float | None, typer.Option(help=f"SSBD bias toward the draft, 0..1 (default {DEFAULT_BETA:g}).")
        ] = None,
        mask_k: Annotated[
            int, typer.Option("--mask-k", help="Hide the last k tokens at non-final steps.")
        ] = 0,
        mask: Annotated[
            str | None,
            typer.Option(
                help="display (default): hide them from the viewer only; output: also from the next draft."
            ),
        ] = None,
        ending: Annotated[
            str,
            typer.Option(
                help="Sentence-final draft tokens while the source is not final: keep (the paper), "
                "unbiased (verified without bias) or reopen (dropped from the draft)."
            ),
        ] = "keep",
        resync: Annotated[
            int,
            typer.Option(
                help="After a divergence, re-draft from the previous output on an n-gram match (0: off)."
            ),
        ] = 0,
        target_bias_beta: Annotated[
            float,
            typer.Option(
                "--target-bias-beta",
                help="SSBD: after a rejection, bias decoding toward the rest of the rejected draft with this "
                "beta (the SSBD reference's --target-bias-beta; 0: off).",
            ),
        ] = 0.0,
        display: Annotated[
            str,
            typer.Option(
                help="What the viewer sees at non-final steps: mask (the output without its last --mask-k "
                "tokens) or local-agreement (what the last --agreement outputs agree on)."
            ),
        ] = "mask",
        agreement: Annotated[
            int | None,
            typer.Option(help="n of LocalAgreement-n (with --display local-agreement; default 2)."),
        ] = None,
        baseline: Annotated[
            bool,
            typer.Option("--baseline/--no-baseline", help="Also run RT on the same streams for the speedup."),
        ] = True,
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
        out: Annotated[Path | None, typer.Option(help="Write the run directory here.")] = None,
        resume: ResumeOpt = False,
        overwrite: OverwriteOpt = False,
        comet_model: CometModelOpt = DEFAULT_COMET_MODEL,
        resegment: ResegmentOpt = DEFAULT_RESEGMENT,
        comet_batch_size: Annotated[int | None, typer.Option(help="COMET batch size (default 16).")] = None,
        require_comet: Annotated[bool, typer.Option(help="Fail when COMET cannot be loaded.")] = False,
        ne_tokenizer: NeTokenizerOpt = "auto",
        as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON on stdout.")] = False,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or table.")] = False,
        scale: Scaling = NO_SCALING,
    ) -> None:
        """Decode streams with RT and the chosen method and report quality, stability and speed."""
        refuse(
            eval_method_options(
                method,
                beta=beta,
                mask=mask,
                mask_k=mask_k,
                display=display,
                agreement=agreement,
                fuse=fuse,
                verify_chunk=verify_chunk,
            )
        )
        if comet_batch_size is not None and comet_model.strip().lower() in NO_COMET:
            err_console.print("[yellow]warning:[/] --comet-batch-size does nothing with --comet-model none")
        request = EvalRequest(
            streams_path=streams or default_streams_file(),
            methods=methods_for(
                method,
                DEFAULT_BETA if beta is None else beta,
                mask_k,
                mask or "display",
                baseline,
                ending,
                resync,
                target_bias_beta,
                display,
                2 if agreement is None else agreement,
            ),
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
            comet_batch_size=16 if comet_batch_size is None else comet_batch_size,
            require_comet=require_comet,
            resegment=check_resegment(resegment),
        )
        outcome = run_scaled(
            request,
            scale,
            quiet,
            "decoding streams",
            on_interrupt=lambda partial: print_outcome(partial, as_json, quiet),
        )
        print_outcome(outcome, as_json, quiet)

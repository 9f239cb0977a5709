"""`simul eval`: decode streams with RT and a chosen method, print the paper's Table 2, write the run."""

from __future__ import annotations

from typing import Annotated

import typer

from simul.cli.aliases import command_class, old_spelling_warning, print_keep_hint
from simul.cli.common import JsonOpt, QuietOpt, err_console, handle_errors, print_json
from simul.cli.draft_options import DraftOptions, EvalTailDraftOpt, TailDraft
from simul.cli.ignored import eval_method_options, eval_plugin_options, refuse
from simul.cli.option_groups import with_group
from simul.cli.request_options import RequestOptions
from simul.cli.scaleout import ScalingOptions, run_scaled, with_scaling_options
from simul.common.errors import UsageError
from simul.common.safe_text import markup
from simul.reports.bench_tables import kv_cache_line, speed_intervals_caption
from simul.reports.draft_notes import draft_model_lines
from simul.reports.drafters import drafter_lines
from simul.reports.engine_notes import engine_line
from simul.reports.eval_json import summary_json
from simul.reports.tables import methods_table, reference_note, units_caption
from simul.reports.timing_notes import TimingNotes
from simul.request.method_settings import (
    DEFAULT_FALLBACK,
    DEFAULT_ROLLBACK,
    METHOD_NAMES,
    DisplayPolicy,
    Ending,
    MaskMode,
)
from simul.request.methods import DEFAULT_BETA, Method, methods_for, plugin_method
from simul.runs.evaluation import EvalOutcome
from simul.streams.references import references_caption, segment_times_caption


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
        engine = engine_line(outcome.run)
        if engine:
            caption_lines.append(markup(engine, newlines=False))
        caption_lines += drafter_lines(rows)
        for line in (
            reference_note(rows),
            references_caption(cfg["streams"].get("references")),
            segment_times_caption(cfg["streams"].get("segment_times")),
        ):
            if line:
                caption_lines.append(line)
        throughput = outcome.run.get("throughput") or {}
        if throughput.get("parallel", 1) > 1:
            caption_lines.append(
                f"--parallel {throughput['parallel']}: per-update times, TPS and speedup are batched "
                "(forward passes shared by several streams), not single-user latency"
            )
        kv_line = kv_cache_line(outcome.run["environment"].get("kv_cache"))
        if kv_line:
            caption_lines.append(kv_line)
        if throughput.get("updates"):
            caption_lines.append(
                f"throughput: {throughput['updates_per_second']:.2f} updates/s, "
                f"{throughput['output_tokens_per_second']:.1f} output tokens/s of wall time "
                f"({throughput['updates']} updates in {throughput['wall_seconds']:.1f} s)"
            )
        spread = speed_intervals_caption(outcome.run.get("speed_intervals"), rows)
        if spread:
            caption_lines.append(markup(spread, newlines=False))
        caption_lines.extend(draft_model_lines(rows))
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


EndingOpt = Annotated[
    Ending,
    typer.Option(
        "--ending",
        help="Sentence-final draft tokens while the source is not final: keep (the paper), unbiased "
        "(verified without bias) or reopen (dropped from the draft).",
    ),
]
ResyncOpt = Annotated[
    int,
    typer.Option(
        "--resync", help="After a divergence, re-draft from the previous output on an n-gram match (0: off)."
    ),
]


def local_agreement_n(local_agreement: int | None, display: str | None, agreement: int | None) -> int:
    """LocalAgreement's n (0: mask-k display) from --local-agreement N and its old spelling, --display
    local-agreement [--agreement N] (hidden, warned about; --agreement without it is refused with the other
    ignored options, simul.cli.ignored)."""
    if display is not None:
        old_spelling_warning(
            "--display local-agreement [--agreement N] is now spelled --local-agreement N (--display mask: "
            "leave it out); the old spelling still works for now"
        )
    elif agreement is not None:
        old_spelling_warning("--agreement N is now spelled --local-agreement N")
    old = (2 if agreement is None else agreement) if display == "local-agreement" else None
    if local_agreement is not None and local_agreement < 0:
        raise UsageError(
            f"--local-agreement must be 0 (off) or the n of LocalAgreement-n, got {local_agreement}"
        )
    if local_agreement and display == "mask":
        raise UsageError("--display mask contradicts --local-agreement: drop --display")
    if old is not None and local_agreement is not None and old != local_agreement:
        raise UsageError("give LocalAgreement's n once: --local-agreement N (drop --display and --agreement)")
    return old if old is not None else (local_agreement or 0)


def eval_methods(
    request: RequestOptions,
    drafts: DraftOptions,
    baseline: bool,
    *,
    method: str = "ssbd",
    method_option: list[str] | None = None,
    beta: float | None = None,
    mask_k: int = 0,
    mask: MaskMode | None = None,
    ending: Ending = "keep",
    resync: int = 0,
    target_bias_beta: float = 0.0,
    local_agreement: int | None = None,
    tail_draft: TailDraft | None = None,
    draft_p_min: float = 0.0,
    bild_fallback: float | None = None,
    bild_rollback: float | None = None,
    display: DisplayPolicy | None = None,
    agreement: int | None = None,
) -> list[Method]:
    """The methods of `simul eval` from its method options (the keyword arguments, named as its parameters):
    the chosen one, after plain RT with ``baseline``. `simul bench --method SPEC` and `simul sweep --method
    SPEC` build theirs here too (simul.cli.method_specs), so a method is spelled and checked one way."""
    n = local_agreement_n(local_agreement, display, agreement)
    if method in METHOD_NAMES:
        # --draft-max and --draft-min shape the draft model's drafts (spec, bild, --tail-draft model) or
        # the n-gram drafter's (simul.cli.draft_options): one definition of each option serves both
        model_draft_max, model_draft_min, ngram = drafts.split_for(method, tail_draft)
        if method_option:
            raise UsageError(
                f"--method-option sets the options of a method from outside simul, and --method "
                f"{method} is built in: drop --method-option"
            )
        refuse(
            eval_method_options(
                method,
                beta=beta,
                mask=mask,
                mask_k=mask_k,
                display=display or "mask",  # --agreement is refused without the old --display
                agreement=agreement,
                fuse=request.fuse,
                verify_chunk=request.verify_chunk,
            )
        )
        methods = methods_for(
            method,
            DEFAULT_BETA if beta is None else beta,
            mask_k,
            mask or "display",
            baseline,
            ending,
            resync,
            target_bias_beta,
            "local-agreement" if n else "mask",
            n or 2,
            draft_max=model_draft_max,
            draft_min=model_draft_min,
            draft_p_min=draft_p_min,
            fallback=bild_fallback,
            rollback=bild_rollback,
            tail_model=tail_draft == "model",
            ngram=ngram,
        )
    else:
        given = {
            "--beta": beta is not None,
            "--mask-k": mask_k != 0,
            "--mask": mask is not None,
            "--ending": ending != "keep",
            "--resync": resync != 0,
            "--target-bias-beta": target_bias_beta != 0.0,
            "--local-agreement": bool(n),
            "--tail-draft": tail_draft is not None,
            **dict.fromkeys(drafts.given(), True),
            "--draft-p-min": draft_p_min != 0.0,
            "--bild-fallback": bild_fallback is not None,
            "--bild-rollback": bild_rollback is not None,
        }
        refuse(eval_plugin_options(method, given))
        methods = [*([Method("rt")] if baseline else []), plugin_method(method, method_option or ())]
    return methods


def register(app: typer.Typer) -> None:
    @app.command("eval", cls=command_class())
    @handle_errors
    @with_scaling_options
    @with_group("request", RequestOptions)
    @with_group("drafts", DraftOptions)
    def eval_command(
        ctx: typer.Context,
        method: Annotated[
            str,
            typer.Option(
                "--method",
                help=f"Decoding method: {', '.join(METHOD_NAMES)}, or a method from outside simul: the name "
                "of an entry point of group simul.methods, or MODULE:CLASS (docs/methods.md).",
            ),
        ] = "ssbd",
        method_option: Annotated[
            list[str] | None,
            typer.Option(
                "--method-option",
                metavar="<name=value>",
                help="An option of a method from outside simul, NAME=VALUE (repeatable); recorded in "
                "run.json and in the method's key.",
            ),
        ] = None,
        beta: Annotated[
            float | None,
            typer.Option("--beta", help=f"SSBD bias toward the draft, 0..1 (default {DEFAULT_BETA:g})."),
        ] = None,
        mask_k: Annotated[
            int, typer.Option("--mask-k", help="Hide the last k tokens at non-final steps.")
        ] = 0,
        mask: Annotated[
            MaskMode | None,
            typer.Option(
                "--mask",
                help="display (default): hide them from the viewer only; output: also from the next draft.",
            ),
        ] = None,
        ending: EndingOpt = "keep",
        resync: ResyncOpt = 0,
        target_bias_beta: Annotated[
            float,
            typer.Option(
                "--target-bias-beta",
                help="SSBD: after a rejection, bias decoding toward the rest of the rejected draft with this "
                "beta (the SSBD reference's --target-bias-beta; 0: off).",
            ),
        ] = 0.0,
        local_agreement: Annotated[
            int | None,
            typer.Option(
                "--local-agreement",
                help="Show the viewer what the last N outputs agree on (LocalAgreement-N) instead of the "
                "output without its last --mask-k tokens (0 or unset: mask-k display).",
            ),
        ] = None,
        tail_draft: EvalTailDraftOpt = None,
        draft_p_min: Annotated[
            float,
            typer.Option(
                "--draft-p-min",
                help="spec: stop drafting before a token the draft model gives a probability below P "
                "(llama.cpp's --draft-p-min, SpecBound's confidence bound; 0: off).",
            ),
        ] = 0.0,
        bild_fallback: Annotated[
            float | None,
            typer.Option(
                "--bild-fallback",
                help=f"bild: the draft hands over below this top-1 probability (BiLD's alpha_FB; default "
                f"{DEFAULT_FALLBACK:g}).",
            ),
        ] = None,
        bild_rollback: Annotated[
            float | None,
            typer.Option(
                "--bild-rollback",
                help="bild: the target rolls back a draft token whose cross entropy under it exceeds this "
                f"(nats; BiLD's alpha_RB; default {DEFAULT_ROLLBACK:g}).",
            ),
        ] = None,
        display: Annotated[DisplayPolicy | None, typer.Option("--display", hidden=True)] = None,
        agreement: Annotated[int | None, typer.Option("--agreement", hidden=True)] = None,
        baseline: Annotated[
            bool,
            typer.Option("--baseline/--no-baseline", help="Also run RT on the same streams for the speedup."),
        ] = True,
        as_json: JsonOpt = False,
        quiet: QuietOpt = False,
        *,
        request: RequestOptions,
        drafts: DraftOptions,
        scale: ScalingOptions,
    ) -> None:
        """Decode streams with RT and the chosen method and report quality, stability and speed."""
        methods = eval_methods(
            request,
            drafts,
            baseline,
            method=method,
            method_option=method_option,
            beta=beta,
            mask_k=mask_k,
            mask=mask,
            ending=ending,
            resync=resync,
            target_bias_beta=target_bias_beta,
            local_agreement=local_agreement,
            tail_draft=tail_draft,
            draft_p_min=draft_p_min,
            bild_fallback=bild_fallback,
            bild_rollback=bild_rollback,
            display=display,
            agreement=agreement,
        )
        outcome = run_scaled(
            request.request(methods),
            scale.scaling(),
            quiet,
            "decoding streams",
            on_interrupt=lambda partial: print_outcome(partial, as_json, quiet),
        )
        print_outcome(outcome, as_json, quiet)
        if request.out is None:
            print_keep_hint(ctx)

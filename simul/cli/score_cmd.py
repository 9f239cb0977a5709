"""`simul score RUN_DIR`: recompute every metric of a run from its directory alone."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any

import typer

from simul.cli.aliases import command_class
from simul.cli.common import JsonOpt, QuietOpt, err_console, handle_errors, print_json, warn_being_written
from simul.cli.scoring_options import (
    RequireCometOpt,
    RescoreCometBatchOpt,
    Resegmenter,
    ScoreCometModelOpt,
    learned_options,
)
from simul.common.errors import SimulError, UsageError
from simul.common.safe_text import excerpt, markup
from simul.metrics.comet import COMET
from simul.metrics.learned_models import config_models, load_for_run, run_models
from simul.metrics.registry import LEARNED, metric_info
from simul.metrics.scoring import DEFAULT_RESEGMENT, RESEGMENTERS, not_available, score
from simul.reports.tables import TABLE2_COLUMNS, methods_table, reference_note, units_caption
from simul.reports.timing_notes import TimingNotes
from simul.runs.directory import (
    PER_STREAM_FILE,
    RUN_FILE,
    STATUS_COMPLETE,
    STATUS_SCORING_FAILED,
    RunWriter,
    load_run,
    run_status,
)
from simul.runs.learned_reuse import RecordedFigures
from simul.runs.lock import RunLock
from simul.streams.references import segment_times_caption, segment_times_summary
from simul.streams.scorable import check_longform_scoring


def register(app: typer.Typer) -> None:
    @app.command("score", cls=command_class())
    @handle_errors
    @learned_options
    def score_command(
        run_dir: Annotated[Path, typer.Argument(help="A run directory written by `simul eval --out`.")],
        comet_model: ScoreCometModelOpt = None,
        comet_batch_size: RescoreCometBatchOpt = None,
        require_comet: RequireCometOpt = False,
        metric: Annotated[
            list[str] | None, typer.Option("--metric", "-m", help="Only show these metrics (repeatable).")
        ] = None,
        update: Annotated[
            bool,
            typer.Option(help=f"Write the recomputed figures back into {RUN_FILE} and {PER_STREAM_FILE}."),
        ] = False,
        recompute: Annotated[
            bool,
            typer.Option(
                "--recompute",
                help="With --update: compute every learned figure (COMET, XCOMET, BLEURT) again, also those "
                "the run holds that nothing they depend on changed (which --update reuses).",
            ),
        ] = False,
        allow_incomplete: Annotated[
            bool, typer.Option(help="Score the finished streams of an unfinished run (never with --update).")
        ] = False,
        as_json: JsonOpt = False,
        quiet: QuietOpt = False,
        resegment: Annotated[
            Resegmenter | None,
            typer.Option(
                "--resegment",
                help="Long-form runs: softsegmenter (OmniSTEval) or mwer (mweralign). Default: the run's.",
            ),
        ] = None,
        learned: dict[str, str | None] | None = None,
    ) -> None:
        """Recompute every metric from a run directory (to add COMET, or to check a run).

        Every learned figure the run has (COMET, XCOMET, BLEURT) is kept, made with the run's model, unless
        --comet-model or the metric's own option (--bleurt-model) drops it (none) or names another model:
        adding one never drops another. Without --update it is computed again; with --update the figure the
        run holds is reused when its model, batch size, package version and inputs are the ones it was made
        with (simul.runs.learned_reuse), so that only new or changed models are loaded (--recompute: all)."""
        if update and allow_incomplete:
            raise UsageError(
                "--update writes a complete run's figures; it cannot be combined with --allow-incomplete"
            )
        columns = list(TABLE2_COLUMNS)
        if metric:
            infos = [metric_info(name) for name in metric]
            columns = [(i.name, i.title, ".4g") for i in infos]
        # A run whose scoring failed after decoding (status scoring_failed) is finished here: scored and
        # written complete, as --update writes a complete run.
        finish = not allow_incomplete and run_status(run_dir) == STATUS_SCORING_FAILED
        # --update rewrites the run: it holds the directory's lock like any writer
        with RunLock.acquire(run_dir) if (update or finish) and run_dir.is_dir() else nullcontext():
            loaded = load_run(run_dir, allow_incomplete=allow_incomplete, unscored=finish)
            # a talk its streams leave unscorable is named, with the fix, before COMET is loaded
            check_longform_scoring([loaded.streams[k] for k in loaded.complete], f"run {run_dir}")
            warn_being_written(run_dir, loaded.being_written, "scoring")
            config = loaded.run["config"]
            batch = comet_batch_size or int(config.get("comet_batch_size", 16))
            # the run's learned metrics, each kept unless an option drops it or names another model; --update
            # reuses the figures the run holds where nothing they depend on changed (a run whose scoring
            # failed holds none), and loads only the other models
            given = {**(learned or {}), COMET.option: comet_model}
            recorded = (
                RecordedFigures(run_dir, loaded.run, batch)
                if update and not finish and not recompute
                else None
            )
            scorers = load_for_run(
                loaded.run, given, batch, recorded.scorer if recorded is not None else None
            )
            for kept in scorers.notes:
                err_console.print(f"[yellow]{markup(kept)}[/yellow]")
            missing_comet = scorers.option_error or scorers.comet_reason
            if missing_comet is not None and require_comet:
                raise SimulError(f"COMET is required (--require-comet) but unavailable: {missing_comet}")
            scored = score(
                loaded.methods,
                loaded.results,
                loaded.streams,
                config["ne_tokenizer"],
                scorers.scorers,
                scorers.comet_reason,
                not_available(loaded.run),
                resegment=resegment or _run_resegment(run_dir, config),
            )
            if recorded is not None and not quiet:
                for reused in recorded.notes():
                    err_console.print(markup(reused))
            rows = scored.methods_json()
            if update or finish:
                run = loaded.run
                scored.attach(run)
                if scorers.models != run_models(run):  # the config names what the figures were made with
                    for scored_metric in LEARNED:
                        config.pop(scored_metric.config_field, None)
                    config.update(config_models(scorers.models))
                if finish:
                    run["status"] = STATUS_COMPLETE
                    run["scored_later"] = {"by": "simul score", "error": run.pop("scoring_error", None)}
                writer = RunWriter(run_dir, run)
                writer.write_per_stream(scored.per_stream_rows())
                writer.write_error_spans(scored.error_span_rows())
                writer.save()
                if finish:
                    err_console.print(f"{markup(run_dir)} is complete now (its scoring had failed)")
            if not quiet:
                n_scored = len(loaded.complete)
                of_total = f" of {len(loaded.streams)}" if n_scored != len(loaded.streams) else ""
                caption = [f"{n_scored}{of_total} streams from {markup(run_dir)}", units_caption(rows)]
                for note in (
                    reference_note(rows),
                    segment_times_caption(segment_times_summary(list(loaded.streams.values()))),
                ):
                    if note:
                        caption.append(note)
                if not scored.comet.get("available"):
                    caption.append(f"COMET unavailable: {markup(scored.comet.get('reason'))}")
                err_console.print(
                    methods_table(
                        rows,
                        title="simul score",
                        caption="\n".join(caption),
                        columns=columns,
                        comet_available=bool(scored.comet.get("available")),
                        timing=TimingNotes.from_run(loaded.run),
                    )
                )
            if as_json:
                shown = [c[0] for c in columns] if metric else None
                print_json(
                    {
                        "methods": [
                            {
                                **{k: r[k] for k in ("name", "beta", "mask_k", "mask", "key", "label")},
                                "metrics": r["metrics"]
                                if shown is None
                                else {k: r["metrics"].get(k) for k in shown},
                            }
                            for r in rows
                        ],
                        "run_dir": str(run_dir),
                        "streams": len(loaded.complete),
                        "streams_total": len(loaded.streams),
                        "signatures": scored.signatures,
                        "comet": scored.comet,
                    }
                )


def _run_resegment(run_dir: Path, config: dict[str, Any]) -> str:
    """The re-segmentation the run was scored with (run.json's config.resegment), checked."""
    value = config.get("resegment", DEFAULT_RESEGMENT)
    if value not in RESEGMENTERS:
        raise SimulError(
            f"{run_dir / RUN_FILE}: config.resegment is {excerpt(str(value))}, not one of "
            f"{', '.join(RESEGMENTERS)}; pass --resegment to choose"
        )
    return str(value)

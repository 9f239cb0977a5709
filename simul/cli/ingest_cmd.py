"""`simul ingest FILE --format ... --streams STREAMS --out DIR`: score another system's streaming outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simul.cli.aliases import command_class
from simul.cli.common import (
    CometModelOpt,
    JsonOpt,
    NeTokenizerOpt,
    OverwriteOpt,
    QuietOpt,
    err_console,
    handle_errors,
    out_option,
    print_json,
)
from simul.cli.scoring_options import learned_options
from simul.metrics.comet import DEFAULT_COMET_MODEL
from simul.reports.tables import methods_table, units_caption
from simul.runs.ingest.run import INGEST_FORMATS, IngestFormat, IngestRequest, ingest
from simul.runs.ingest.simulstream_log import SimulstreamUnit  # word, char, spm; other formats: word, char


def register(app: typer.Typer) -> None:
    @app.command("ingest", cls=command_class())
    @handle_errors
    @learned_options
    def ingest_command(
        path: Annotated[Path, typer.Argument(help="The system's per-update outputs.")],
        format: Annotated[
            IngestFormat,
            typer.Option(
                "--format",
                help="ssbd-ref (llama-self-spec-bias -o), simulstream (metrics log), "
                "simuleval (instances.log), "
                "simul (a stream file with an 'outputs' list per stream); for long-form talks also "
                "omnisteval (OmniSTEval's long-form JSONL) and simulstreaming (SimulStreaming's translation "
                "JSONL: a file per talk named <talk id>.jsonl, or a folder of them).",
            ),
        ],
        streams: Annotated[
            Path, typer.Option("--streams", help="Stream file with the sources and references, joined by id.")
        ],
        out: Annotated[Path, out_option("The run directory to write.")],
        name: Annotated[
            str | None,
            typer.Option(help="Name of the system (the method key is ext-NAME). Default: the file stem."),
        ] = None,
        unit: Annotated[
            SimulstreamUnit | None,
            typer.Option(
                "--unit",
                help="simulstream: token unit of its simuleval detokenizer (word, char, spm; default word); "
                "simuleval, omnisteval: the file's latency unit (word, char; default by target language).",
            ),
        ] = None,
        ne_tokenizer: NeTokenizerOpt = "auto",
        comet_model: CometModelOpt = DEFAULT_COMET_MODEL,
        hardware: Annotated[
            str | None,
            typer.Option(
                help="What the system ran on, as you would report it (e.g. '1x NVIDIA H100 80GB'): its "
                "computation-aware latency depends on it; `simul rank` shows it beside the system.",
            ),
        ] = None,
        overwrite: OverwriteOpt = False,
        as_json: JsonOpt = False,
        quiet: QuietOpt = False,
        learned: dict[str, str | None] | None = None,
    ) -> None:
        """Score outputs simul did not decode: write a complete run directory that score, diff, show and
        export read like any other."""
        outcome = ingest(
            IngestRequest(
                path=path,
                format=format,
                streams_path=streams,
                out=out,
                name=name,
                unit=unit,
                ne_tokenizer=ne_tokenizer,
                comet_model=comet_model,
                overwrite=overwrite,
                hardware=hardware,
                learned_models=learned or {},
            )
        )
        rows = outcome.scored.methods_json()
        if not quiet:
            caption = [
                f"{outcome.streams} streams from {path} ({format}); run directory: {out}",
                units_caption(rows),
            ]
            if outcome.left_out:
                caption.append(
                    f"{outcome.left_out} streams of {streams} have no outputs in {path} (left out)"
                )
            if not outcome.scored.comet.get("available"):
                caption.append(f"COMET unavailable: {outcome.scored.comet.get('reason')}")
            err_console.print(
                methods_table(
                    rows,
                    title="simul ingest",
                    caption="\n".join(caption),
                    comet_available=bool(outcome.scored.comet.get("available")),
                )
            )
        if as_json:
            print_json({"methods": rows, "run_dir": str(out), "signatures": outcome.scored.signatures})


__all__ = ["INGEST_FORMATS", "register"]

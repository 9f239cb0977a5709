"""`simul export RUN_DIR --format simuleval|simulstream|omnisteval`: the displayed stream in another toolkit's
format (omnisteval for short-form and long-form runs, simulstream's long-form layout for talks)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from simul.cli.aliases import Alias, command_class
from simul.cli.common import err_console, handle_errors, out_option
from simul.common.errors import SimulError, UsageError
from simul.common.files import os_error_message
from simul.common.safe_text import excerpt, visible
from simul.decoding.records import StreamResult
from simul.metrics.quality import bleu_tokenizer
from simul.metrics.units import TARGET_UNITS, TargetUnit, target_unit
from simul.reports.export import (
    EXPORT_FORMATS,
    ExportFormat,
    omnisteval_shortform_export,
    simuleval_lines,
    simulstream_export,
)
from simul.reports.export_longform import (
    LONGFORM_FORMATS,
    is_longform_run,
    omnisteval_export,
    simulstream_longform_export,
)
from simul.runs.directory import LoadedRun, load_run, write_atomic
from simul.streams.format import Stream

ALL_FORMATS = (*EXPORT_FORMATS, *(f for f in LONGFORM_FORMATS if f not in EXPORT_FORMATS))


def make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SimulError(os_error_message(exc, folder, "create the folder")) from None


def register(app: typer.Typer) -> None:
    @app.command("export", cls=command_class(Alias("--output", "--out")))
    @handle_errors
    def export_command(
        run_dir: Annotated[Path, typer.Argument(help="A complete run directory.")],
        format: Annotated[
            ExportFormat,
            typer.Option(
                "--format",
                help="The format to write: SimulEval's instances.log, simulstream's log or OmniSTEval's "
                "short-form instances (for long-form runs its long-form JSONL, segmentation and "
                "references).",
            ),
        ] = "simuleval",
        method: Annotated[
            str | None,
            typer.Option(
                "--method",
                help="Method key to export (see run.json). Default: the last method; every method for a "
                "long-form run.",
            ),
        ] = None,
        unit: Annotated[
            TargetUnit | None,
            typer.Option(
                "--unit",
                help="simulstream: token unit of the log (default: char for zh/ja/th, else word). Use word "
                "to compare simulstream's NormalizedErasure with --ne-tokenizer word.",
            ),
        ] = None,
        output: Annotated[
            Path | None,
            out_option(
                "simuleval: the instances.log to write (default RUN_DIR/simuleval/<method>/instances.log); "
                "simulstream: the folder to write (default RUN_DIR/simulstream/<method>); "
                "omnisteval: the folder to write (default RUN_DIR/omnisteval/<method>). Long-form runs: "
                "the folder that gets one folder per method (default RUN_DIR/<format>).",
            ),
        ] = None,
    ) -> None:
        """Write what was displayed in SimulEval's, simulstream's or OmniSTEval's format, to rescore a run
        elsewhere."""
        if format not in ALL_FORMATS:
            raise UsageError(f"unknown --format {format!r}; choose one of: {', '.join(ALL_FORMATS)}")
        loaded = load_run(run_dir, can_allow=False)
        if is_longform_run(loaded.streams):
            _export_longform(loaded, format, method, unit, output)
            return
        keys = [m.key for m in loaded.methods]
        key = method or keys[-1]
        if key not in loaded.results:
            raise SimulError(f"{run_dir} has no method {excerpt(key)}; it has: {', '.join(keys)}")
        results = loaded.results[key]
        tgt = loaded.streams[results[0].stream_id].tgt if results else "en"
        latency_unit = target_unit(tgt)
        bleu = bleu_tokenizer(tgt)
        if format == "simuleval":
            if unit is not None:
                raise UsageError(
                    "--unit applies to --format simulstream; SimulEval's log uses the target's unit"
                )
            target = output or run_dir / "simuleval" / key / "instances.log"
            make_folder(target.parent)
            lines = list(simuleval_lines(results, loaded.streams))
            write_atomic(target, "".join(line + "\n" for line in lines))
            timed = bool(results) and loaded.streams[results[0].stream_id].timed
            # `simuleval --score-only` reads the source and target types from config.yaml next to the log
            write_atomic(
                target.parent / "config.yaml",
                f"source_type: {'speech' if timed else 'text'}\ntarget_type: text\n",
            )
            err_console.print(
                visible(
                    f"wrote {len(lines)} instances of {key} to {target}\n"
                    f"score with: simuleval --score-only --output {target.parent} "
                    f"--eval-latency-unit {latency_unit} "
                    f"--sacrebleu-tokenizer {bleu} --latency-metrics LAAL AL DAL --quality-metrics BLEU"
                ),
                markup=False,
            )
            return
        if format == "omnisteval":
            if unit is not None:
                raise UsageError("--unit applies to --format simulstream; OmniSTEval uses the target's unit")
            folder = output or run_dir / "omnisteval" / key
            export_omnisteval_shortform(results, loaded.streams, folder, key, bleu)
            return
        folder = output or run_dir / "simulstream" / key
        make_folder(folder)
        if unit is not None and unit not in TARGET_UNITS:
            raise UsageError(f"unknown --unit {unit!r}; choose one of: {', '.join(TARGET_UNITS)}")
        export = simulstream_export(results, loaded.streams, unit)
        write_atomic(folder / "log.jsonl", export.log)
        write_atomic(folder / "eval.yaml", export.eval_config)
        write_atomic(folder / "segmentation.yaml", export.segmentation)
        write_atomic(folder / "references.txt", export.references)
        write_atomic(folder / "sources.txt", export.sources)
        char = " --char_level" if export.unit == "char" else " --word_level"
        err_console.print(
            visible(
                f"wrote the simulstream log of {len(results)} streams of {key} to {folder / 'log.jsonl'}\n"
                f"score with: omnisteval longform --hypothesis_format simulstream "
                f"--hypothesis_file {folder}/log.jsonl "
                f"--simulstream_config_file {folder}/eval.yaml "
                f"--speech_segmentation {folder}/segmentation.yaml "
                f"--ref_sentences_file {folder}/references.txt --bleu_tokenizer {bleu}{char}"
            ),
            markup=False,
        )


def _export_longform(
    loaded: LoadedRun, format: str, method: str | None, unit: str | None, output: Path | None
) -> None:
    """Every method (or ``method``) of a long-form run into ``OUT/<method key>/``."""
    if format not in LONGFORM_FORMATS:
        raise UsageError(
            f"a long-form run (talks) exports as {' or '.join(LONGFORM_FORMATS)}; SimulEval's instances.log "
            "holds sentences"
        )
    if unit is not None and format != "simulstream":
        raise UsageError("--unit applies to --format simulstream")
    if unit is not None and unit not in TARGET_UNITS:
        raise UsageError(f"unknown --unit {unit!r}; choose one of: {', '.join(TARGET_UNITS)}")
    keys = [m.key for m in loaded.methods]
    if method is not None and method not in loaded.results:
        raise SimulError(f"{loaded.path} has no method {excerpt(method)}; it has: {', '.join(keys)}")
    base = output or loaded.path / format
    lines = []
    for key in [method] if method is not None else keys:
        results = loaded.results[key]
        folder = base / key
        make_folder(folder)
        if format == "omnisteval":
            files = omnisteval_export(results, loaded.streams, folder)
            lines.append(f"wrote OmniSTEval's long-form files of {len(results)} talks of {key} to {folder}")
            lines.append(f"score with: {shlex.join(files.command)}")
        else:
            done = simulstream_longform_export(results, loaded.streams, folder, unit)
            lines.append(f"wrote the simulstream log of {len(results)} talks of {key} to {done.log}")
            lines.append(f"score with: {shlex.join(done.command)}")
            lines.append(f"or, on the JSONL of the same folder: {shlex.join(done.omnisteval.command)}")
    err_console.print(visible("\n".join(lines)), markup=False)


def export_omnisteval_shortform(
    results: list[StreamResult], streams: dict[str, Stream], folder: Path, key: str, bleu: str
) -> None:
    """Short-form runs: instances.jsonl, references.txt and sources.txt for `omnisteval shortform`."""
    export = omnisteval_shortform_export(results, streams)
    make_folder(folder)
    write_atomic(folder / "instances.jsonl", export.instances)
    write_atomic(folder / "references.txt", export.references)
    write_atomic(folder / "sources.txt", export.sources)
    level = "--char_level" if export.unit == "char" else "--word_level"
    err_console.print(
        visible(
            f"wrote {len(results)} short-form instances of {key} to {folder / 'instances.jsonl'}\n"
            f"score with: omnisteval shortform --hypothesis_file {folder}/instances.jsonl "
            f"--ref_sentences_file {folder}/references.txt --bleu_tokenizer {bleu} {level}"
        ),
        markup=False,
    )

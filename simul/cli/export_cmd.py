"""`simul export RUN_DIR --format simuleval|simulstream|omnisteval`: the displayed stream in another toolkit's
format."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simul.cli.common import err_console, handle_errors
from simul.common.errors import SimulError, UsageError
from simul.common.files import os_error_message
from simul.common.safe_text import excerpt, visible
from simul.decoding import StreamResult
from simul.metrics.quality import bleu_tokenizer
from simul.metrics.units import TARGET_UNITS, target_unit
from simul.reports.export import (
    EXPORT_FORMATS,
    omnisteval_shortform_export,
    simuleval_lines,
    simulstream_export,
)
from simul.runs.directory import load_run, write_atomic
from simul.streams.format import Stream


def make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SimulError(os_error_message(exc, folder, "create the folder")) from None


def register(app: typer.Typer) -> None:
    @app.command("export")
    @handle_errors
    def export_command(
        run_dir: Annotated[Path, typer.Argument(help="A complete run directory.")],
        format: Annotated[
            str, typer.Option("--format", help="Output format: simuleval, simulstream or omnisteval.")
        ] = "simuleval",
        method: Annotated[
            str | None, typer.Option(help="Method key to export (see run.json). Default: the last method.")
        ] = None,
        unit: Annotated[
            str | None,
            typer.Option(
                help="simulstream: token unit of the log, word or char (default: char for zh/ja/th, else "
                "word). Use word to compare simulstream's NormalizedErasure with --ne-tokenizer word."
            ),
        ] = None,
        output: Annotated[
            Path | None,
            typer.Option(
                "--output",
                "--out",
                "-o",
                help="simuleval: the instances.log to write "
                "(default RUN_DIR/simuleval/<method>/instances.log); "
                "simulstream: the folder to write (default RUN_DIR/simulstream/<method>); "
                "omnisteval: the folder to write (default RUN_DIR/omnisteval/<method>).",
            ),
        ] = None,
    ) -> None:
        """Write what was displayed in SimulEval's, simulstream's or OmniSTEval's format, to rescore a run
        elsewhere."""
        if format not in EXPORT_FORMATS:
            raise UsageError(f"unknown --format {format!r}; choose one of: {', '.join(EXPORT_FORMATS)}")
        loaded = load_run(run_dir, can_allow=False)
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
            if any(loaded.streams[r.stream_id].longform for r in results):
                raise SimulError(
                    f"{run_dir} is a long-form run; --format omnisteval exports short-form runs only so far"
                )
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

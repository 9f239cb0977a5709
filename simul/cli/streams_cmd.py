"""`simul streams`: build stream files (FLORES, ACL 60/60, recognizer output) and look inside them."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from simul.cli.common import err_console, handle_errors, print_json
from simul.common.errors import SimulError, UsageError
from simul.common.languages import get_language
from simul.common.safe_text import excerpt, markup, plain, visible
from simul.streams.acl6060 import acl6060_segments, line_segments, select
from simul.streams.asr.build import AudioImport, AudioSegment, dataset_segments, file_segments
from simul.streams.asr.partials import STABLE_POLICIES
from simul.streams.asr.recognizer import VADS, WINDOWS, RecognizerOptions
from simul.streams.asr.run import AudioSettings, recognize_segments
from simul.streams.flores import flores_streams
from simul.streams.format import Stream, read_streams, write_streams
from simul.streams.partials import ALIGN_MODES, DEFAULT_MAX_GAP_MS, FORMATS, TIME_UNITS, PartialsImport
from simul.streams.partials import partial_streams as build_partial_streams
from simul.streams.references import reference_lines
from simul.streams.simulate import DEFAULT_INTERVAL_MS, simulated_streams
from simul.streams.stats import step_changes, stream_stats
from simul.streams.text_streams import TextRequest, text_streams

streams_app = typer.Typer(
    name="streams",
    help="Build stream files (FLORES, ACL 60/60, recognizer partials) and inspect them.",
    no_args_is_help=True,
)

OutputOption = Annotated[
    Path, typer.Option("--output", "-o", help="Stream file to write (JSONL, atomically).")
]
StartOption = Annotated[int, typer.Option(help="First segment/sentence to use (1-based line number).")]
LimitOption = Annotated[int | None, typer.Option(help="Use at most N segments/sentences from --start.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print a JSON summary on stdout.")]
PartialsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--partials",
        help="Recognizer output, FILE or TALK=FILE (repeatable; a talk id in the file name also works).",
    ),
]
FormatOption = Annotated[
    str | None,
    typer.Option(help=f"Format of --partials: {', '.join(FORMATS)} (default: from the file suffix)."),
]
TimeUnitOption = Annotated[
    str | None,
    typer.Option(
        help=f"Unit of the times in --partials: {', '.join(TIME_UNITS)} (default: sltev cs, else ms)."
    ),
]
AlignOption = Annotated[
    str, typer.Option(help=f"Assign recognized words to segments by {' or '.join(ALIGN_MODES)}.")
]
MaxGapOption = Annotated[
    float, typer.Option(help="Words up to this far (ms) outside every segment go to the nearest one.")
]
SegmentsOption = Annotated[
    Path | None,
    typer.Option(help="Segment YAML ({offset, duration, wav} per segment). Default: found next to the text."),
]
AsrModelOption = Annotated[
    Path | None,
    typer.Option(
        help="faster-whisper (CTranslate2) model folder. Default: Whisper base from the simul[asr] packages."
    ),
]
StableOption = Annotated[
    str,
    typer.Option(
        help=f"Partials shown: {' or '.join(STABLE_POLICIES)} (LocalAgreement-2: what the last two agree on)."
    ),
]
AsrWindowOption = Annotated[
    str, typer.Option(help=f"Encoder input: {' or '.join(WINDOWS)} (audio so far + 3 s, or 30 s windows).")
]
VadOption = Annotated[str, typer.Option(help=f"Speech gate before Whisper: {', '.join(VADS)}.")]
AsrComputeOption = Annotated[str, typer.Option(help="CTranslate2 compute type (int8, float32, ...).")]
AsrBeamOption = Annotated[int, typer.Option(help="Whisper beam size (1: greedy).")]
AsrThreadsOption = Annotated[int, typer.Option(help="CPU threads for Whisper (0: min(4, cores)).")]


def _summary_line(count: int, output: Path, unaligned: int, what: str) -> None:
    err_console.print(
        visible(f"wrote {count} streams to {output}; {unaligned} partials unaligned ({what})"),
        soft_wrap=True,
        highlight=False,
        markup=False,
    )


def _write(output: Path, streams: list[Stream], partials: list[str] | None = None) -> int:
    if not streams:
        if partials:
            raise SimulError(
                f"no streams to write: the partials in {', '.join(partials)} reach none of the selected "
                "segments (see the warnings above)"
            )
        raise SimulError(
            "no streams to write: nothing was selected or the partials reach none of the segments"
        )
    return write_streams(output, streams)


def _warn(message: str, label: str = "warning") -> None:
    err_console.print(f"[yellow]{label}:[/] {markup(message)}", soft_wrap=True)


def _report_partials(result: PartialsImport) -> None:
    """Warnings for everything the partials could not cover (never silent)."""
    for r in result.reports:
        if r.unaligned_partials or r.unaligned_words:
            _warn(
                f"{r.file} (talk {r.talk}): {r.unaligned_partials} of {r.partials} partials and "
                f"{r.unaligned_words} of {r.words} words could not be aligned to any segment"
            )
        if r.segments_without_partials:
            lines = ", ".join(str(x) for x in r.segments_without_partials[:20])
            more = "" if len(r.segments_without_partials) <= 20 else ", ..."
            _warn(
                f"{len(r.segments_without_partials)} segments of talk {r.talk} got no recognized words and "
                f"have no stream (lines {lines}{more})"
            )
        if r.clamped_times:
            _warn(
                f"{r.clamped_times} steps of talk {r.talk} were emitted before their segment started (time 0)"
            )
    if result.segments_not_covered:
        _warn(
            f"{len(result.segments_not_covered)} selected segments belong to talks without partials and were "
            "skipped",
            label="note",
        )


def _asr_settings(
    asr_model: Path | None,
    interval_ms: float | None,
    stable: str,
    asr_window: str,
    vad: str,
    asr_compute_type: str,
    asr_beam_size: int,
    asr_threads: int,
    language: str,
) -> AudioSettings:
    options = RecognizerOptions(
        language=language,
        beam_size=asr_beam_size,
        compute_type=asr_compute_type,
        threads=asr_threads,
        window=asr_window,
        vad=vad,
    )
    settings = AudioSettings(
        model=asr_model,
        interval_ms=DEFAULT_INTERVAL_MS if interval_ms is None else interval_ms,
        stable=stable,
        options=options,
    )
    settings.check()
    return settings


def _recognize(items: list[AudioSegment], settings: AudioSettings, src: str, tgt: str) -> AudioImport:
    """Recognize with a transient progress line on a terminal (nothing in logs: the summary says it all)."""
    if not err_console.is_terminal:
        return recognize_segments(items, settings, src, tgt)
    with err_console.status("loading the recognizer") as status:

        def progress(number: int, total: int, segment: Any) -> None:
            status.update(markup(f"recognizing segment {number}/{total} ({segment.id})", newlines=False))

        return recognize_segments(items, settings, src, tgt, progress)


def _audio_what(result: AudioImport, settings: AudioSettings) -> str:
    """The end of the summary line: recognizer, interval, speed and (with transcripts) the final WER."""
    model = settings.model.name if settings.model is not None else "whisper-base"
    stable = "" if settings.stable == "none" else f", {settings.stable}"
    what = f"{model} partials every {settings.interval_ms:g} ms{stable}; RTF {result.real_time_factor:.2f}"
    if result.errors is not None:
        what += f", final WER {result.errors.wer:.1%}"
    return what


def _report_audio(result: AudioImport) -> None:
    if result.segments_without_speech:
        ids = ", ".join(result.segments_without_speech[:20])
        more = "" if len(result.segments_without_speech) <= 20 else ", ..."
        _warn(
            f"{len(result.segments_without_speech)} segments gave no transcript (no speech heard) and "
            f"have no stream: {ids}{more}"
        )


@streams_app.command("flores")
@handle_errors
def flores_command(
    output: OutputOption,
    data_dir: Annotated[
        Path | None,
        typer.Option(help="FLORES-200 or FLORES+ folder. Default: the shipped 50-sentence devtest sample."),
    ] = None,
    split: Annotated[str, typer.Option(help="Split: devtest or dev (any split on disk).")] = "devtest",
    src: Annotated[str, typer.Option(help="Source language (FLORES code or short code).")] = "eng_Latn",
    tgt: Annotated[str, typer.Option(help="Target language (FLORES code or short code).")] = "deu_Latn",
    lag: Annotated[int, typer.Option(help="Words (characters for zh/ja) revealed per step.")] = 3,
    start: StartOption = 1,
    limit: LimitOption = None,
    as_json: JsonOption = False,
) -> None:
    """Fixed word-lag streams over FLORES: step t reveals the first t*lag words of each sentence."""
    streams = list(flores_streams(data_dir, split, src, tgt, lag, start=start, limit=limit))
    count = _write(output, streams)
    pair = f"{get_language(src).short}->{get_language(tgt).short}"
    _summary_line(count, output, 0, f"flores200 {split} {pair}, lag {lag}")
    if as_json:
        print_json({"output": str(output), "streams": count, "unaligned_partials": 0, "lag": lag})


@streams_app.command("text")
@handle_errors
def text_command(
    output: OutputOption,
    src_file: Annotated[
        Path | None,
        typer.Option(
            "--src",
            help="Source file: one segment per line, or a TSV/JSONL file holding references too (--format).",
        ),
    ] = None,
    ref: Annotated[
        list[Path] | None,
        typer.Option(
            "--ref", help="Reference file, line-aligned with --src (repeatable: several references)."
        ),
    ] = None,
    src_lang: Annotated[str | None, typer.Option(help="Source language (short or FLORES code).")] = None,
    tgt_lang: Annotated[str | None, typer.Option(help="Target language (short or FLORES code).")] = None,
    text_format: Annotated[
        str | None,
        typer.Option("--format", help="lines, tsv or jsonl (default: from the suffix of --src; else lines)."),
    ] = None,
    testset: Annotated[
        str | None,
        typer.Option(help="A sacrebleu test set (e.g. wmt22), read through sacrebleu's cache ($SACREBLEU)."),
    ] = None,
    langpair: Annotated[str | None, typer.Option(help="Language pair of --testset, e.g. en-de.")] = None,
    lag: Annotated[int, typer.Option(help="Units revealed per step.")] = 3,
    unit: Annotated[
        str | None, typer.Option(help="word or char (default: char for zh/ja/th sources, else word).")
    ] = None,
    name: Annotated[
        str | None,
        typer.Option(
            help="Data set name for ids <name>-<line> (default: --src up to its first dot, or --testset)."
        ),
    ] = None,
    skip_empty: Annotated[
        bool,
        typer.Option(
            "--skip-empty",
            help="Leave out lines with an empty source or reference (counted) instead of failing.",
        ),
    ] = False,
    start: StartOption = 1,
    limit: LimitOption = None,
    as_json: JsonOption = False,
) -> None:
    """Fixed-lag streams from parallel text (line-aligned files, TSV, JSONL) or a sacrebleu test set."""
    request = TextRequest(
        source=src_file,
        references=list(ref or []),
        text_format=text_format,
        src=src_lang,
        tgt=tgt_lang,
        testset=testset,
        langpair=langpair,
        lag=lag,
        unit=unit,
        name=name,
        start=start,
        limit=limit,
        skip_empty=skip_empty,
    )
    imported = text_streams(request)
    for reason, lines in imported.built.skipped.items():
        shown = ", ".join(str(x) for x in lines[:20]) + (", ..." if len(lines) > 20 else "")
        _warn(f"skipped {len(lines)} line(s) with an {reason} (--skip-empty): lines {shown}", label="note")
    count = _write(output, imported.built.streams)
    refs = imported.references_per_stream
    err_console.print(
        f"wrote {count} streams to {output} ({imported.name} {imported.src}->{imported.tgt}, "
        f"{refs} reference{'' if refs == 1 else 's'} per stream, lag {lag} {imported.unit}s); "
        f"{imported.built.skipped_count} line{'' if imported.built.skipped_count == 1 else 's'} skipped",
        soft_wrap=True,
        highlight=False,
        markup=False,
    )
    if as_json:
        print_json({"output": str(output), **imported.summary()})


@streams_app.command("acl6060")
@handle_errors
def acl6060_command(
    output: OutputOption,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            help="ACL 60/60 folder (line-aligned files or the release XML). Default: the shipped sample."
        ),
    ] = None,
    split: Annotated[str, typer.Option(help="Split: dev or eval.")] = "dev",
    tgt: Annotated[str, typer.Option(help="Target language: de, ja, zh (any language on disk).")] = "de",
    segments: SegmentsOption = None,
    partials: PartialsOption = None,
    partials_format: FormatOption = None,
    time_unit: TimeUnitOption = None,
    align: AlignOption = "text",
    max_gap_ms: MaxGapOption = DEFAULT_MAX_GAP_MS,
    simulate: Annotated[
        bool, typer.Option("--simulate", help="Simulate recognizer partials from the segment times.")
    ] = False,
    interval_ms: Annotated[
        float | None, typer.Option(help=f"Simulated partial every N ms (default {DEFAULT_INTERVAL_MS:g}).")
    ] = None,
    word_times: Annotated[
        list[str] | None,
        typer.Option(
            "--word-times",
            help="Word-timed transcript of a talk for --simulate, FILE or TALK=FILE (repeatable).",
        ),
    ] = None,
    revise_rate: Annotated[
        float | None, typer.Option(help="Share of simulated partials whose last word is first misrecognized.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the simulated revisions.")] = 0,
    audio_dir: Annotated[
        Path | None,
        typer.Option(
            help="Recognize the talks' audio: DIR holds <talk>.wav as named in the YAML's wav field."
        ),
    ] = None,
    stable: StableOption = "none",
    asr_model: AsrModelOption = None,
    asr_window: AsrWindowOption = "trimmed",
    vad: VadOption = "silero",
    asr_compute_type: AsrComputeOption = "int8",
    asr_beam_size: AsrBeamOption = 1,
    asr_threads: AsrThreadsOption = 0,
    start: StartOption = 1,
    limit: LimitOption = None,
    as_json: JsonOption = False,
) -> None:
    """ACL 60/60 streams (English speech): steps from recognizer partials, recognized audio or simulation."""
    if bool(partials) + simulate + (audio_dir is not None) != 1:
        raise UsageError(
            "choose the partials: --partials FILE (recognizer output) or --simulate, or --audio-dir DIR "
            "(recognize the talks' audio)"
        )
    asr_given = (
        stable != "none"
        or asr_model is not None
        or asr_window != "trimmed"
        or vad != "silero"
        or asr_compute_type != "int8"
        or asr_beam_size != 1
        or asr_threads != 0
    )
    if asr_given and audio_dir is None:
        raise UsageError("--stable and the --asr-*/--vad options only apply with --audio-dir")
    all_segments, _ = acl6060_segments(data_dir, split, tgt, segments)
    chosen = select(all_segments, start, limit)
    tgt_short = get_language(tgt).short
    summary: dict[str, Any]
    if audio_dir is not None:
        if partials_format is not None or time_unit is not None or align != "text":
            raise UsageError("--partials-format, --time-unit and --align only apply with --partials")
        if word_times or revise_rate is not None:
            raise UsageError("--word-times and --revise-rate only apply with --simulate")
        settings = _asr_settings(
            asr_model,
            interval_ms,
            stable,
            asr_window,
            vad,
            asr_compute_type,
            asr_beam_size,
            asr_threads,
            "en",
        )
        items, without_audio = dataset_segments(chosen, audio_dir)
        if without_audio:
            talks = sorted({s.talk for s in without_audio})
            _warn(
                f"{len(without_audio)} selected segments belong to talks without audio in {audio_dir} and "
                f"were skipped (talks {', '.join(talks[:5])}{', ...' if len(talks) > 5 else ''})",
                label="note",
            )
        recognized = _recognize(items, settings, "en", tgt_short)
        _report_audio(recognized)
        count = _write(output, recognized.streams)
        _summary_line(
            count, output, 0, f"acl6060 {split} en->{tgt_short}, {_audio_what(recognized, settings)}"
        )
        summary = recognized.summary()
    elif simulate:
        if partials_format is not None or time_unit is not None or align != "text":
            raise UsageError("--partials-format, --time-unit and --align only apply with --partials")
        simulated = simulated_streams(
            all_segments,
            chosen,
            tgt_short,
            interval_ms=DEFAULT_INTERVAL_MS if interval_ms is None else interval_ms,
            word_times=word_times or [],
            revise_rate=0.0 if revise_rate is None else revise_rate,
            seed=seed,
        )
        count = _write(output, simulated.streams)
        _summary_line(count, output, 0, f"acl6060 {split} en->{tgt_short}, simulated partials")
        summary = simulated.summary()
    else:
        if word_times or interval_ms is not None or revise_rate is not None:
            raise UsageError(
                "--word-times and --revise-rate only apply with --simulate, --interval-ms with --simulate or "
                "--audio-dir"
            )
        result = build_partial_streams(
            all_segments,
            chosen,
            partials or [],
            partials_format,
            tgt_short,
            "en",
            time_unit,
            align,
            max_gap_ms,
        )
        _report_partials(result)
        count = _write(output, result.streams, partials)
        formats = ", ".join(sorted({r.format for r in result.reports}))
        _summary_line(
            count, output, result.unaligned_partials, f"acl6060 {split} en->{tgt_short}, {formats} partials"
        )
        summary = result.summary()
    if as_json:
        print_json({"output": str(output), **summary, "streams": count})


@streams_app.command("asr")
@handle_errors
def asr_command(
    output: OutputOption,
    tgt: Annotated[str, typer.Option(help="Target language of the streams.")],
    partials: PartialsOption = None,
    audio: Annotated[
        Path | None,
        typer.Option(help="Recognize this audio file (any rate and channels) instead of reading --partials."),
    ] = None,
    source: Annotated[
        Path | None,
        typer.Option(
            help="Reference transcript, one segment per line (e.g. an SLTev .OSt file); with --audio: "
            "optional, for the final WER."
        ),
    ] = None,
    reference: Annotated[
        Path | None,
        typer.Option(
            "--reference",
            "--ref",
            help="Reference translation, one line per segment (line-aligned with --source or the segments).",
        ),
    ] = None,
    src: Annotated[str, typer.Option(help="Source (spoken) language.")] = "en",
    name: Annotated[
        str | None,
        typer.Option(
            help="Data set name for stream ids <name>-<line> (default: from --source, else the audio file)."
        ),
    ] = None,
    talk: Annotated[
        str | None,
        typer.Option(help="Talk id of all lines when there is no --segments YAML (default: --name)."),
    ] = None,
    segments: SegmentsOption = None,
    partials_format: FormatOption = None,
    time_unit: TimeUnitOption = None,
    align: AlignOption = "text",
    max_gap_ms: MaxGapOption = DEFAULT_MAX_GAP_MS,
    interval_ms: Annotated[
        float | None,
        typer.Option(
            help=f"With --audio: recognize the growing audio every N ms (default {DEFAULT_INTERVAL_MS:g})."
        ),
    ] = None,
    split_silence_ms: Annotated[
        float | None,
        typer.Option(help="With --audio and no --segments: cut the file at pauses of at least N ms."),
    ] = None,
    stable: StableOption = "none",
    asr_model: AsrModelOption = None,
    asr_window: AsrWindowOption = "trimmed",
    vad: VadOption = "silero",
    asr_compute_type: AsrComputeOption = "int8",
    asr_beam_size: AsrBeamOption = 1,
    asr_threads: AsrThreadsOption = 0,
    start: StartOption = 1,
    limit: LimitOption = None,
    as_json: JsonOption = False,
) -> None:
    """Streams from any recognizer output and a line-aligned transcript, or from recognizing an audio file."""
    if bool(partials) == (audio is not None):
        raise UsageError(
            "pass the recognizer output with --partials FILE, or an audio file to recognize with --audio FILE"
        )
    src_short, tgt_short = get_language(src).short, get_language(tgt).short
    if audio is not None:
        if partials_format is not None or time_unit is not None or align != "text" or talk is not None:
            raise UsageError("--partials-format, --time-unit, --align and --talk only apply with --partials")
        if segments is not None and split_silence_ms is not None:
            raise UsageError(
                "--split-silence-ms only applies without --segments (the YAML gives the segments)"
            )
        settings = _asr_settings(
            asr_model,
            interval_ms,
            stable,
            asr_window,
            vad,
            asr_compute_type,
            asr_beam_size,
            asr_threads,
            src_short,
        )
        dataset = name or (source.name.split(".")[0] if source is not None else _audio_name(audio))
        items = file_segments(audio, dataset, segments, reference, source, split_silence_ms)
        by_id = {item.segment.id: item for item in items}
        chosen_items = [by_id[s.id] for s in select([i.segment for i in items], start, limit)]
        recognized = _recognize(chosen_items, settings, src_short, tgt_short)
        _report_audio(recognized)
        count = _write(output, recognized.streams)
        _summary_line(
            count, output, 0, f"{dataset} {src_short}->{tgt_short}, {_audio_what(recognized, settings)}"
        )
        if as_json:
            print_json({"output": str(output), **recognized.summary(), "streams": count})
        return
    if interval_ms is not None or split_silence_ms is not None:
        raise UsageError("--interval-ms and --split-silence-ms only apply with --audio")
    if stable != "none" or asr_model is not None or asr_window != "trimmed" or vad != "silero":
        raise UsageError("--stable, --vad and the --asr-* options only apply with --audio")
    if asr_compute_type != "int8" or asr_beam_size != 1 or asr_threads != 0:
        raise UsageError("--stable, --vad and the --asr-* options only apply with --audio")
    if source is None:
        raise UsageError(
            "--partials needs the reference transcript: pass --source FILE (one segment per line)"
        )
    dataset = name or source.name.split(".")[0]
    all_segments = line_segments(source, reference, dataset, talk or dataset, segments)
    chosen = select(all_segments, start, limit)
    result = build_partial_streams(
        all_segments,
        chosen,
        partials or [],
        partials_format,
        tgt_short,
        src_short,
        time_unit,
        align,
        max_gap_ms,
    )
    _report_partials(result)
    count = _write(output, result.streams, partials)
    formats = ", ".join(sorted({r.format for r in result.reports}))
    _summary_line(
        count, output, result.unaligned_partials, f"{dataset} {src_short}->{tgt_short}, {formats} partials"
    )
    if as_json:
        print_json({"output": str(output), **result.summary(), "streams": count})


def _audio_name(audio: Path) -> str:
    """Stream id prefix for an audio file: its name without the audio suffix (talk ids contain dots)."""
    name = audio.name
    for suffix in (".wav", ".flac", ".ogg", ".opus", ".mp3"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return audio.stem


def _stats_table(path: Path, stats: dict[str, Any]) -> Table:
    table = Table(title=markup(f"simul streams stats: {path.name}", newlines=False), show_header=True)
    table.add_column("", style="bold")
    table.add_column("value", justify="right")

    def spread(key: str) -> str:
        s = stats[key]
        return f"mean {s['mean']:g}, median {s['median']:g}, max {s['max']:g}"

    unit = stats["unit"] + "s"
    table.add_row("streams", str(stats["streams"]))
    table.add_row("languages", markup(", ".join(f"{k} ({v})" for k, v in stats["languages"].items())))
    table.add_row("steps", str(stats["steps"]))
    table.add_row("steps per stream", spread("steps_per_stream"))
    table.add_row(f"{unit} added per step", spread("added_per_step"))
    table.add_row(f"final source {unit}", spread("final_length"))
    table.add_row("steps that revise", f"{stats['revise_share']:.1%} ({stats['revising_steps']})")
    table.add_row("... before the final step", f"{stats['revise_share_before_final']:.1%}")
    table.add_row("timed streams", f"{stats['timed_streams']} of {stats['streams']}")
    if "final_time_ms" in stats:
        table.add_row("final step time (ms)", spread("final_time_ms"))
    table.add_row("simulated streams", str(stats["simulated_streams"]))
    table.add_row("with reference", str(stats["with_reference"]))
    per_stream = stats["references_per_stream"]
    if set(per_stream) - {"0", "1"}:
        shown = ", ".join(f"{count} with {n}" for n, count in per_stream.items())
        table.add_row("references per stream", shown)
    if "partials" in stats:
        table.add_row("partials (files)", f"{stats['partials']} ({stats['partials_files']})")
        table.add_row("unaligned partials", str(stats["unaligned_partials"]))
        table.add_row("unaligned words", str(stats["unaligned_words"]))
    return table


@streams_app.command("stats")
@handle_errors
def stats_command(
    path: Annotated[Path, typer.Argument(help="Stream file (JSONL).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON on stdout.")] = False,
) -> None:
    """Streams, steps per stream, units added per step, share of revising steps, timing."""
    stats = {"file": str(path), **stream_stats(read_streams(path))}
    err_console.print(_stats_table(path, stats))
    if as_json:
        print_json(stats)


def _find_stream(path: Path, stream_id: str) -> Stream:
    streams = read_streams(path)
    for stream in streams:
        if stream.id == stream_id:
            return stream
    close = difflib.get_close_matches(stream_id, [s.id for s in streams], n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; ids look like {excerpt(streams[0].id)}"
    raise SimulError(f"no stream {excerpt(stream_id)} in {path}{hint}")


@streams_app.command("show")
@handle_errors
def show_command(
    path: Annotated[Path, typer.Argument(help="Stream file (JSONL).")],
    stream_id: Annotated[str, typer.Option("--id", help="Id of the stream to show.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the stream record as JSON on stdout.")
    ] = False,
) -> None:
    """The steps of one stream, with their times and how each changes the previous one."""
    stream = _find_stream(path, stream_id)
    table = Table(
        title=markup(f"{stream.id} ({stream.src}->{stream.tgt}, {len(stream.steps)} steps)", newlines=False),
        caption="\n".join(markup(line) for line in reference_lines(stream)) or "no reference",
    )
    table.add_column("#", justify="right")
    table.add_column("time ms", justify="right")
    table.add_column("change")
    table.add_column("+/-", justify="right")
    table.add_column("source", overflow="fold")
    for index, (step, change) in enumerate(zip(stream.steps, step_changes(stream), strict=True)):
        time = "-" if step.time_ms is None else f"{step.time_ms:.0f}"
        kind = change.kind + (" (final)" if step.final else "")
        table.add_row(str(index), time, kind, f"+{change.added} -{change.removed}", plain(step.source))
    err_console.print(table)
    if as_json:
        print_json(stream.to_json())


@streams_app.command("export")
@handle_errors
def export_command(
    path: Annotated[Path, typer.Argument(help="Stream file (JSONL).")],
    output: OutputOption,
    format: Annotated[
        str, typer.Option("--format", help="ssbd-ref: the SSBD reference's stream.jsonl.")
    ] = "ssbd-ref",
    limit: LimitOption = None,
) -> None:
    """Write streams in another tool's input format (the SSBD reference: `llama-self-spec-bias -f FILE`)."""
    from simul.runs.directory import write_atomic
    from simul.runs.ingest.ssbd_ref import stream_lines

    if format != "ssbd-ref":
        raise UsageError(f"unknown --format {format!r}; choose one of: ssbd-ref")
    streams = read_streams(path, limit)
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(output, stream_lines(streams))
    err_console.print(f"wrote {len(streams)} streams to {output} (the SSBD reference's stream.jsonl)")


def register(app: typer.Typer) -> None:
    app.add_typer(streams_app, name="streams")

"""`simul streams acl6060` and `simul streams asr`: streams of speech, from recognizer partials, recognized
audio or simulated partials."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from simul.cli.common import err_console, handle_errors, print_json
from simul.cli.streams_cmd.common import (
    AlignOption,
    AsrBeamOption,
    AsrComputeOption,
    AsrModelOption,
    AsrThreadsOption,
    AsrWindowOption,
    FormatOption,
    JsonOption,
    LimitOption,
    LongformOption,
    MaxGapOption,
    OutputOption,
    PartialsOption,
    SegmentsOption,
    StableOption,
    StartOption,
    TimeUnitOption,
    VadOption,
    summary_line,
    warn,
    write_output,
)
from simul.common.errors import SimulError, UsageError
from simul.common.languages import get_language
from simul.common.safe_text import markup
from simul.streams.acl6060 import acl6060_segments
from simul.streams.asr.build import AudioImport, AudioSegment, dataset_segments, file_segments
from simul.streams.asr.recognizer import RecognizerOptions
from simul.streams.asr.run import AudioSettings, recognize_segments
from simul.streams.longform import (
    DEFAULT_LONGFORM_INTERVAL_MS,
    MAX_TRIMMED_OVERLAP_MS,
    partial_talks,
    pick_talks,
    simulated_talks,
    talks_in_order,
)
from simul.streams.partials import DEFAULT_MAX_GAP_MS, PartialsImport
from simul.streams.partials import partial_streams as build_partial_streams
from simul.streams.segments import Segment, line_segments, select
from simul.streams.simulate import DEFAULT_INTERVAL_MS, simulated_streams


def _report_partials(result: PartialsImport) -> None:
    """Warnings for everything the partials could not cover (never silent)."""
    for r in result.reports:
        if r.unaligned_partials or r.unaligned_words:
            warn(
                f"{r.file} (talk {r.talk}): {r.unaligned_partials} of {r.partials} partials and "
                f"{r.unaligned_words} of {r.words} words could not be aligned to any segment"
            )
        if r.segments_without_partials:
            lines = ", ".join(str(x) for x in r.segments_without_partials[:20])
            more = "" if len(r.segments_without_partials) <= 20 else ", ..."
            warn(
                f"{len(r.segments_without_partials)} segments of talk {r.talk} got no recognized words and "
                f"have no stream (lines {lines}{more})"
            )
        if r.clamped_times:
            warn(
                f"{r.clamped_times} steps of talk {r.talk} were emitted before their segment started (time 0)"
            )
    if result.segments_not_covered:
        warn(
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
        warn(
            f"{len(result.segments_without_speech)} segments gave no transcript (no speech heard) and "
            f"have no stream: {ids}{more}"
        )


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
        float | None,
        typer.Option(
            help=f"Simulated partial every N ms (default {DEFAULT_INTERVAL_MS:g}; with --longform a step "
            f"every {DEFAULT_LONGFORM_INTERVAL_MS:g})."
        ),
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
    longform: LongformOption = False,
    talk: Annotated[
        list[str] | None,
        typer.Option("--talk", help="With --longform: build only this talk (repeatable; default: all)."),
    ] = None,
    start: StartOption = 1,
    limit: LimitOption = None,
    as_json: JsonOption = False,
) -> None:
    """ACL 60/60 streams (English speech): steps from recognizer partials, recognized audio or simulation.

    With --longform, one stream per talk (the growing talk transcript; simulated timing unless --partials
    gives the recognizer's talk-level output); --limit N then keeps each talk's first N segments."""
    if longform:
        asr_given = audio_dir is not None or stable != "none" or asr_model is not None
        if asr_given or asr_window != "trimmed" or vad != "silero" or asr_compute_type != "int8":
            raise UsageError(
                "--longform reads --partials or simulates: --audio-dir and the ASR options do not apply"
            )
        if asr_beam_size != 1 or asr_threads != 0:
            raise UsageError(
                "--longform reads --partials or simulates: --audio-dir and the ASR options do not apply"
            )
        if align != "text" or max_gap_ms != DEFAULT_MAX_GAP_MS or revise_rate is not None:
            raise UsageError(
                "--align, --max-gap-ms and --revise-rate do not apply with --longform (a talk is one stream)"
            )
        if start != 1:
            raise UsageError("--start does not apply with --longform; pick talks with --talk")
        all_segments, _ = acl6060_segments(data_dir, split, tgt, segments)
        _longform_talks(
            output,
            all_segments,
            f"acl6060-{split}",
            f"acl6060 {split}",
            "en",
            get_language(tgt).short,
            talk or [],
            limit,
            partials or [],
            partials_format,
            time_unit,
            interval_ms,
            word_times or [],
            simulate,
            as_json,
        )
        return
    if talk:
        raise UsageError("--talk only applies with --longform")
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
            warn(
                f"{len(without_audio)} selected segments belong to talks without audio in {audio_dir} and "
                f"were skipped (talks {', '.join(talks[:5])}{', ...' if len(talks) > 5 else ''})",
                label="note",
            )
        recognized = _recognize(items, settings, "en", tgt_short)
        _report_audio(recognized)
        count = write_output(output, recognized.streams)
        summary_line(
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
        count = write_output(output, simulated.streams)
        summary_line(count, output, 0, f"acl6060 {split} en->{tgt_short}, simulated partials")
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
        count = write_output(output, result.streams, partials)
        formats = ", ".join(sorted({r.format for r in result.reports}))
        summary_line(
            count, output, result.unaligned_partials, f"acl6060 {split} en->{tgt_short}, {formats} partials"
        )
        summary = result.summary()
    if as_json:
        print_json({"output": str(output), **summary, "streams": count})


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
    longform: LongformOption = False,
    start: StartOption = 1,
    limit: LimitOption = None,
    as_json: JsonOption = False,
) -> None:
    """Streams from any recognizer output and a line-aligned transcript, or from recognizing an audio file.

    With --longform, --partials covers whole recordings: one stream per talk (the --segments YAML's wav,
    else --talk), with the line-aligned segments as its reference segmentation."""
    if longform:
        if audio is not None:
            raise UsageError(
                "--longform reads the recognizer's talk-level output (--partials FILE); recognizing --audio "
                "makes one stream per segment (leave out --longform)"
            )
        if align != "text" or max_gap_ms != DEFAULT_MAX_GAP_MS or start != 1 or limit is not None:
            raise UsageError("--align, --max-gap-ms, --start and --limit do not apply with --longform")
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
        count = write_output(output, recognized.streams)
        summary_line(
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
    if longform:
        _longform_talks(
            output,
            all_segments,
            dataset,
            dataset,
            src_short,
            tgt_short,
            [],
            None,
            partials or [],
            partials_format,
            time_unit,
            None,
            [],
            False,
            as_json,
        )
        return
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
    count = write_output(output, result.streams, partials)
    formats = ", ".join(sorted({r.format for r in result.reports}))
    summary_line(
        count, output, result.unaligned_partials, f"{dataset} {src_short}->{tgt_short}, {formats} partials"
    )
    if as_json:
        print_json({"output": str(output), **result.summary(), "streams": count})


def _longform_talks(
    output: Path,
    all_segments: list[Segment],
    id_prefix: str,
    what: str,
    src: str,
    tgt: str,
    talks_wanted: list[str],
    limit: int | None,
    partials: list[str],
    partials_format: str | None,
    time_unit: str | None,
    interval_ms: float | None,
    word_times: list[str],
    simulate: bool,
    as_json: bool,
) -> None:
    """Write one long-form stream per talk: from recognizer output (``partials``) or simulated timing."""
    if limit is not None and limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}")
    every = talks_in_order(all_segments)
    talks = pick_talks(every, talks_wanted)
    if partials:
        if simulate or interval_ms is not None or word_times:
            raise UsageError("--simulate, --interval-ms and --word-times do not apply with --partials")
        if limit is not None:
            raise UsageError(
                "--limit cuts simulated talks only; with --partials cut the recognizer output instead"
            )
        built = partial_talks(talks, id_prefix, partials, partials_format, src, tgt, time_unit, list(every))
        if not built.streams:
            raise SimulError(
                f"no talks to write: the partials in {', '.join(partials)} cover none of the selected talks"
            )
        uncovered = [t for t in talks if t not in {d["talk"] for d in built.details}]
        if uncovered:
            shown = ", ".join(uncovered[:5]) + (", ..." if len(uncovered) > 5 else "")
            warn(f"{len(uncovered)} talks have no partials and were not written ({shown})", label="note")
        how = "recognizer output"
    else:
        if partials_format is not None or time_unit is not None:
            raise UsageError("--partials-format and --time-unit only apply with --partials")
        if limit is not None:
            talks = {t: segs[:limit] for t, segs in talks.items()}
        built = simulated_talks(
            talks,
            id_prefix,
            src,
            tgt,
            DEFAULT_LONGFORM_INTERVAL_MS if interval_ms is None else interval_ms,
            word_times,
            list(every),
        )
        how = "simulated timing"
    count = write_output(output, built.streams)
    steps = sum(len(s.steps) for s in built.streams)
    trimmed = sum(d["overlaps_trimmed"] for d in built.details)
    if trimmed:
        warn(
            f"{trimmed} segments overlapped the next one by at most {MAX_TRIMMED_OVERLAP_MS:g} ms (forced "
            "alignment rounding) and were cut to end where the next starts",
            label="note",
        )
    err_console.print(
        f"wrote {count} long-form talk{'' if count == 1 else 's'} ({steps} steps) to {output} "
        f"({what} {src}->{tgt}, {how})",
        soft_wrap=True,
        highlight=False,
        markup=False,
    )
    if as_json:
        print_json({"output": str(output), **built.summary()})


def _audio_name(audio: Path) -> str:
    """Stream id prefix for an audio file: its name without the audio suffix (talk ids contain dots)."""
    name = audio.name
    for suffix in (".wav", ".flac", ".ogg", ".opus", ".mp3"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return audio.stem

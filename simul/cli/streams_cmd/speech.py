"""`simul streams acl6060` and `simul streams asr`: streams of speech, from recognizer partials, recognized
audio or simulated partials.

Each command has modes that share no options: reading recognizer output (--partials: PartialsOptions),
recognizing audio (--audio-dir or --audio: AsrOptions), simulating partials from the segment times
(--simulate: SimulateOptions, acl6060 only) and whole talks (--longform). Each mode is its own function,
given only the options it uses; the options of the modes not chosen are refused (exit 2), every one named.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from simul.cli.common import err_console, handle_errors, print_json
from simul.cli.ignored import refuse
from simul.cli.option_groups import changed, with_group
from simul.cli.streams_cmd.common import (
    JsonOption,
    LimitOption,
    LongformOption,
    OutOption,
    RefFilesOption,
    SegmentsOption,
    StartOption,
    src_lang_option,
    summary_line,
    tgt_lang_option,
    warn,
    write_output,
)
from simul.cli.streams_cmd.talk_audio import TalkAsrOptions, recognize_talk_audio
from simul.common.errors import SimulError, UsageError
from simul.common.languages import get_language
from simul.common.safe_text import markup
from simul.streams.acl6060 import acl6060_segments
from simul.streams.asr.build import AudioImport, AudioSegment, dataset_segments, file_segments
from simul.streams.asr.partials import StablePolicy
from simul.streams.asr.recognizer import AsrWindow, ComputeType, RecognizerOptions, Vad
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
from simul.streams.partials.formats import AlignMode, PartialsFormat, TimeUnit
from simul.streams.segments import Segment, line_segments, select
from simul.streams.simulate import DEFAULT_INTERVAL_MS, simulated_streams


@dataclass(frozen=True)
class PartialsOptions:
    """Reading a recognizer's output (--partials) and fitting its words to the segments."""

    partials: Annotated[
        list[str] | None,
        typer.Option(
            "--partials",
            metavar="<file>",
            help="Recognizer output, FILE or TALK=FILE (repeatable; a talk id in the file name also works).",
        ),
    ] = None
    partials_format: Annotated[
        PartialsFormat | None,
        typer.Option("--partials-format", help="Format of --partials (default: from the file suffix)."),
    ] = None
    time_unit: Annotated[
        TimeUnit | None,
        typer.Option("--time-unit", help="Unit of the times in --partials (default: sltev cs, else ms)."),
    ] = None
    align: Annotated[
        AlignMode, typer.Option("--align", help="Assign recognized words to segments by text or by time.")
    ] = "text"
    max_gap_ms: Annotated[
        float, typer.Option(help="Words up to this far (ms) outside every segment go to the nearest one.")
    ] = DEFAULT_MAX_GAP_MS


@dataclass(frozen=True)
class AsrOptions:
    """Recognizing audio (acl6060 --audio-dir, asr --audio): the recognizer and the partials it shows."""

    stable: Annotated[
        StablePolicy,
        typer.Option(
            "--stable",
            help="Partials shown: all, or what the last two agree on (local-agreement: LocalAgreement-2).",
        ),
    ] = "none"
    asr_model: Annotated[
        Path | None,
        typer.Option(
            help="faster-whisper (CTranslate2) model folder. Default: Whisper base from the simul[asr] "
            "packages."
        ),
    ] = None
    asr_window: Annotated[
        AsrWindow,
        typer.Option(
            "--asr-window", help="Encoder input: the audio so far + 3 s (trimmed) or 30 s windows (padded)."
        ),
    ] = "trimmed"
    vad: Annotated[Vad, typer.Option("--vad", help="Speech gate before Whisper.")] = "silero"
    asr_compute_type: Annotated[
        ComputeType, typer.Option("--asr-compute-type", help="CTranslate2 compute type.")
    ] = "int8"
    asr_beam_size: Annotated[int, typer.Option(help="Whisper beam size (1: greedy).")] = 1
    asr_threads: Annotated[int, typer.Option(help="CPU threads for Whisper (0: min(4, cores)).")] = 0

    def settings(self, interval_ms: float | None, language: str) -> AudioSettings:
        options = RecognizerOptions(
            language=language,
            beam_size=self.asr_beam_size,
            compute_type=self.asr_compute_type,
            threads=self.asr_threads,
            window=self.asr_window,
            vad=self.vad,
        )
        settings = AudioSettings(
            model=self.asr_model,
            interval_ms=DEFAULT_INTERVAL_MS if interval_ms is None else interval_ms,
            stable=self.stable,
            options=options,
        )
        settings.check()
        return settings


@dataclass(frozen=True)
class SimulateOptions:
    """Partials simulated from the segment times (acl6060 --simulate, and its --longform talks)."""

    simulate: Annotated[
        bool, typer.Option("--simulate", help="Simulate recognizer partials from the segment times.")
    ] = False
    word_times: Annotated[
        list[str] | None,
        typer.Option(
            "--word-times",
            metavar="<file>",
            help="Word-timed transcript of a talk for --simulate, FILE or TALK=FILE (repeatable).",
        ),
    ] = None
    revise_rate: Annotated[
        float | None,
        typer.Option(
            "--revise-rate", help="Share of simulated partials whose last word is first misrecognized."
        ),
    ] = None
    seed: Annotated[int, typer.Option("--seed", help="Seed of the simulated revisions.")] = 0


def only_with(mode: str, options: list[str]) -> list[str]:
    """The problem of options given outside the mode they belong to (none when the list is empty)."""
    return [f"options that only apply with {mode}: {', '.join(options)}"] if options else []


def not_with(mode: str, options: list[str], why: str = "") -> list[str]:
    """The problem of options that the mode ``mode`` has no use for (none when the list is empty)."""
    return [f"options that do not apply with {mode}{why}: {', '.join(options)}"] if options else []


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
@with_group("simulated", SimulateOptions)
@with_group("asr", AsrOptions)
@with_group("partials", PartialsOptions)
def acl6060_command(
    out: OutOption,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            help="ACL 60/60 folder (line-aligned files or the release XML). Default: the shipped sample."
        ),
    ] = None,
    split: Annotated[str, typer.Option(help="Split: dev or eval.")] = "dev",
    tgt_lang: Annotated[str, tgt_lang_option("Target language: de, ja, zh (any language on disk).")] = "de",
    segments: SegmentsOption = None,
    interval_ms: Annotated[
        float | None,
        typer.Option(
            "--interval-ms",
            help=f"--simulate or --audio-dir: a partial every N ms (default {DEFAULT_INTERVAL_MS:g}; with "
            f"--longform a step every {DEFAULT_LONGFORM_INTERVAL_MS:g}).",
        ),
    ] = None,
    audio_dir: Annotated[
        Path | None,
        typer.Option(
            help="Recognize the talks' audio: DIR holds <talk>.wav as named in the YAML's wav field."
        ),
    ] = None,
    longform: LongformOption = False,
    talk: Annotated[
        list[str] | None,
        typer.Option(
            "--talk",
            metavar="<str>",
            help="With --longform: build only this talk (repeatable; default: all).",
        ),
    ] = None,
    start: StartOption = 1,
    limit: LimitOption = None,
    as_json: JsonOption = False,
    *,
    partials: PartialsOptions,
    asr: AsrOptions,
    simulated: SimulateOptions,
) -> None:
    """ACL 60/60 streams (English speech): steps from recognizer partials, recognized audio or simulation.

    With --longform, one stream per talk (the growing talk transcript; simulated timing unless --partials
    gives the recognizer's talk-level output); --limit N then keeps each talk's first N segments."""
    if longform:
        refuse(
            (
                ["--longform reads --partials or simulates: --audio-dir and the ASR options do not apply"]
                if audio_dir is not None or changed(asr)
                else []
            )
            + not_with(
                "--longform",
                changed(partials, ("align", "max_gap_ms")) + changed(simulated, ("revise_rate", "seed")),
                " (a talk is one stream)",
            )
            + (["--start does not apply with --longform; pick talks with --talk"] if start != 1 else [])
        )
        all_segments, _ = acl6060_segments(data_dir, split, tgt_lang, segments)
        names = (f"acl6060-{split}", f"acl6060 {split}")
        tgt = get_language(tgt_lang).short
        _longform_talks(
            out, all_segments, names, "en", tgt, talk or [], limit, partials, simulated, interval_ms, as_json
        )
        return
    if talk:
        raise UsageError("--talk only applies with --longform")
    if bool(partials.partials) + simulated.simulate + (audio_dir is not None) != 1:
        raise UsageError(
            "choose the partials: --partials FILE (recognizer output) or --simulate, or --audio-dir DIR "
            "(recognize the talks' audio)"
        )
    if audio_dir is not None:
        mode, other = (
            "--audio-dir",
            only_with("--partials", changed(partials)) + only_with("--simulate", changed(simulated)),
        )
    elif simulated.simulate:
        mode, other = (
            "--simulate",
            only_with("--partials", changed(partials)) + only_with("--audio-dir", changed(asr)),
        )
    else:
        mode = "--partials"
        other = (
            only_with("--simulate", changed(simulated))
            + only_with("--audio-dir", changed(asr))
            + only_with("--simulate or --audio-dir", ["--interval-ms"] if interval_ms is not None else [])
        )
    refuse(other)
    all_segments, _ = acl6060_segments(data_dir, split, tgt_lang, segments)
    chosen = select(all_segments, start, limit)
    tgt = get_language(tgt_lang).short
    what = f"acl6060 {split} en->{tgt}"
    if mode == "--audio-dir":
        assert audio_dir is not None
        count, summary = _acl6060_audio(out, chosen, audio_dir, asr.settings(interval_ms, "en"), tgt, what)
    elif mode == "--simulate":
        count, summary = _acl6060_simulated(out, all_segments, chosen, simulated, interval_ms, tgt, what)
    else:
        count, summary = _partial_streams(out, all_segments, chosen, partials, "en", tgt, what)
    if as_json:
        print_json({"output": str(out), **summary, "streams": count})


def _acl6060_audio(
    out: Path, chosen: list[Segment], audio_dir: Path, settings: AudioSettings, tgt: str, what: str
) -> tuple[int, dict[str, Any]]:
    """--audio-dir: recognize the chosen segments in their talks' audio."""
    items, without_audio = dataset_segments(chosen, audio_dir)
    if without_audio:
        talks = sorted({s.talk for s in without_audio})
        warn(
            f"{len(without_audio)} selected segments belong to talks without audio in {audio_dir} and "
            f"were skipped (talks {', '.join(talks[:5])}{', ...' if len(talks) > 5 else ''})",
            label="note",
        )
    return _write_recognized(out, items, settings, "en", tgt, what)


def _write_recognized(
    out: Path, items: list[AudioSegment], settings: AudioSettings, src: str, tgt: str, what: str
) -> tuple[int, dict[str, Any]]:
    """Recognize the segments' audio (acl6060 --audio-dir, asr --audio) and write a stream per segment."""
    recognized = _recognize(items, settings, src, tgt)
    _report_audio(recognized)
    count = write_output(out, recognized.streams)
    summary_line(count, out, 0, f"{what}, {_audio_what(recognized, settings)}")
    return count, recognized.summary()


def _acl6060_simulated(
    out: Path,
    all_segments: list[Segment],
    chosen: list[Segment],
    simulated: SimulateOptions,
    interval_ms: float | None,
    tgt: str,
    what: str,
) -> tuple[int, dict[str, Any]]:
    """--simulate: partials from the segment times (and word times), with revisions at --revise-rate."""
    result = simulated_streams(
        all_segments,
        chosen,
        tgt,
        interval_ms=DEFAULT_INTERVAL_MS if interval_ms is None else interval_ms,
        word_times=simulated.word_times or [],
        revise_rate=0.0 if simulated.revise_rate is None else simulated.revise_rate,
        seed=simulated.seed,
    )
    count = write_output(out, result.streams)
    summary_line(count, out, 0, f"{what}, simulated partials")
    return count, result.summary()


def _partial_streams(
    out: Path,
    all_segments: list[Segment],
    chosen: list[Segment],
    partials: PartialsOptions,
    src: str,
    tgt: str,
    what: str,
) -> tuple[int, dict[str, Any]]:
    """--partials: a stream per segment from the recognizer's output (acl6060 and asr)."""
    result = build_partial_streams(
        all_segments,
        chosen,
        partials.partials or [],
        partials.partials_format,
        tgt,
        src,
        partials.time_unit,
        partials.align,
        partials.max_gap_ms,
    )
    _report_partials(result)
    count = write_output(out, result.streams, partials.partials)
    formats = ", ".join(sorted({r.format for r in result.reports}))
    summary_line(count, out, result.unaligned_partials, f"{what}, {formats} partials")
    return count, result.summary()


@handle_errors
@with_group("talk_asr", TalkAsrOptions)
@with_group("asr", AsrOptions)
@with_group("partials", PartialsOptions)
def asr_command(
    out: OutOption,
    tgt_lang: Annotated[str, tgt_lang_option("Target language of the streams.")],
    audio: Annotated[
        Path | None,
        typer.Option(help="Recognize this audio file (any rate and channels) instead of reading --partials."),
    ] = None,
    source: Annotated[
        Path | None,
        typer.Option(
            "--source",
            help="Source transcript, one segment per line (e.g. an SLTev .OSt file); with --audio: "
            "optional, for the final WER.",
        ),
    ] = None,
    ref: RefFilesOption = None,
    src_lang: Annotated[str, src_lang_option("Source (spoken) language.")] = "en",
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
    longform: LongformOption = False,
    start: StartOption = 1,
    limit: LimitOption = None,
    as_json: JsonOption = False,
    *,
    partials: PartialsOptions,
    asr: AsrOptions,
    talk_asr: TalkAsrOptions,
) -> None:
    """Streams from any recognizer output and a line-aligned transcript, or from recognizing an audio file.

    With --longform, one stream per talk: --partials covers whole recordings (the --segments YAML's wav,
    else --talk), or --audio is recognized as it arrives (LocalAgreement-2 over a trimmed buffer, as
    whisper_streaming does), with the line-aligned or YAML segments as its reference segmentation."""
    refs = list(ref or [])
    if longform and audio is not None:
        _asr_longform_audio(
            out, audio, source, refs, name, talk, segments, interval_ms, split_silence_ms, start, limit,
            partials, asr, talk_asr, src_lang, tgt_lang, as_json,
        )  # fmt: skip
        return
    refuse(only_with("--audio --longform", changed(talk_asr)))
    if longform:
        start_limit = (["--start"] if start != 1 else []) + (["--limit"] if limit is not None else [])
        refuse(
            not_with(
                "--longform",
                changed(partials, ("align", "max_gap_ms")) + start_limit,
                " (a talk is one stream)",
            )
        )
    if bool(partials.partials) == (audio is not None):
        raise UsageError(
            "pass the recognizer output with --partials FILE, or an audio file to recognize with --audio FILE"
        )
    src, tgt = get_language(src_lang).short, get_language(tgt_lang).short
    if audio is not None:
        refuse(only_with("--partials", changed(partials) + (["--talk"] if talk is not None else [])))
        if segments is not None and split_silence_ms is not None:
            raise UsageError(
                "--split-silence-ms only applies without --segments (the YAML gives the segments)"
            )
        count, summary = _asr_audio(
            out,
            audio,
            source,
            refs,
            name,
            segments,
            split_silence_ms,
            start,
            limit,
            asr.settings(interval_ms, src),
            src,
            tgt,
        )
        if as_json:
            print_json({"output": str(out), **summary, "streams": count})
        return
    audio_only = changed(asr) + [
        option
        for option, value in (("--interval-ms", interval_ms), ("--split-silence-ms", split_silence_ms))
        if value is not None
    ]
    refuse(only_with("--audio", audio_only))
    if source is None:
        raise UsageError(
            "--partials needs the reference transcript: pass --source FILE (one segment per line)"
        )
    dataset = name or source.name.split(".")[0]
    all_segments = line_segments(source, refs, dataset, talk or dataset, segments)
    if longform:
        no_simulation = SimulateOptions()
        _longform_talks(
            out, all_segments, (dataset, dataset), src, tgt, [], None, partials, no_simulation, None, as_json
        )
        return
    chosen = select(all_segments, start, limit)
    count, summary = _partial_streams(
        out, all_segments, chosen, partials, src, tgt, f"{dataset} {src}->{tgt}"
    )
    if as_json:
        print_json({"output": str(out), **summary, "streams": count})


def _asr_longform_audio(
    out: Path,
    audio: Path,
    source: Path | None,
    refs: list[Path],
    name: str | None,
    talk: str | None,
    segments: Path | None,
    interval_ms: float | None,
    split_silence_ms: float | None,
    start: int,
    limit: int | None,
    partials: PartialsOptions,
    asr: AsrOptions,
    talk_asr: TalkAsrOptions,
    src_lang: str,
    tgt_lang: str,
    as_json: bool,
) -> None:
    """--audio --longform: the whole recording as one stream, recognized as it arrives."""
    refuse(
        not_with(
            "--audio --longform",
            changed(partials)
            + changed(asr, ("stable", "asr_window"))
            + (["--talk"] if talk is not None else [])
            + (["--split-silence-ms"] if split_silence_ms is not None else [])
            + (["--start"] if start != 1 else [])
            + (["--limit"] if limit is not None else []),
            " (the recording is one stream; its words are committed by LocalAgreement-2)",
        )
    )
    src, tgt = get_language(src_lang).short, get_language(tgt_lang).short
    settings = asr.settings(None, src)
    summary = recognize_talk_audio(
        out,
        audio,
        source,
        refs,
        name,
        segments,
        settings.model,
        settings.options,
        talk_asr.online(interval_ms),
        src,
        tgt,
    )
    if as_json:
        print_json(summary)


def _asr_audio(
    out: Path,
    audio: Path,
    source: Path | None,
    refs: list[Path],
    name: str | None,
    segments: Path | None,
    split_silence_ms: float | None,
    start: int,
    limit: int | None,
    settings: AudioSettings,
    src: str,
    tgt: str,
) -> tuple[int, dict[str, Any]]:
    """--audio: recognize one audio file, cut by --segments or at pauses, or whole."""
    dataset = name or (source.name.split(".")[0] if source is not None else _audio_name(audio))
    items = file_segments(audio, dataset, segments, refs, source, split_silence_ms)
    by_id = {item.segment.id: item for item in items}
    chosen_items = [by_id[s.id] for s in select([i.segment for i in items], start, limit)]
    return _write_recognized(out, chosen_items, settings, src, tgt, f"{dataset} {src}->{tgt}")


def _longform_talks(
    out: Path,
    all_segments: list[Segment],
    names: tuple[str, str],
    src: str,
    tgt: str,
    talks_wanted: list[str],
    limit: int | None,
    partials: PartialsOptions,
    simulated: SimulateOptions,
    interval_ms: float | None,
    as_json: bool,
) -> None:
    """Write one long-form stream per talk: from recognizer output (--partials) or simulated timing
    (``names``: the stream id prefix and the data set as the summary names it)."""
    id_prefix, what = names
    if limit is not None and limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}")
    every = talks_in_order(all_segments)
    talks = pick_talks(every, talks_wanted)
    if partials.partials:
        simulation = changed(simulated, ("simulate", "word_times")) + (
            ["--interval-ms"] if interval_ms is not None else []
        )
        if simulation:
            raise UsageError(
                f"{', '.join(simulation)} do{'es' if len(simulation) == 1 else ''} not apply with --partials"
            )
        if limit is not None:
            raise UsageError(
                "--limit cuts simulated talks only; with --partials cut the recognizer output instead"
            )
        built = partial_talks(
            talks,
            id_prefix,
            partials.partials,
            partials.partials_format,
            src,
            tgt,
            partials.time_unit,
            list(every),
        )
        if not built.streams:
            raise SimulError(
                f"no talks to write: the partials in {', '.join(partials.partials)} cover none of the "
                "selected talks"
            )
        uncovered = [t for t in talks if t not in {d["talk"] for d in built.details}]
        if uncovered:
            shown = ", ".join(uncovered[:5]) + (", ..." if len(uncovered) > 5 else "")
            warn(f"{len(uncovered)} talks have no partials and were not written ({shown})", label="note")
        how = "recognizer output"
    else:
        refuse(only_with("--partials", changed(partials, ("partials_format", "time_unit"))))
        if limit is not None:
            talks = {t: segs[:limit] for t, segs in talks.items()}
        built = simulated_talks(
            talks,
            id_prefix,
            src,
            tgt,
            DEFAULT_LONGFORM_INTERVAL_MS if interval_ms is None else interval_ms,
            simulated.word_times or [],
            list(every),
        )
        how = "simulated timing"
    count = write_output(out, built.streams)
    steps = sum(len(s.steps) for s in built.streams)
    trimmed = sum(d["overlaps_trimmed"] for d in built.details)
    if trimmed:
        warn(
            f"{trimmed} segments overlapped the next one by at most {MAX_TRIMMED_OVERLAP_MS:g} ms (forced "
            "alignment rounding) and were cut to end where the next starts",
            label="note",
        )
    err_console.print(
        f"wrote {count} long-form talk{'' if count == 1 else 's'} ({steps} steps) to {out} "
        f"({what} {src}->{tgt}, {how})",
        soft_wrap=True,
        highlight=False,
        markup=False,
    )
    if as_json:
        print_json({"output": str(out), **built.summary()})


def _audio_name(audio: Path) -> str:
    """Stream id prefix for an audio file: its name without the audio suffix (talk ids contain dots)."""
    name = audio.name
    for suffix in (".wav", ".flac", ".ogg", ".opus", ".mp3"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return audio.stem

"""`simul streams acl6060` and `simul streams asr`: streams of speech, from recognizer partials, recognized
audio or simulated partials.

Each command has modes that share no options: reading recognizer output (--partials: PartialsOptions),
recognizing audio (--audio-dir or --audio: AsrOptions), simulating partials from the segment times
(--simulate: SimulateOptions, acl6060 only) and whole talks (--longform). Each mode is its own function,
given only the options it uses; the options of the modes not chosen are refused (exit 2), every one named.
The option groups are in speech_options.py; recognizing one audio file is segment_audio.py's (a stream per
segment) or talk_audio.py's (--longform: one stream).
"""

from __future__ import annotations

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
from simul.cli.streams_cmd.segment_audio import acl6060_audio, asr_segment_audio
from simul.cli.streams_cmd.speech_options import (
    AsrOptions,
    AudioRequest,
    PartialsOptions,
    SimulateOptions,
    not_with,
    only_with,
)
from simul.cli.streams_cmd.talk_audio import TalkAsrOptions, asr_longform_audio
from simul.common.errors import SimulError, UsageError
from simul.common.languages import get_language
from simul.common.safe_text import visible
from simul.streams.acl6060 import acl6060_segments
from simul.streams.longform import (
    DEFAULT_LONGFORM_INTERVAL_MS,
    MAX_TRIMMED_OVERLAP_MS,
    partial_talks,
    pick_talks,
    simulated_talks,
    talks_in_order,
)
from simul.streams.partials import PartialsImport
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
        count, summary = acl6060_audio(out, chosen, audio_dir, asr.settings(interval_ms, "en"), tgt, what)
    elif mode == "--simulate":
        count, summary = _acl6060_simulated(out, all_segments, chosen, simulated, interval_ms, tgt, what)
    else:
        count, summary = _partial_streams(out, all_segments, chosen, partials, "en", tgt, what)
    if as_json:
        print_json({"output": str(out), **summary, "streams": count})


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
    request = None
    if audio is not None:
        request = AudioRequest(
            out=out,
            audio=audio,
            source=source,
            refs=refs,
            name=name,
            talk=talk,
            segments=segments,
            interval_ms=interval_ms,
            split_silence_ms=split_silence_ms,
            start=start,
            limit=limit,
            src_lang=src_lang,
            tgt_lang=tgt_lang,
            as_json=as_json,
        )
    if longform and request is not None:
        asr_longform_audio(request, partials, asr, talk_asr)
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
    if request is not None:
        asr_segment_audio(request, partials, asr)
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
        visible(
            f"wrote {count} long-form talk{'' if count == 1 else 's'} ({steps} steps) to {out} "
            f"({what} {src}->{tgt}, {how})"
        ),
        soft_wrap=True,
        highlight=False,
        markup=False,
    )
    if as_json:
        print_json({"output": str(out), **built.summary()})

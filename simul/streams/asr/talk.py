"""A recording as one long-form stream (format version 3): ``simul streams asr --audio FILE --longform``.

The recording is recognized as it arrives (:mod:`simul.streams.asr.online`); every update that changes the
transcript becomes a step holding the committed text followed by the unconfirmed rest. Each step's
``extra`` says what is what and when:

==================  ==========================================================================================
``audio_ms``        the audio heard when the update ran: its computation-unaware emission time (chunk end)
``compute_ms``      measured time of the update on this machine (gate, Whisper, agreement, trimming)
``cpu_ms``          the process's CPU time in that update (all threads): its work, whatever else ran
``ready_ms``        computation-aware emission: ``max(audio_ms, previous ready_ms) + compute_ms``
``committed_chars`` the first this many characters of the step's source are committed (never revised)
``buffer_ms``       the length of the audio buffer Whisper heard (``buffer_start_ms``: where it began)
``words_from``      the index (in whitespace words of the source) of the first word timed in ``word_ms``
``word_ms``         ``[start, end]`` on the talk's clock of every word from ``words_from`` on
==================  ==========================================================================================

``word_ms`` starts at the first word that was not committed at the previous step: committed words never
change, so the times of every word of a step are those of earlier steps followed by its own (a step stays
small whatever the talk's length; :func:`word_times` puts them together). ``time_ms`` is ``ready_ms``
(``--timing auto``, ``measured`` or ``online``) or ``audio_ms`` (``--timing audio``). With ``--timing audio``
the stream holds nothing measured (no ``compute_ms``, ``cpu_ms`` or ``ready_ms``, no real-time factor in its
provenance): it is then a function of the recording, the recognizer, its settings and the library versions,
the same file on any thread count; the measured figures are in the summary (``--json``).

A recognizer slower than the audio is named as soon as it falls behind (:class:`KeepUpWatch`, the
``behind`` callback of :func:`recognize_talk`): its real-time factor so far, the lag, and the options that
help.

The reference segmentation comes from ``--segments YAML`` (timed, rows of this recording) or from the lines
of ``--source``/``--ref``; without either the stream has no segments (no quality scores). Lines get their
times on the talk clock from the recognizer's own words (:mod:`simul.streams.asr.segment_times`), and the
stream's ``provenance["segment_times"]`` says so, with how many words matched.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError
from simul.common.hashing import sha256_file
from simul.common.limits import check_source, check_steps
from simul.common.quarters import quarter_means
from simul.streams import format as fmt
from simul.streams.asr.agreement import TimedWord
from simul.streams.asr.audio import SAMPLE_RATE, Samples, audio_info, read_audio, speech_mask
from simul.streams.asr.build import _aligned_lines, _talk_of, check_spans, file_segments
from simul.streams.asr.measured import TALK_MEASURED
from simul.streams.asr.online import (
    OnlineOptions,
    OnlineRecognizer,
    Update,
    UpdateWatch,
    WordRecognizer,
    emission_times,
    recognize_recording,
)
from simul.streams.asr.segment_times import DerivedTimes, derive_segment_times
from simul.streams.asr.wer import WordErrors, word_errors
from simul.streams.longform import fit_talk_segments
from simul.streams.segments import Segment, read_utf8_lines

Progress = Callable[[int, float, float], None]  # (updates so far, audio heard ms, recording ms)
# A reference file whose line lengths correlate less than this with the transcript's is refused (another
# talk's translation); judged from this many lines on.
MIN_LENGTH_CORRELATION = 0.5
MIN_LINES_JUDGED = 10
# The summary's runaway updates: over this long (ms), and the slowest this many listed.
SLOW_UPDATE_MS = 1500.0
SLOWEST_SHOWN = 5
# The recognizer is said to fall behind once its result is ready this long after its audio (ms, or one
# interval when that is longer) with more compute than audio so far; it keeps up when its last result is
# ready within KEEPS_UP_FINAL_LAG_S of the recording's end.
BEHIND_LAG_MS = 2000.0
KEEPS_UP_FINAL_LAG_S = 3.0


@dataclass(frozen=True)
class FallingBehind:
    """The first update after which the recognizer was behind the audio (see BEHIND_LAG_MS)."""

    update: int
    audio_ms: float
    lag_ms: float
    real_time_factor: float  # compute so far over audio so far
    duration_ms: float
    timing: str

    def message(self) -> str:
        head = (
            f"the recognizer is slower than the audio on this machine: {self.real_time_factor:.2f} s of "
            f"compute per second of audio over the first {self.update} updates, {self.lag_ms / 1000:.1f} s "
            f"behind at {self.audio_ms / 1000:.0f} s of audio"
        )
        if self.timing in ("auto", "online"):
            return (
                f"{head}; the updates now take all the audio that arrived while the previous one ran "
                f"(--timing {self.timing}), so the lag stays bounded but the transcript depends on this "
                "machine's speed (--timing measured keeps the fixed schedule)"
            )
        remaining = max(0.0, self.duration_ms - self.audio_ms)
        final = self.lag_ms + max(0.0, self.real_time_factor - 1.0) * remaining
        return (
            f"{head}; at this rate the last result comes about {final / 1000:.0f} s after the audio ends. "
            "A larger --interval-ms (fewer updates), --timing auto (the fixed schedule while it keeps up, "
            "then the audio that arrived meanwhile) or a smaller --asr-model keeps up"
        )


class KeepUpWatch:
    """Watches the updates as they are done and reports, once, when the recognizer falls behind."""

    def __init__(
        self, options: OnlineOptions, duration_ms: float, report: Callable[[FallingBehind], None]
    ) -> None:
        self.options = options
        self.duration_ms = duration_ms
        self.report = report
        self.count = 0
        self.compute_ms = 0.0
        self.reported = False

    def __call__(self, update: Update, ready_ms: float) -> None:
        self.count += 1
        self.compute_ms += update.compute_ms
        lag = ready_ms - update.audio_ms
        if self.reported or update.audio_ms <= 0 or self.compute_ms <= update.audio_ms:
            return
        if lag > max(BEHIND_LAG_MS, self.options.interval_ms):
            self.reported = True
            rtf = self.compute_ms / update.audio_ms
            self.report(
                FallingBehind(self.count, update.audio_ms, lag, rtf, self.duration_ms, self.options.timing)
            )


@dataclass
class TalkRecognition:
    """The long-form stream of one recording and the figures about how it was recognized."""

    stream: fmt.Stream
    updates: list[Update]
    loop: OnlineRecognizer
    duration_ms: float
    load_seconds: float = 0.0
    errors: WordErrors | None = None
    derived: DerivedTimes | None = None

    @property
    def recognitions(self) -> list[Update]:
        return [u for u in self.updates if not u.final]

    @property
    def compute_ms(self) -> float:
        return sum(u.compute_ms for u in self.updates)

    @property
    def real_time_factor(self) -> float:
        return self.compute_ms / self.duration_ms if self.duration_ms > 0 else 0.0

    def cost_by_quarter(self) -> list[float]:
        """Mean compute time (ms) per recognition in each quarter of the recognitions, in order."""
        return cost_by_quarter([u.compute_ms for u in self.recognitions])

    def slow_updates(self) -> dict[str, Any]:
        """Runaway updates: the median, how many took over twice it, how many over SLOW_UPDATE_MS in each
        half of the recording, the slowest :data:`SLOWEST_SHOWN`, and how many hit Whisper's token cap or
        lost a segment as a loop (recognizer.DecodingBounds)."""
        runs = self.recognitions
        costs = [u.compute_ms for u in runs]
        median = statistics.median(costs) if costs else 0.0
        half = len(runs) // 2
        slowest = sorted(range(len(runs)), key=lambda k: -costs[k])[:SLOWEST_SHOWN]
        return {
            "update_ms_median": round(median, 1),
            "updates_over_2x_median": sum(1 for c in costs if c > 2 * median),
            "updates_over_1500ms_by_half": [
                sum(1 for c in costs[:half] if c > SLOW_UPDATE_MS),
                sum(1 for c in costs[half:] if c > SLOW_UPDATE_MS),
            ],
            "slowest_updates": [
                {
                    "update": k + 1,
                    "audio_s": round(runs[k].audio_ms / 1000.0, 3),
                    "compute_ms": round(costs[k], 1),
                    "buffer_s": round(runs[k].buffer_ms / 1000.0, 3),
                    "capped": runs[k].capped,
                }
                for k in slowest
            ],
            "capped_updates": sum(1 for u in runs if u.capped),
            "loops_dropped": sum(u.loops_dropped for u in runs),
        }

    def summary(self) -> dict[str, Any]:
        quarters = self.cost_by_quarter()
        ready = emission_times(self.updates)
        out: dict[str, Any] = {
            "streams": 1,
            "longform": True,
            "id": self.stream.id,
            "steps": len(self.stream.steps),
            "audio_s": round(self.duration_ms / 1000.0, 3),
            "compute_s": round(self.compute_ms / 1000.0, 3),
            "real_time_factor": round(self.real_time_factor, 4),
            "recognitions": len(self.recognitions),
            "whisper_runs": sum(u.heard for u in self.recognitions),
            "buffer_max_s": round(max((u.buffer_ms for u in self.recognitions), default=0.0) / 1000.0, 3),
            "buffer_limit_s": self.loop.options.limit_ms / 1000.0,
            "limit_cuts": self.loop.limit_cuts,
            "forced_words": self.loop.forced_words,
            "trims": dict(sorted(self.loop.trims.items())),
            "repeated_words_dropped": self.loop.repeated_words_dropped,
            "update_ms_by_quarter": [round(q, 1) for q in quarters],
            "update_cpu_ms_by_quarter": [
                round(q, 1) for q in cost_by_quarter([u.cpu_ms for u in self.recognitions])
            ],
            "cost_growth": round(quarters[-1] / quarters[0], 3) if quarters and quarters[0] > 0 else None,
            "final_lag_s": round((ready[-1] - self.duration_ms) / 1000.0, 3) if ready else None,
            "max_lag_s": round(
                max((r - u.audio_ms for r, u in zip(ready, self.updates, strict=True)), default=0.0) / 1000.0,
                3,
            ),
            "keeps_up": bool(ready) and ready[-1] - self.duration_ms <= 1000.0 * KEEPS_UP_FINAL_LAG_S,
            "timing": self.loop.options.timing,
            "late_updates": self.loop.late_updates,
            "cancelled_updates": self.loop.cancelled_updates,
            **self.slow_updates(),
            "model_load_s": round(self.load_seconds, 3),
        }
        if self.errors is not None:
            out["committed_wer"] = self.errors.to_json()
        if self.derived is not None:
            out["segment_times"] = self.derived.to_json()
        return out


def cost_by_quarter(values: Sequence[float]) -> list[float]:
    """Means of the quarters of ``values`` by position, split as simul eval's talk cost splits a talk's
    updates (update i of n in quarter floor(4 i / n): ``simul.common.quarters.quarter_means``), so that
    the recognizer's ``cost_growth`` and a run's are comparable; fewer than four values: one mean each."""
    return quarter_means(values)


def talk_segments(
    audio: Path,
    name: str,
    segments_yaml: Path | None,
    references: Sequence[Path],
    source: Path | None,
) -> list[Segment]:
    """The reference segmentation of one recording: YAML rows (timed) or lines of --source/--ref."""
    talk = _talk_of(audio)
    if segments_yaml is not None:
        items = file_segments(audio, name, segments_yaml, references, source)
        check_spans(items)
        fitted, _ = fit_talk_segments(talk, [item.segment for item in items])
        return fitted
    if source is None:
        if references:
            raise SimulError(
                f"--ref {references[0]} without --segments: the reference lines need times on the recording, "
                "found by aligning the recognized words to the source lines; pass --source TRANSCRIPT (the "
                "recording's transcript, one line per reference line) or --segments YAML"
            )
        return []
    count = len(read_utf8_lines(source, "source transcript"))
    if count == 0:  # as simul.streams.segments.line_segments refuses it: no line, no reference segment
        raise SimulError(
            f"source transcript {source} is empty; pass the recording's transcript, one line per reference "
            "segment"
        )
    rows_from = f"the lines of {source}"
    transcripts = _aligned_lines(source, "source transcript", count, rows_from)
    translations = [_aligned_lines(path, "reference file", count, rows_from) for path in references]
    for path, lines in zip(references, translations, strict=True):
        check_translation_lengths(transcripts, lines, source, path)
    return [
        Segment(
            id=f"{name}-{line + 1}",
            line=line + 1,
            talk=talk,
            source=transcripts[line],
            reference=translations[0][line] if translations else None,
            more_references=tuple(other[line] for other in translations[1:]),
        )
        for line in range(count)
    ]


def check_translation_lengths(
    sources: Sequence[str], translations: Sequence[str], source: Path, ref: Path
) -> None:
    """Refuse a reference file whose line lengths do not follow the transcript's, as a translation's do.

    Line for line, a translation's length follows its source's: on ACL 60/60 dev (talk 2022.acl-long.110)
    the Pearson correlation of the character counts of the English and German lines is 0.95 to 0.99 over
    its first 10 to 108 lines, and -0.2 to 0.16 against the German lines of any other dev talk. Below
    :data:`MIN_LENGTH_CORRELATION` over at least :data:`MIN_LINES_JUDGED` lines the file is taken for another
    talk's (or shifted by a line), before anything is recognized.
    """
    if len(sources) < MIN_LINES_JUDGED:
        return
    a = [float(len(x)) for x in sources]
    b = [float(len(x)) for x in translations]
    if len(set(a)) < 2 or len(set(b)) < 2:
        return
    r = statistics.correlation(a, b)
    if r < MIN_LENGTH_CORRELATION:
        raise SimulError(
            f"{ref}: its line lengths do not follow those of {source} (correlation {r:.2f} over "
            f"{len(sources)} lines; a translation's is near 0.9): is it the translation of another talk, or "
            "are its lines shifted? Pass the reference file of this recording, line-aligned with --source"
        )


def talk_steps(updates: Sequence[Update], committed: Sequence[TimedWord], timing: str) -> list[fmt.Step]:
    """The stream steps of a recording's updates (see the module docstring); no steps without speech.

    ``committed`` is the loop's list of committed words after the last update: an update's committed words
    are its first ``update.committed`` (committed words are never taken back).
    """
    if not updates or not (updates[-1].committed or updates[-1].unconfirmed):
        return []  # nothing recognized in the end: no speech (words shown earlier were taken back)
    ready = emission_times(updates)
    steps: list[fmt.Step] = []
    previous_committed = 0
    committed_text = ""  # grown word by word: a step costs its new words, not the talk so far
    known = 0
    for update, ready_ms in zip(updates, ready, strict=True):
        for word in committed[known : update.committed]:
            committed_text = f"{committed_text} {word.text}" if committed_text else word.text
        known = update.committed
        rest = " ".join(w.text for w in update.unconfirmed)
        source = f"{committed_text} {rest}" if committed_text and rest else committed_text or rest
        if not source or (steps and steps[-1].source == source and not update.final):
            continue
        timed = [*committed[previous_committed : update.committed], *update.unconfirmed]
        measured = (
            {}
            if timing == "audio"
            else {
                "compute_ms": round(update.compute_ms, 1),
                "cpu_ms": round(update.cpu_ms, 1),
                "ready_ms": round(ready_ms, 1),
            }
        )
        extra: dict[str, Any] = {
            "audio_ms": round(update.audio_ms, 1),
            **measured,
            "committed_chars": len(committed_text),
            "buffer_start_ms": round(update.buffer_start_ms, 1),
            "buffer_ms": round(update.buffer_ms, 1),
            "words_from": previous_committed,
            "word_ms": [[round(w.start_ms, 1), round(w.end_ms, 1)] for w in timed],
        }
        time_ms = update.audio_ms if timing == "audio" else ready_ms
        if steps and steps[-1].source == source:  # the final update changed nothing: the last step is final
            last = steps[-1]
            steps[-1] = fmt.Step(last.source, final=True, time_ms=last.time_ms, extra=last.extra)
            break
        steps.append(fmt.Step(source, final=update.final, time_ms=time_ms, extra=extra))
        previous_committed = update.committed
    return steps


def word_times(steps: Sequence[fmt.Step]) -> list[list[tuple[float, float]]]:
    """Per step, the ``(start, end)`` talk times of every word of its source (from the steps' extras)."""
    out: list[list[tuple[float, float]]] = []
    known: list[tuple[float, float]] = []
    for step in steps:
        start = int(step.extra["words_from"])
        known = known[:start] + [(float(a), float(b)) for a, b in step.extra["word_ms"]]
        if len(known) != len(step.source.split()):
            raise SimulError(
                f"step at {step.time_ms} ms has {len(step.source.split())} words but times for {len(known)}"
            )
        out.append(list(known))
    return out


def recognize_talk(
    audio: Path,
    segments: Sequence[Segment],
    recognizer: WordRecognizer,
    options: OnlineOptions,
    names: tuple[str, str],
    src: str,
    tgt: str,
    describe: dict[str, Any],
    progress: Progress | None = None,
    behind: Callable[[FallingBehind], None] | None = None,
) -> TalkRecognition:
    """Recognize one recording as it arrives and build its long-form stream (``names``: the data set and
    the stream id). ``progress`` sees every update (count, audio heard, recording length, in ms);
    ``behind`` is told once when the recognizer falls behind the audio (:class:`KeepUpWatch`)."""
    dataset, stream_id = names
    info = audio_info(audio)
    samples: Samples = read_audio(audio)
    duration_ms = 1000.0 * len(samples) / SAMPLE_RATE
    keep_up = None if behind is None else KeepUpWatch(options, duration_ms, behind)
    count = 0

    def watch(update: Update, ready_ms: float) -> None:
        nonlocal count
        count += 1
        if progress is not None:
            progress(count, update.audio_ms, duration_ms)
        if keep_up is not None:
            keep_up(update, ready_ms)

    seen: UpdateWatch | None = watch if progress is not None or keep_up is not None else None
    updates, loop = recognize_recording(recognizer, samples, options, seen)
    steps = talk_steps(updates, loop.committed, options.timing)
    if not steps:
        raise SimulError(
            f"no speech was recognized in {audio} ({duration_ms / 1000.0:.1f} s): nothing to translate; "
            "check that the file holds speech in the --src-lang language (and try --vad none)"
        )
    check_steps(len(steps), f"talk {stream_id} (a larger --interval-ms gives fewer steps)")
    check_source(steps[-1].source, f"talk {stream_id}")
    talk = _talk_of(audio)
    derived = None
    if segments and not all(s.timed for s in segments):
        final_words = steps[-1].source.split()
        derived = derive_segment_times(
            segments,
            final_words,
            word_times(steps)[-1],
            duration_ms,
            f"recording {audio}",
            speech_mask(samples),
        )
        segments = derived.segments
    transcript = " ".join(s.source for s in segments if s.source)
    asr: dict[str, Any] = {
        **describe,
        "loop": "local-agreement-2 over a trimmed buffer (whisper_streaming)",
        "interval_ms": options.interval_ms,
        "trim": options.trim,
        "trim_after_ms": options.trim_after_ms,
        "buffer_limit_ms": options.limit_ms,
        "prompt_chars": options.prompt_chars,
        "timing": options.timing,
        "audio_file": audio.name,
        "audio_sha256": sha256_file(audio),
        "audio_rate": info.sample_rate,
        "audio_channels": info.channels,
    }
    result = TalkRecognition(
        stream=fmt.Stream.talk(
            id=stream_id,
            src=src,
            tgt=tgt,
            steps=tuple(steps),
            segments=tuple(
                fmt.Segment(s.references, s.source or None, s.offset_ms, s.duration_ms) for s in segments
            ),
            duration_ms=duration_ms,
            provenance={},
        ),
        updates=updates,
        loop=loop,
        duration_ms=duration_ms,
        derived=derived,
    )
    if transcript:
        result.errors = word_errors(transcript, steps[-1].source)
    figures = result.summary()
    kept = (
        "recognitions",
        "buffer_max_s",
        "limit_cuts",
        "forced_words",
        "trims",
        "capped_updates",
        "loops_dropped",
        *(() if options.timing == "audio" else TALK_MEASURED),
    )
    asr.update({key: figures[key] for key in kept})
    provenance: dict[str, Any] = {
        "dataset": dataset,
        "talk": talk,
        "segments": len(segments),
        **({"lines": [segments[0].line, segments[-1].line]} if segments else {}),
        **{k: v for k, v in (segments[0].provenance if segments else {}).items() if k.endswith("_file")},
        "simulated": False,
        "partials": {"source": "asr", "asr": asr},
        "time_origin": "talk_start",
    }
    if derived is not None:
        provenance["segment_times"] = derived.to_json()
    if transcript:
        provenance["transcript"] = transcript
    result.stream = replace(result.stream, provenance=provenance)
    return result

"""The long-form recognition loop (simul.streams.asr.online, .agreement, .talk) with a scripted recognizer.

The fake recognizer knows the talk's words and their times. Its audio is the sample index itself (float32
holds whole numbers exactly up to 2**24, 17 minutes at 16 kHz), so from a buffer it reads where the buffer
starts and ends on the talk's clock, and answers with the words inside it, relative to the buffer, as
Whisper with word timestamps would. A word cut by the buffer's end comes out misheard, so that
LocalAgreement has something to wait for. No wall-clock time is asserted: the loop's clock is replaced by
one the fake advances.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import UsageError
from simul.common.quarters import part_of
from simul.streams.asr import online
from simul.streams.asr.agreement import AgreementBuffer, TimedWord
from simul.streams.asr.audio import SAMPLE_RATE, Samples, write_wav
from simul.streams.asr.online import (
    OnlineOptions,
    Recognition,
    emission_times,
    recognize_recording,
)
from simul.streams.asr.schedule import Schedule, chunk_ends
from simul.streams.asr.talk import FallingBehind, KeepUpWatch, cost_by_quarter, talk_steps, word_times
from simul.streams.format import Step, Stream, read_streams, write_streams

runner = CliRunner(env={"COLUMNS": "200"})
SENTENCE = "We present a simple model. It works well on long talks."


def clock_audio(seconds: float) -> Samples:
    return np.arange(round(seconds * SAMPLE_RATE), dtype=np.float32)


def scripted_words(seconds: float, pause: tuple[float, float] | None = None) -> list[TimedWord]:
    """The talk: SENTENCE over and over, a word every 400 ms (300 ms long), nothing inside ``pause``."""
    words: list[TimedWord] = []
    vocabulary = SENTENCE.split()
    t = 200.0
    k = 0
    while t + 300.0 <= 1000.0 * seconds:
        if pause is not None and 1000.0 * pause[0] <= t < 1000.0 * pause[1]:
            t = 1000.0 * pause[1]
            continue
        words.append(TimedWord(t, t + 300.0, vocabulary[k % len(vocabulary)]))
        k += 1
        t += 400.0
    return words


@dataclass
class FakeClock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class ScriptedRecognizer:
    """Answers with the scripted words inside the buffer; costs ``base_s + per_s * buffer seconds``."""

    words_: list[TimedWord]
    clock: FakeClock = field(default_factory=FakeClock)
    base_s: float = 0.2
    per_s: float = 0.02
    agree: bool = True
    buffers_ms: list[float] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    calls: int = 0

    def words(self, samples: Samples, prompt: str) -> Recognition:
        self.calls += 1
        start_ms = 1000.0 * float(samples[0]) / SAMPLE_RATE
        end_ms = start_ms + 1000.0 * len(samples) / SAMPLE_RATE
        self.buffers_ms.append(end_ms - start_ms)
        self.prompts.append(prompt)
        self.clock.now += self.base_s + self.per_s * (end_ms - start_ms) / 1000.0
        inside = [w for w in self.words_ if w.end_ms > start_ms and w.start_ms < end_ms]
        if not inside:
            return Recognition((), (), heard=False)
        out: list[TimedWord] = []
        for word in inside:
            text = word.text
            if word.end_ms > end_ms:  # cut by the buffer's end: misheard
                text = text[: max(1, len(text) // 2)] + "-"
            if not self.agree:
                text = f"{text}{self.calls}"
            out.append(
                TimedWord(max(0.0, word.start_ms - start_ms), min(end_ms, word.end_ms) - start_ms, text)
            )
        ends = tuple(w.end_ms for w in out if w.text.endswith("."))
        return Recognition(tuple(out), (*ends, out[-1].end_ms))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr("simul.streams.asr.online.time.perf_counter", fake)
    return fake


def committed_text(loop: online.OnlineRecognizer) -> str:
    return " ".join(w.text for w in loop.committed)


# --- LocalAgreement-2 ----------------------------------------------------------------------------------


def test_agreement_commits_the_common_prefix_of_two_recognitions() -> None:
    buffer = AgreementBuffer()
    first = [TimedWord(0, 300, "Hello,"), TimedWord(400, 700, "this"), TimedWord(800, 900, "iz")]
    buffer.insert(first)
    assert buffer.flush() == []  # nothing to agree with yet
    second = [TimedWord(0, 300, "hello"), TimedWord(400, 700, "this"), TimedWord(800, 1100, "is.")]
    buffer.insert(second)
    committed = buffer.flush()
    assert [w.text for w in committed] == ["hello", "this"]  # case and punctuation do not matter
    assert [w.text for w in buffer.unconfirmed] == ["is."]
    assert buffer.last_committed_end_ms == 700


def test_agreement_drops_old_words_and_a_repeat_of_the_committed_tail() -> None:
    buffer = AgreementBuffer()
    for _ in range(2):
        buffer.insert([TimedWord(0, 300, "thank"), TimedWord(400, 700, "you")])
        buffer.flush()
    assert [w.text for w in buffer.committed_in_buffer] == ["thank", "you"]
    # the next recognition starts with the committed words again, then goes on
    dropped = buffer.insert(
        [TimedWord(720, 900, "thank"), TimedWord(900, 1000, "you"), TimedWord(1100, 1400, "all")]
    )
    assert dropped == 2
    buffer.flush()
    assert [w.text for w in buffer.unconfirmed] == ["all"]
    # words that start before the committed end (minus 100 ms) are old audio
    buffer.insert([TimedWord(500, 650, "you"), TimedWord(1100, 1400, "all")])
    assert [w.text for w in buffer.flush()] == ["all"]


def test_force_commits_what_ends_before_the_cut_and_drops_what_straddles_it() -> None:
    buffer = AgreementBuffer()
    buffer.insert([TimedWord(0, 300, "a"), TimedWord(400, 700, "b"), TimedWord(800, 1100, "c")])
    buffer.flush()
    forced = buffer.force(900.0)
    assert [w.text for w in forced] == ["a", "b"] and buffer.unconfirmed == []
    assert buffer.last_committed_end_ms == 900.0


# --- the loop ------------------------------------------------------------------------------------------


def test_a_ten_minute_talk_keeps_its_buffer_and_cost_bounded(clock: FakeClock) -> None:
    words = scripted_words(600)
    recognizer = ScriptedRecognizer(words, clock)
    updates, loop = recognize_recording(recognizer, clock_audio(600), OnlineOptions())
    assert len(updates) == 601 and updates[-1].final  # 600 chunk ends, then the final update
    # every word of the talk is committed once, in order, none dropped or repeated
    assert committed_text(loop) == " ".join(w.text for w in words)
    assert max(recognizer.buffers_ms) <= OnlineOptions().limit_ms
    assert max(recognizer.buffers_ms) <= 16_000  # trimmed at segment ends once past 15 s
    assert loop.limit_cuts == 0 and loop.forced_words == 0 and loop.trims["segment"] > 30
    # the work per update does not grow along the talk: the mean buffer per quarter is flat
    quarters = cost_by_quarter(recognizer.buffers_ms[15:])
    assert max(quarters) <= 1.2 * min(quarters)
    costs = cost_by_quarter([u.compute_ms for u in updates[15:-1]])
    assert costs[-1] <= 1.2 * costs[0]


def test_the_prompt_is_committed_text_that_left_the_buffer(clock: FakeClock) -> None:
    words = scripted_words(60)
    recognizer = ScriptedRecognizer(words, clock)
    _, loop = recognize_recording(recognizer, clock_audio(60), OnlineOptions())
    prompts = [p for p in recognizer.prompts if p]
    assert prompts, "the buffer was never trimmed"
    final = committed_text(loop)
    for prompt in prompts:
        assert prompt in final and len(prompt) <= 200 + max(len(w.text) for w in words) + 1
    assert recognizer.prompts[0] == ""


def test_sentence_trimming_cuts_at_a_committed_sentence_end(clock: FakeClock) -> None:
    recognizer = ScriptedRecognizer(scripted_words(120), clock)
    updates, loop = recognize_recording(recognizer, clock_audio(120), OnlineOptions(trim="sentence"))
    assert loop.trims.get("sentence", 0) > 0 and max(recognizer.buffers_ms) <= 16_000
    for before, after in itertools.pairwise(updates):
        if after.buffer_start_ms > before.buffer_start_ms and before.trimmed == "sentence":
            cut = after.buffer_start_ms
            ended = [w for w in loop.committed[: before.committed] if abs(w.end_ms - cut) < 1.0]
            assert ended and ended[-1].text.endswith(".")


def test_silence_in_the_middle_is_dropped_not_recognized(clock: FakeClock) -> None:
    words = scripted_words(70, pause=(20.0, 50.0))
    recognizer = ScriptedRecognizer(words, clock)
    updates, loop = recognize_recording(recognizer, clock_audio(70), OnlineOptions())
    assert committed_text(loop) == " ".join(w.text for w in words)
    silent = [u for u in updates if 24_000 <= u.audio_ms <= 50_000]
    assert silent and all(not u.heard for u in silent)  # Whisper does not run on silence
    assert max(u.buffer_ms for u in silent[1:]) <= 2000  # and the silence is cut away
    assert loop.trims["silence"] >= 20


def test_a_recognizer_that_never_agrees_hits_the_limit_and_is_cut(clock: FakeClock) -> None:
    recognizer = ScriptedRecognizer(scripted_words(90), clock, agree=False)
    options = OnlineOptions(trim_after_ms=8000, limit_ms=12_000)
    updates, loop = recognize_recording(recognizer, clock_audio(90), options)
    assert max(recognizer.buffers_ms) <= 12_000
    assert loop.limit_cuts > 0 and loop.forced_words > 0
    assert all(u.buffer_ms <= 12_000 for u in updates)


def test_online_timing_takes_all_audio_that_arrived_while_the_previous_update_ran(clock: FakeClock) -> None:
    recognizer = ScriptedRecognizer(scripted_words(60), clock, base_s=1.6)  # slower than real time
    updates, _ = recognize_recording(recognizer, clock_audio(60), OnlineOptions(timing="online"))
    ready = 0.0
    for update in updates[:-2]:  # (the last recognition hears the end of the recording, whenever it runs)
        assert update.audio_ms >= ready - 1e-6  # never behind: it took what arrived while the last one ran
        ready = max(ready, update.audio_ms) + update.compute_ms
    assert len(updates) - 1 < 60 / 1.6 + 2  # fewer, larger chunks than the fixed schedule's 60
    fixed, _ = recognize_recording(
        ScriptedRecognizer(scripted_words(60), clock, base_s=1.6),
        clock_audio(60),
        OnlineOptions(timing="measured"),
    )
    assert len(fixed) == 61 and emission_times(fixed)[-1] > 60_000 + 30_000  # the fixed schedule falls behind


def test_auto_timing_is_the_fixed_schedule_while_the_recognizer_keeps_up(clock: FakeClock) -> None:
    auto, auto_loop = recognize_recording(
        ScriptedRecognizer(scripted_words(60), clock), clock_audio(60), OnlineOptions(timing="auto")
    )
    fixed, fixed_loop = recognize_recording(
        ScriptedRecognizer(scripted_words(60), clock), clock_audio(60), OnlineOptions(timing="measured")
    )
    assert auto_loop.late_updates == 0 and fixed_loop.late_updates == 0
    assert [(u.audio_ms, u.committed, u.unconfirmed) for u in auto] == [
        (u.audio_ms, u.committed, u.unconfirmed) for u in fixed
    ]
    assert committed_text(auto_loop) == committed_text(fixed_loop)


@pytest.mark.parametrize("base_s", [1.3, 1.6, 3.0])
def test_auto_timing_keeps_the_lag_bounded_where_the_fixed_schedule_cannot(
    clock: FakeClock, base_s: float
) -> None:
    words = scripted_words(120)
    auto, loop = recognize_recording(
        ScriptedRecognizer(words, clock, base_s=base_s), clock_audio(120), OnlineOptions(timing="auto")
    )
    ready = emission_times(auto)
    slowest = max(u.compute_ms for u in auto)
    # never more than one update behind: each update started at most one update's compute after its audio
    assert all(r - u.audio_ms <= 2 * slowest + 1e-6 for r, u in zip(ready, auto, strict=True))
    # the final result one update's compute after the end: a late update that the end overtook was stopped
    assert ready[-1] - 120_000 <= slowest + 1e-6
    assert loop.late_updates > 0 and loop.cancelled_updates <= 1
    assert committed_text(loop) == " ".join(w.text for w in words)  # no word lost to the larger chunks
    fixed, _ = recognize_recording(
        ScriptedRecognizer(words, clock, base_s=base_s), clock_audio(120), OnlineOptions(timing="measured")
    )
    assert emission_times(fixed)[-1] - 120_000 > 10 * (ready[-1] - 120_000)


def test_a_late_update_the_end_overtakes_is_stopped_and_changes_nothing_else(clock: FakeClock) -> None:
    """About 2.5 s of compute per update on 10.5 s of audio: the updates start late from the second on
    (at 1.0, 3.5, 6.1 and 8.7 s), and the one from 8.7 s would be ready after the audio ended; it is
    stopped at the end, and the final update hears all the audio at once. No word is lost."""
    words = scripted_words(10)
    recognizer = ScriptedRecognizer(words, clock, base_s=2.5)
    updates, loop = recognize_recording(recognizer, clock_audio(10.5), OnlineOptions(timing="auto"))
    ready = emission_times(updates)
    assert loop.cancelled_updates == 1
    assert ready[-1] - 10_500 <= max(u.compute_ms for u in updates) + 1e-6
    assert [u.audio_ms for u in updates[:-1]] == sorted({u.audio_ms for u in updates[:-1]})
    assert committed_text(loop) == " ".join(w.text for w in words)


@pytest.mark.parametrize("timing", ["auto", "measured", "audio", "online"])
@pytest.mark.parametrize("interval_ms", [0.01, 333.3, 1000.0, 7000.0])
def test_every_schedule_moves_forward_and_ends_at_the_last_sample(timing: str, interval_ms: float) -> None:
    samples = 16_000 * 3 + 7
    plan = Schedule(timing, samples, interval_ms, 16_000)
    heard, ready, ends = 0, 0.0, []
    while heard < samples:
        end = plan.next_end(heard, ready)
        assert heard < end <= samples
        ends.append(end)
        heard = end
        ready = 1000.0 * heard / 16_000 + (1500.0 if timing in ("auto", "online") else 10.0)
    assert ends[-1] == samples
    if timing in ("measured", "audio"):
        assert len(ends) <= len(chunk_ends(1000.0 * samples / 16_000, interval_ms))


def test_falling_behind_is_said_once_with_the_options_that_help(clock: FakeClock) -> None:
    events: list[FallingBehind] = []
    options = OnlineOptions(timing="measured")
    watch = KeepUpWatch(options, 60_000.0, events.append)
    recognize_recording(
        ScriptedRecognizer(scripted_words(60), clock, base_s=1.6), clock_audio(60), options, watch
    )
    assert len(events) == 1
    event = events[0]
    assert event.real_time_factor > 1 and event.lag_ms > 2000
    message = event.message()
    assert "--interval-ms" in message and "--timing auto" in message and "--asr-model" in message
    assert "after the audio ends" in message
    auto = FallingBehind(3, 3000.0, 2500.0, 1.8, 60_000.0, "auto").message()
    assert "depends on this machine's speed" in auto and "--timing measured" in auto
    quiet: list[FallingBehind] = []
    recognize_recording(
        ScriptedRecognizer(scripted_words(60), clock),
        clock_audio(60),
        options,
        KeepUpWatch(options, 60_000.0, quiet.append),
    )
    assert quiet == []  # a recognizer that keeps up is not told anything


def test_chunk_ends_and_emission_times() -> None:
    assert chunk_ends(3500, 1000) == [1000, 2000, 3000, 3500]
    assert chunk_ends(3000, 1000) == [1000, 2000, 3000]
    assert cost_by_quarter([1, 1, 2, 2, 3, 3, 4, 4]) == [1, 2, 3, 4]
    # 5 updates split 2,1,1,1 as simul eval's talk cost splits a talk's updates (floor(4 i / n))
    assert cost_by_quarter([1, 3, 3, 4, 5]) == [2, 3, 4, 5]
    assert [part_of(i, 5) for i in range(5)] == [0, 0, 1, 2, 3]
    assert cost_by_quarter([7, 9]) == [7, 9]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (OnlineOptions(limit_ms=31_000), "at most 29"),
        (OnlineOptions(trim_after_ms=26_000), "at most --buffer-limit-s"),
        (OnlineOptions(interval_ms=30_000, limit_ms=20_000), "shorter than --buffer-limit-s"),
        (OnlineOptions(trim="words"), "unknown --trim"),
    ],
)
def test_options_are_checked(options: OnlineOptions, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        options.check()


# --- steps ---------------------------------------------------------------------------------------------


def test_steps_hold_committed_text_unconfirmed_rest_and_word_times(clock: FakeClock, tmp_path: Path) -> None:
    words = scripted_words(40)
    updates, loop = recognize_recording(ScriptedRecognizer(words, clock), clock_audio(40), OnlineOptions())
    steps = talk_steps(updates, loop.committed, "measured")
    assert steps[-1].final and not any(s.final for s in steps[:-1])
    assert steps[-1].source == " ".join(w.text for w in words)
    committed = [s.source[: s.extra["committed_chars"]] for s in steps]
    for before, after, step in zip(committed, committed[1:], steps[1:], strict=False):
        assert after.startswith(before)  # committed text is never revised
        assert step.source.startswith(after)
    times = [s.time_ms for s in steps]
    assert times == sorted(times)  # type: ignore[type-var]
    assert all(s.time_ms == s.extra["ready_ms"] and s.extra["ready_ms"] >= s.extra["audio_ms"] for s in steps)
    by_audio = talk_steps(updates, loop.committed, "audio")
    assert [s.extra["audio_ms"] for s in by_audio] == [s.time_ms for s in by_audio]
    # timed by the audio, a step holds nothing measured on the machine
    assert not any({"compute_ms", "cpu_ms", "ready_ms"} & s.extra.keys() for s in by_audio)
    assert [(s.source, s.extra["word_ms"]) for s in by_audio] == [
        (s.source, s.extra["word_ms"]) for s in steps
    ]
    # every word's time, put together from the steps, is the scripted time of that word
    final_times = word_times(steps)[-1]
    assert final_times == [(w.start_ms, w.end_ms) for w in words]
    # a step carries the times of its changed words only: the stream stays small
    assert max(len(s.extra["word_ms"]) for s in steps) < 40
    talk = Stream.talk("t", "en", "de", tuple(steps), (), duration_ms=40_000.0)
    path = tmp_path / "t.jsonl"
    write_streams(path, [talk])
    assert read_streams(path)[0].steps == talk.steps
    assert json.loads(path.read_text(encoding="utf-8"))["version"] == 3


def test_no_speech_gives_no_steps(clock: FakeClock) -> None:
    updates, loop = recognize_recording(ScriptedRecognizer([], clock), clock_audio(5), OnlineOptions())
    assert updates[-1].final and talk_steps(updates, loop.committed, "measured") == []


def test_word_times_refuse_steps_that_do_not_match() -> None:
    step = Step("a b c", True, 1000.0, {"words_from": 0, "word_ms": [[0, 1]]})
    with pytest.raises(Exception, match="3 words but times for 1"):
        word_times([step])


# --- the command line (refusals before any model is loaded) --------------------------------------------


def _asr(tmp_path: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(
        app, ["streams", "asr", "--tgt-lang", "de", "-o", str(tmp_path / "o.jsonl"), *args]
    )
    return result.exit_code, " ".join(result.output.split())


@pytest.fixture
def tone(tmp_path: Path) -> Path:
    path = tmp_path / "talk.wav"
    write_wav(path, 0.1 * np.sin(np.arange(SAMPLE_RATE) / 5.0))
    return path


def test_the_loop_options_belong_to_audio_longform(tmp_path: Path, tone: Path) -> None:
    code, out = _asr(tmp_path, "--audio", str(tone), "--trim", "sentence")
    assert code == 2 and "only apply with --audio --longform: --trim" in out
    code, out = _asr(tmp_path, "--audio", str(tone), "--asr-tokens-per-s", "5", "--asr-seek-again")
    assert code == 2 and "only apply with --audio --longform: --asr-tokens-per-s, --asr-seek-again" in out
    code, out = _asr(tmp_path, "--audio", str(tone), "--longform", "--stable", "local-agreement")
    assert code == 2 and "--stable" in out and "LocalAgreement-2" in out
    code, out = _asr(tmp_path, "--audio", str(tone), "--longform", "--asr-window", "padded", "--limit", "2")
    assert code == 2 and "--asr-window" in out and "--limit" in out
    code, out = _asr(tmp_path, "--audio", str(tone), "--longform", "--buffer-limit-s", "40")
    assert code == 2 and "at most 29" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "holds no samples"), (b"RIFF\x00\x00garbage" * 50, "cannot read audio file")],
)
def test_empty_and_corrupt_audio_are_errors_naming_the_file(
    tmp_path: Path, content: bytes, message: str
) -> None:
    bad = tmp_path / "bad.wav"
    if content:
        bad.write_bytes(content)
    else:
        write_wav(bad, np.zeros(0, dtype=np.float32))
    code, out = _asr(tmp_path, "--audio", str(bad), "--longform")
    assert code == 1 and message in out and "bad.wav" in out
    assert not (tmp_path / "o.jsonl").exists()


def test_the_unaware_times_tool_takes_the_audio_heard(tmp_path: Path) -> None:
    from tests.helpers import load_tool

    tool = load_tool("asr_unaware_times")
    stream = Stream(
        "s-1",
        "en",
        "de",
        (
            Step("hello", False, 700.0, {"audio_ms": 500.0, "compute_ms": 200.0}),
            Step("hello there", True, 1300.0, {"audio_ms": 1000.0, "compute_ms": 300.0}),
        ),
        reference="hallo",
    )
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_streams(source, [stream])
    assert tool.main([str(source), str(out)]) == 0
    steps = read_streams(out)[0].steps
    assert [s.time_ms for s in steps] == [500.0, 1000.0]
    assert [s.extra["measured_time_ms"] for s in steps] == [700.0, 1300.0]
    untimed = Stream("u", "en", "de", (Step("hello", True),), reference="hallo")
    write_streams(source, [untimed])
    assert tool.main([str(source), str(out)]) == 1


def test_reference_segments_from_lines_or_none(tmp_path: Path, tone: Path) -> None:
    from simul.common.errors import SimulError
    from simul.streams.asr.talk import talk_segments

    en, de = tmp_path / "t.en", tmp_path / "t.de"
    en.write_text("Hello there.\nGood bye.\n", encoding="utf-8")
    de.write_text("Hallo.\nTschüss.\n", encoding="utf-8")
    segments = talk_segments(tone, "t", None, [de], en)
    assert [(s.source, s.reference, s.offset_ms) for s in segments] == [
        ("Hello there.", "Hallo.", None),
        ("Good bye.", "Tschüss.", None),
    ]
    assert talk_segments(tone, "t", None, [], None) == []
    de.write_text("Hallo.\n", encoding="utf-8")
    with pytest.raises(SimulError, match=r"t\.de has 1 lines but there are 2 segments"):
        talk_segments(tone, "t", None, [de], en)


def test_timed_words_lose_their_loops() -> None:
    from simul.streams.asr.recognizer import collapse_loops, loop_free

    texts = ["Thank", "you.", "Thank", "you.", "Thank", "you.", "Bye"]
    words = [TimedWord(100.0 * i, 100.0 * i + 80, text) for i, text in enumerate(texts)]
    kept = loop_free(words)
    assert [w.text for w in kept] == ["Thank", "you.", "Bye"] and kept[0].start_ms == 400.0
    assert collapse_loops(" ".join(texts)) == "Thank you. Bye"


class StandInWhisper:
    """faster-whisper's WhisperModel as far as WhisperRecognizer.words uses it: ``transcribe``, and the split
    and time precision that recognizer.decoded_once replaces while ``transcribe`` runs."""

    time_precision = 0.02

    def __init__(self, transcribe: Any) -> None:
        self.transcribe = transcribe

    def _split_segments_by_timestamps(self, **kwargs: Any) -> tuple[list[Any], int, bool]:
        return [], 0, False


def test_whisper_words_are_timed_in_ms_without_punctuation_loops() -> None:
    """WhisperRecognizer.words over faster-whisper's transcribe output (a stand-in model: no weights)."""
    from types import SimpleNamespace

    from simul.streams.asr.recognizer import RecognizerOptions, WhisperRecognizer

    calls: list[dict[str, Any]] = []

    def transcribe(audio: Samples, **kwargs: Any) -> tuple[list[Any], None]:
        calls.append(kwargs)
        spoken = [(0.2, 0.5, " Thank"), (0.5, 0.8, " you."), (1.0, 1.1, " by")]
        dots = [(1.1 + 0.01 * i, 1.11 + 0.01 * i, " .") for i in range(400)]
        words = [SimpleNamespace(start=a, end=b, word=w) for a, b, w in spoken + dots]
        return [SimpleNamespace(end=0.8, words=words[:2]), SimpleNamespace(end=5.1, words=words[2:])], None

    recognizer = WhisperRecognizer.__new__(WhisperRecognizer)
    recognizer.options = RecognizerOptions(vad="none")
    recognizer._model = StandInWhisper(transcribe)
    out = recognizer.words(np.zeros(SAMPLE_RATE * 6, dtype=np.float32), "earlier words")
    assert [(w.start_ms, w.end_ms, w.text) for w in out.words] == [
        (200.0, 500.0, "Thank"),
        (500.0, 800.0, "you."),
        (1000.0, 1100.0, "by"),
    ]
    assert out.segment_ends_ms == (800.0, 5100.0) and out.heard
    assert calls[0]["initial_prompt"] == "earlier words" and calls[0]["word_timestamps"] is True
    assert calls[0]["temperature"] == 0.0 and calls[0]["vad_filter"] is False
    assert recognizer.words(np.zeros(0, dtype=np.float32), "") == Recognition((), (), heard=False)


def test_each_update_is_bounded_at_the_source() -> None:
    """The long-form decoding options reach faster-whisper: a token cap in proportion to the buffer, the
    n-gram and repetition penalties; a segment that compresses like a loop is dropped and counted."""
    from types import SimpleNamespace

    from simul.streams.asr.recognizer import DecodingBounds, RecognizerOptions, WhisperRecognizer

    calls: list[dict[str, Any]] = []

    def transcribe(audio: Samples, **kwargs: Any) -> tuple[list[Any], None]:
        calls.append(kwargs)
        said = SimpleNamespace(start=0.2, end=0.5, word=" Hello")
        loop = [SimpleNamespace(start=0.6 + 0.1 * k, end=0.65 + 0.1 * k, word=" so") for k in range(3)]
        return [
            SimpleNamespace(end=0.5, words=[said], tokens=[1] * 30, compression_ratio=1.1),
            SimpleNamespace(end=0.9, words=loop, tokens=[2] * 40, compression_ratio=6.0),
        ], None

    recognizer = WhisperRecognizer.__new__(WhisperRecognizer)
    recognizer.options = RecognizerOptions(vad="none")
    recognizer._model = StandInWhisper(transcribe)
    six_seconds = np.zeros(SAMPLE_RATE * 6, dtype=np.float32)
    out = recognizer.words(six_seconds, "")  # the default bounds: 10 tokens a second + 10
    assert calls[-1]["max_new_tokens"] == 70 and calls[-1]["compression_ratio_threshold"] is None
    assert calls[-1]["no_repeat_ngram_size"] == 0 and calls[-1]["repetition_penalty"] == 1.0
    assert out.capped and out.loops_dropped == 0 and [w.text for w in out.words] == ["Hello", "so"]
    recognizer.bounds = DecodingBounds(
        tokens_per_s=20, no_repeat_ngram_size=5, repetition_penalty=1.1, compression_ratio=2.4
    )
    out = recognizer.words(six_seconds, "")
    assert calls[-1]["max_new_tokens"] == 130 and not out.capped
    assert calls[-1]["no_repeat_ngram_size"] == 5 and calls[-1]["repetition_penalty"] == 1.1
    assert out.loops_dropped == 1 and [w.text for w in out.words] == ["Hello"]
    assert out.segment_ends_ms == (500.0,)
    recognizer.bounds = DecodingBounds(tokens_per_s=0)
    assert not recognizer.words(six_seconds, "").capped and calls[-1]["max_new_tokens"] is None
    assert DecodingBounds().max_new_tokens(25_000) == 220  # Whisper's decoder leaves the prompt 223 of 448
    with pytest.raises(UsageError, match="--asr-compression-ratio must be above 1"):
        DecodingBounds(compression_ratio=0.5).check()


def test_the_summary_shows_the_slowest_updates_and_how_many_ran_away(clock: FakeClock) -> None:
    from simul.streams.asr.talk import TalkRecognition

    class Stalling(ScriptedRecognizer):
        """Every 7th recognition in the second half takes 4 s more (a loop), and says it hit the cap."""

        def words(self, samples: Samples, prompt: str) -> Recognition:
            out = super().words(samples, prompt)
            if self.calls > 30 and self.calls % 7 == 0:
                self.clock.now += 4.0
                return Recognition(out.words, out.segment_ends_ms, out.heard, capped=True)
            return out

    updates, loop = recognize_recording(
        Stalling(scripted_words(60), clock), clock_audio(60), OnlineOptions(timing="measured")
    )
    steps = talk_steps(updates, loop.committed, "measured")
    talk = Stream.talk("t", "en", "de", tuple(steps), (), duration_ms=60_000.0)
    summary = TalkRecognition(talk, updates, loop, 60_000.0).summary()
    stalled = [k + 1 for k in range(60) if k + 1 > 30 and (k + 1) % 7 == 0]
    assert summary["updates_over_2x_median"] == len(stalled) == summary["capped_updates"]
    assert summary["updates_over_1500ms_by_half"] == [0, len(stalled)]
    slowest = summary["slowest_updates"]
    assert stalled == [35, 42, 49, 56] and len(slowest) == 5
    assert {s["update"] for s in slowest[:4]} == set(stalled)
    assert all(s["capped"] and s["compute_ms"] > 4000 for s in slowest[:4])
    assert not slowest[4]["capped"] and slowest[4]["compute_ms"] < 1000
    assert [s["compute_ms"] for s in slowest] == sorted((s["compute_ms"] for s in slowest), reverse=True)
    assert 200 < summary["update_ms_median"] < 1000 and summary["loops_dropped"] == 0


def test_each_buffer_is_decoded_once() -> None:
    """recognizer.one_window over faster-whisper's own split (stand-in tokens, no weights): a window whose
    output does not close its last segment ends there, instead of seeking back to the last timestamp
    (faster-whisper's second encoder and decoder pass); its segments are faster-whisper's."""
    from functools import partial
    from types import SimpleNamespace

    transcribe_module = pytest.importorskip("faster_whisper.transcribe")
    from simul.streams.asr.recognizer import one_window

    model = SimpleNamespace(time_precision=0.02, input_stride=2)
    split = partial(transcribe_module.WhisperModel._split_segments_by_timestamps, model)
    once = one_window(split)
    tokenizer = SimpleNamespace(timestamp_begin=1000, eot=999)
    window = dict(tokenizer=tokenizer, time_offset=0.0, segment_size=500, segment_duration=5.0, seek=0)

    def at(seconds: float) -> int:
        return 1000 + round(seconds / 0.02)

    running = [at(0.0), 1, 2, at(1.0), at(1.0), 3, 4]  # "1 2" closed at 1 s, "3 4" still running
    opened = [at(0.0), 1, 2, at(1.0), at(1.0)]  # Whisper opened a segment at 1 s and stopped
    capped = [at(0.0), 1, 2]  # no pair at all (the token cap)
    for tokens in (running, opened, capped):
        segments, _, closed = split(tokens=tokens, **window)
        assert not closed  # faster-whisper decodes again from the last timestamp or word end
        assert once(tokens=tokens, **window) == (segments, 500, True)  # the same segments, the window ends
    assert [s["tokens"] for s in split(tokens=running, **window)[0]] == [running[:4]]
    assert split(tokens=running, **window)[1] == 100  # faster-whisper's seek: back to 1 s (100 frames)
    whole = [at(0.0), 1, 2, at(1.0), at(1.0), 3, at(2.0)]  # every segment closed: as faster-whisper splits
    assert once(tokens=whole, **window) == split(tokens=whole, **window)


def test_the_one_pass_split_is_in_place_only_while_transcribing() -> None:
    """words() replaces the model's split while transcribe runs, and puts it back; --asr-seek-again (the
    bounds' seek_again) leaves faster-whisper's own."""
    from simul.streams.asr.recognizer import DecodingBounds, RecognizerOptions, WhisperRecognizer

    seen: list[bool] = []

    def transcribe(audio: Samples, **kwargs: Any) -> tuple[list[Any], None]:
        seen.append("_split_segments_by_timestamps" in vars(model))  # the class's split, shadowed
        return [], None

    model = StandInWhisper(transcribe)
    recognizer = WhisperRecognizer.__new__(WhisperRecognizer)
    recognizer.options = RecognizerOptions(vad="none")
    recognizer._model = model
    second = np.zeros(SAMPLE_RATE, dtype=np.float32)
    recognizer.words(second, "")
    recognizer.bounds = DecodingBounds(seek_again=True)
    recognizer.words(second, "")
    assert seen == [True, False] and "_split_segments_by_timestamps" not in vars(model)

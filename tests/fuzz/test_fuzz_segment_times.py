"""The segment times of a recognized talk under fire: the reference lines' offsets and durations derived from
the recognizer's timed words (simul.streams.asr.segment_times) when no segment YAML gives them.

1. The derivation itself (:func:`derive_segment_times`), on generated talks: lines heard as written,
   misheard, not heard at all, replaced by another talk's words, or a recording of silence; word times in
   order or rough as Whisper's (overlapping, a first word timed into the pause before it, words past the
   recording's end); with and without a speech mask.
2. The whole command, `simul streams asr --audio FILE --longform --source EN --ref DE --json`, on the
   12-line ACL 60/60 talk recognized by the scripted recognizer (tests/fuzz/speech.py): source lines that
   match nothing that was heard, a transcript or a reference file of another talk (its lines shifted), a
   recording of silence, and speech masks that leave lines without speech.

Properties: the derivation either refuses a transcript that is not the recording's (an error naming the
recording and saying to pass the right --source), or gives every line a span in order, inside the
recording, that a long-form stream accepts, with counts that add up; the command (tests/fuzz/cli.py) ends
with a documented exit code and no traceback, an error names one of its files and says how to fix it and
leaves no stream file behind, and what it writes is what its JSON summary says.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simul.common.errors import SimulError
from simul.streams import format as fmt
from simul.streams.asr.audio import FRAME_MS
from simul.streams.asr.segment_times import MIN_MATCHED_SHARE, MIN_WORDS_JUDGED, derive_segment_times
from simul.streams.format import read_streams
from simul.streams.segments import Segment
from tests.fuzz.budget import examples, scratch, tried
from tests.fuzz.cli import check, invoke, leftovers, strict_json
from tests.fuzz.mutate import hostile_text
from tests.fuzz.speech import recognizing, spoken, talk, write_recording

WHERE = "recording talk.wav"
VOCABULARY = (
    "the",
    "model",
    "parses",
    "online",
    "we",
    "present",
    "a",
    "graph",
    "of",
    "nodes",
    "and",
    "programs",
    "user",
    "system",
    "semantic",
)
OTHER_TALK = (
    "thank",
    "you",
    "for",
    "listening",
    "questions",
    "are",
    "welcome",
    "after",
    "the",
    "break",
    "in",
    "room",
    "seven",
)
ROUNDING_MS = 0.11  # offsets and durations are rounded to 0.1 ms apiece

word = st.one_of(
    st.sampled_from(VOCABULARY),
    st.sampled_from(["task-oriented", "Hello,", "works.", "...", "—", "2022", "naïve", "日本"]),
    hostile_text.filter(lambda s: s.split() != []).map(lambda s: s.split()[0]),
)


# reference lines, the recognized words and their times, the recording's length, the speech mask, how heard
Talk = tuple[list[Segment], list[str], list[tuple[float, float]], float, Any, str]


@st.composite
def talks(draw: st.DrawFn) -> Talk:
    """Reference lines, what the recognizer heard of them (words and times), the recording's length, a
    speech mask (or None), and how the lines were heard."""
    count = draw(st.integers(1, 12))
    sources = [" ".join(draw(st.lists(word, min_size=1, max_size=8))) for _ in range(count)]
    segments = [
        Segment(id=f"t-{k}", line=k, talk="t", source=text, reference=f"ref {k}")
        for k, text in enumerate(sources, start=1)
    ]
    heard = draw(st.sampled_from(["as written", "per line", "another talk", "silence"]))
    words: list[str] = []
    if heard == "as written":
        words = [w for text in sources for w in text.split()]
    elif heard == "per line":
        for text in sources:
            how = draw(st.sampled_from(["said", "misheard", "unheard", "other"]))
            line = text.split()
            if how == "misheard":
                line = [draw(word) if draw(st.integers(0, 2)) == 0 else w for w in line]
            elif how == "unheard":
                line = []
            elif how == "other":
                line = draw(st.lists(st.sampled_from(OTHER_TALK), min_size=1, max_size=6))
            words += line
    elif heard == "another talk":
        words = draw(st.lists(st.sampled_from(OTHER_TALK), min_size=1, max_size=60))
    times: list[tuple[float, float]] = []
    t = draw(st.floats(0, 2000))
    for _ in words:
        gap = draw(st.sampled_from([0.0, 100.0, 400.0, 1500.0, 5000.0]))
        length = draw(st.sampled_from([0.0, 20.0, 300.0, 900.0]))
        start = t + gap
        if times and draw(st.integers(0, 5)) == 0:  # rough: starts before the previous word ends
            start = max(0.0, times[-1][1] - draw(st.floats(0, 800)))
        times.append((start, start + length))
        t = max(t, start + length)
    end = max((b for _, b in times), default=0.0)
    duration = max(1.0, draw(st.sampled_from([end + 500.0, end + 10_000.0, end * 0.8, end])))
    speech = None
    if draw(st.booleans()):
        frames = math.ceil(duration / FRAME_MS) + draw(st.integers(-5, 5))
        mask = np.zeros(max(0, frames), dtype=bool)
        for _ in range(draw(st.integers(0, 4))):
            a = draw(st.integers(0, max(0, frames)))
            mask[a : a + draw(st.integers(1, 400))] = True
        speech = mask
    return segments, words, times, duration, speech, heard


@settings(max_examples=examples(100))
@given(case=talks())
def test_derived_segment_times(case: Talk) -> None:
    segments, words, times, duration, speech, heard = case
    tried("segment times: derived")
    source_words = sum(len(s.source.split()) for s in segments)
    try:
        derived = derive_segment_times(segments, words, times, duration, WHERE, speech)
    except SimulError as exc:
        message = str(exc)
        assert message.startswith(WHERE) and "--source" in message, message
        found = re.search(r"only (\d+) of the (\d+) source words match", message)
        assert found is not None, message
        matched, total = int(found.group(1)), int(found.group(2))
        assert total == source_words >= MIN_WORDS_JUDGED and matched < MIN_MATCHED_SHARE * total, message
        return
    assert [s.id for s in derived.segments] == [s.id for s in segments]
    assert [s.source for s in derived.segments] == [s.source for s in segments]
    previous_end = 0.0
    for segment in derived.segments:
        assert segment.offset_ms is not None and segment.duration_ms is not None
        assert math.isfinite(segment.offset_ms) and math.isfinite(segment.duration_ms)
        assert segment.offset_ms >= 0 and segment.duration_ms >= 0
        assert segment.offset_ms >= previous_end - ROUNDING_MS, derived.segments
        previous_end = segment.offset_ms + segment.duration_ms
        assert previous_end <= duration + ROUNDING_MS, (previous_end, duration)
    assert derived.source_words == source_words and derived.recognized_words == len(words)
    assert 0 <= derived.matched_words <= derived.placed_words <= len(words)
    assert derived.matched_words <= source_words
    lines = [s.line for s in segments]
    assert derived.interpolated == sorted(set(derived.interpolated)) and set(derived.interpolated) <= set(
        lines
    )
    if not words:  # a recording of silence: nothing places any line
        assert derived.interpolated == lines
    if heard == "as written":  # every word heard, in order: every line placed by its own words
        assert derived.interpolated == [] and derived.matched_words == derived.placed_words == source_words
    record = json.loads(json.dumps(derived.to_json(), allow_nan=False))
    assert record["interpolated_segments"] == len(derived.interpolated)
    # what recognize_talk builds next: the long-form stream must accept the derived segments
    fmt.Stream.talk(
        id="t",
        src="en",
        tgt="de",
        steps=(fmt.Step("x", final=True, time_ms=0.0),),
        segments=tuple(
            fmt.Segment(s.references, s.source, s.offset_ms, s.duration_ms) for s in derived.segments
        ),
        duration_ms=duration,
    )


# --- the command: streams asr --audio --longform on the 12-line talk ------------------------------------


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_recording(tmp_path_factory.mktemp("fuzz-times") / "talk.wav", talk()[1])


def _shifted(texts: list[str], by: int) -> list[str]:
    """Another talk's lines, as far as line lengths go: the same lines, shifted (``by`` >= 1) or reversed."""
    return texts[by:] + texts[:by] if by < len(texts) else texts[::-1]


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """What was said (per line: as written, misheard, not at all), the --source and --ref lines (this
    talk's, with lines that match nothing, or another talk's), and where the recording holds speech."""
    lines, _ = talk()
    said: list[str] = []
    heard = draw(st.sampled_from(["all", "per line", "silence", "another talk"]))
    for line in lines:
        how = "said" if heard == "all" else "unheard" if heard == "silence" else None
        if heard == "another talk":
            how = "other"
        if how is None:
            how = draw(st.sampled_from(["said", "said", "misheard", "unheard"]))
        words = line.source.split()
        if how == "misheard":
            words = [draw(st.sampled_from(OTHER_TALK)) if draw(st.integers(0, 2)) == 0 else w for w in words]
        elif how == "unheard":
            words = []
        elif how == "other":
            words = [OTHER_TALK[(k + len(said)) % len(OTHER_TALK)] for k in range(len(words))]
        said.append(" ".join(words))
    sources = [line.source for line in lines]
    source_how = draw(st.sampled_from(["this talk", "this talk", "lines heard nowhere", "another talk"]))
    if source_how == "lines heard nowhere":
        sources = [
            " ".join(draw(st.lists(st.sampled_from(OTHER_TALK), min_size=1, max_size=9)))
            if draw(st.integers(0, 3)) == 0
            else text
            for text in sources
        ]
    elif source_how == "another talk":
        sources = _shifted(sources, draw(st.integers(1, len(sources))))
    references = [line.reference for line in lines]
    ref_how = draw(st.sampled_from(["this talk", "this talk", "another talk", "none"]))
    if ref_how == "another talk":
        references = _shifted(references, draw(st.integers(1, len(references))))
    speech_how = draw(st.sampled_from(["everywhere", "where said", "nowhere"]))
    speech: list[tuple[float, float]] | None = None
    if speech_how == "where said":
        speech = [
            (x.offset_ms, x.offset_ms + x.duration_ms) for x, text in zip(lines, said, strict=True) if text
        ]
    elif speech_how == "nowhere":
        speech = []
    return {
        "said": said,
        "sources": sources,
        "references": references if ref_how != "none" else None,
        "speech": speech,
        "how": (heard, source_how, ref_how, speech_how),
    }


def _write_lines(path: Path, texts: list[str]) -> Path:
    path.write_text("".join(text + "\n" for text in texts), encoding="utf-8")
    return path


@settings(max_examples=examples(40))
@given(scenario=scenarios())
def test_talk_segment_times(recording: Path, scenario: dict[str, Any]) -> None:
    tried("segment times: talks (CLI)")
    lines, duration = talk()
    with scratch() as tmp:
        folder = Path(tmp)
        source = _write_lines(folder / "talk.en", scenario["sources"])
        refs = (
            []
            if scenario["references"] is None
            else [_write_lines(folder / "talk.de", scenario["references"])]
        )
        (folder / "out").mkdir()
        out = folder / "out" / "o.jsonl"
        args = ["streams", "asr", "--audio", str(recording), "--longform", "--source", str(source)]
        args += [*(a for ref in refs for a in ("--ref", str(ref))), "--tgt-lang", "de", "--json"]
        args += ["--interval-ms", "2000", "-o", str(out)]
        with recognizing(spoken(lines, scenario["said"]), duration, scenario["speech"]):
            outcome = invoke(args)
        check(outcome, [source, *refs, recording], codes=(0, 1))
        heard = scenario["how"][0]
        if outcome.code != 0:
            assert leftovers(folder / "out") == [], outcome.describe()
            message = " ".join(outcome.stderr.split()).lower()
            assert "pass" in message or "check that" in message, (
                f"the error says not how to fix it:\n{outcome.describe()}"
            )
            return
        assert heard != "silence", f"a recording of silence gave a stream:\n{outcome.describe()}"
        assert leftovers(folder / "out") == [out]
        summary = strict_json(outcome.stdout)
        (stream,) = read_streams(out)
        record = stream.provenance["segment_times"]
        assert summary["segment_times"] == record
        assert len(stream.segments) == len(lines)
        previous = 0.0
        for segment in stream.segments:
            assert segment.offset_ms is not None and segment.end_ms is not None
            assert segment.offset_ms >= previous - ROUNDING_MS and segment.end_ms <= duration + ROUNDING_MS
            previous = segment.end_ms
        assert record["interpolated_segments"] == len(record.get("interpolated_lines", []))
        if scenario["how"][:2] == ("all", "this talk"):  # every line heard as written
            assert record["matched_words"] == record["source_words"] and record["interpolated_segments"] == 0


def test_a_recording_of_silence_and_another_talks_reference_are_refused(
    recording: Path, tmp_path: Path
) -> None:
    """Two of the cases above, by hand: nothing heard, and the reference lines of another talk."""
    lines, duration = talk()
    source = _write_lines(tmp_path / "talk.en", [line.source for line in lines])
    shifted = _write_lines(tmp_path / "other.de", _shifted([line.reference for line in lines], 3))
    out = tmp_path / "o.jsonl"
    base = ["streams", "asr", "--audio", str(recording), "--longform", "--source", str(source)]
    base += ["--tgt-lang", "de", "-o", str(out), "--interval-ms", "2000"]
    with recognizing([], duration):
        silent = invoke(base)
    check(silent, [recording], codes=(1,))
    assert "no speech was recognized in" in silent.stderr and not out.exists()
    with recognizing(spoken(lines), duration):
        other = invoke([*base, "--ref", str(shifted)])
    check(other, [shifted], codes=(1,))
    assert "another talk" in " ".join(other.stderr.split()) and not out.exists()

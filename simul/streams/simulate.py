"""Simulated ASR partials for timed segments (ACL 60/60 without a recognizer's output).

The partials a streaming recognizer would show if it heard every word right and emitted every
``interval_ms``:

* A word becomes known when it ends. End times come from a word-timed transcript of the talk (lines of
  ``<start_s> <end_s> <word>``, e.g. a forced alignment), matched to the segment's words; words it does not
  match are interpolated between their neighbours. Without one, a segment's n words end at i/n of its
  duration (i = 1..n).
* Every ``interval_ms`` after the segment start, a partial holds the words ended so far, lower-cased and
  without punctuation (what recognizers emit before punctuation and truecasing). The final step, at the
  segment end (or when the last word ends, if later), is the true transcript.
* With ``revise_rate`` r, each partial's last word is, with probability r, replaced by a mistaken form (the
  word cut short, as if not fully heard, or another word of the talk); the next partial corrects it, as a
  recognizer correcting itself would. The random draws are seeded per segment (``seed`` and stream id), so
  a stream does not depend on which other segments are built.
* Consecutive identical partials are one step, at the earliest time.

Step times are milliseconds from the segment start (the YAML offset). Provenance says ``"simulated": true``.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError, UsageError
from simul.common.limits import MAX_AUDIO_SECONDS
from simul.streams.format import Step, Stream
from simul.streams.partials import normalize_word, parse_number
from simul.streams.segments import Segment, read_utf8_lines, stream_from_segment, talk_file_pairs

DEFAULT_INTERVAL_MS = 500.0
_INNER_MARKS = "'-’"


@dataclass(frozen=True)
class TimedWord:
    start_ms: float
    end_ms: float
    text: str
    line: int


def read_word_times(path: Path) -> list[TimedWord]:
    """A word-timed transcript: ``<start_s> <end_s> <word>`` per line (tab or space separated, seconds)."""
    words: list[TimedWord] = []
    for number, line in enumerate(read_utf8_lines(path, "word-times file"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        parts = line.split(None, 2)
        if len(parts) < 3:
            raise SimulError(f"{where}: expected '<start_s> <end_s> <word>', got {line!r}")
        times = [
            parse_number(token, where, f"{name} time (seconds)", 1000.0)
            for token, name in zip(parts[:2], ("start", "end"), strict=True)
        ]
        if times[1] < times[0]:
            raise SimulError(f"{where}: the word ends before it starts ({parts[1]} < {parts[0]})")
        if words and times[0] < words[-1].start_ms:
            raise SimulError(
                f"{where}: time goes backwards ({parts[0]} s after a word starting at "
                f"{words[-1].start_ms / 1000.0:g} s on line {words[-1].line}); list words in spoken order"
            )
        words.append(TimedWord(times[0], times[1], parts[2].strip(), number))
    if not words:
        raise SimulError(f"word-times file {path} holds no words")
    return words


def asr_form(word: str) -> str:
    """A word as a recognizer shows it before punctuation: lower case, no punctuation except inside
    words (``task-oriented``, ``let's``) and between digits (``2.5``)."""
    text = word.lower()
    kept: list[str] = []
    for i, ch in enumerate(text):
        inside_number = (
            ch in ".," and 0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit()
        )
        if ch.isalnum() or ch in _INNER_MARKS or inside_number:
            kept.append(ch)
    return "".join(kept).strip(_INNER_MARKS)


def _fill(ends: list[float | None], duration_ms: float) -> list[float]:
    """Interpolate unknown word ends between known ones (0 before the first word, the segment end after the
    last), then make them non-negative and non-decreasing."""
    n = len(ends)
    anchors: list[tuple[int, float]] = [(-1, 0.0)]
    anchors += [(i, e) for i, e in enumerate(ends) if e is not None]
    if ends and ends[-1] is None:
        anchors.append((n - 1, max(duration_ms, anchors[-1][1])))
    filled: list[float] = []
    a = 0
    for i in range(n):
        while a + 1 < len(anchors) and anchors[a + 1][0] < i:
            a += 1
        known = ends[i]
        if known is not None:
            filled.append(known)
            continue
        (p, ep), (q, eq) = anchors[a], anchors[a + 1]
        filled.append(ep + (eq - ep) * (i - p) / (q - p))
    out: list[float] = []
    for value in filled:
        out.append(max(value, out[-1] if out else 0.0, 0.0))
    return out


@dataclass
class WordTimesMatch:
    """How a word-timed transcript lined up with one talk's segments."""

    file: str
    talk: str
    words: int
    matched: int


def talk_word_ends(
    segments: Sequence[Segment], timed: list[TimedWord]
) -> tuple[dict[int, list[float | None]], int]:
    """End time (from the segment start) of each source word of a talk's segments where the word-timed
    transcript matches it; also how many words matched."""
    ref: list[str] = []
    owner: list[tuple[int, int]] = []
    for segment in segments:
        for k, word in enumerate(segment.source.split()):
            ref.append(normalize_word(word))
            owner.append((segment.line, k))
    ends: dict[int, list[float | None]] = {s.line: [None] * len(s.source.split()) for s in segments}
    offsets = {s.line: s.offset_ms or 0.0 for s in segments}
    matcher = SequenceMatcher(None, ref, [normalize_word(w.text) for w in timed], autojunk=False)
    matched = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            for k in range(i2 - i1):
                line, position = owner[i1 + k]
                ends[line][position] = timed[j1 + k].end_ms - offsets[line]
                matched += 1
    return ends, matched


def _misheard(word: str, vocabulary: list[str], rng: random.Random) -> str:
    if len(word) >= 4 and rng.random() < 0.5:
        return word[: (len(word) + 1) // 2]
    others = [v for v in vocabulary if v != word]
    return rng.choice(others) if others else word


def simulate_steps(
    words: list[str],
    ends_ms: list[float],
    duration_ms: float,
    interval_ms: float,
    revise_rate: float = 0.0,
    rng: random.Random | None = None,
    vocabulary: list[str] | None = None,
) -> list[Step]:
    """The steps of one segment: ``words`` (the true transcript) ending at ``ends_ms`` from its start."""
    if interval_ms <= 0:
        raise UsageError(f"--interval-ms must be positive, got {interval_ms:g}")
    rng = rng or random.Random(0)
    final_text = " ".join(words)
    heard_forms = [asr_form(w) for w in words]
    end_time = max([duration_ms, *ends_ms])
    if end_time > MAX_AUDIO_SECONDS * 1000.0:
        raise SimulError(
            f"a segment ending {end_time / 1000.0:g} s after its start is more than a day long; check the "
            "segment durations and word times"
        )
    steps: list[Step] = []
    tick = 1
    while tick * interval_ms < end_time:
        now = tick * interval_ms
        tick += 1
        heard = [form for form, end in zip(heard_forms, ends_ms, strict=True) if end <= now and form]
        revised = False
        if heard and revise_rate > 0 and rng.random() < revise_rate:
            wrong = _misheard(heard[-1], vocabulary or [], rng)
            if wrong and wrong != heard[-1]:
                heard[-1], revised = wrong, True
        text = " ".join(heard)
        if text and (not steps or steps[-1].source != text):
            steps.append(
                Step(text, final=False, time_ms=now, extra={"simulated_error": True} if revised else {})
            )
    if steps and steps[-1].source == final_text:
        steps[-1] = Step(final_text, final=True, time_ms=steps[-1].time_ms)
    else:
        steps.append(Step(final_text, final=True, time_ms=end_time))
    return steps


@dataclass
class SimulationImport:
    streams: list[Stream]
    word_times: list[WordTimesMatch] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "streams": len(self.streams),
            "simulated": True,
            "unaligned_partials": 0,
            "word_times": [m.__dict__ for m in self.word_times],
        }


def simulated_streams(
    segments: Sequence[Segment],
    selected: Sequence[Segment],
    tgt: str,
    interval_ms: float = DEFAULT_INTERVAL_MS,
    word_times: Sequence[str] = (),
    revise_rate: float = 0.0,
    seed: int = 0,
    src: str = "en",
) -> SimulationImport:
    """Simulated-partials streams for the selected segments (``segments``: all of them, for word times)."""
    if interval_ms <= 0:
        raise UsageError(f"--interval-ms must be positive, got {interval_ms:g}")
    if not 0.0 <= revise_rate <= 1.0:
        raise UsageError(f"--revise-rate is a probability between 0 and 1, got {revise_rate:g}")
    untimed = [s for s in selected if not s.timed]
    if untimed:
        raise SimulError(
            f"segment {untimed[0].id} has no audio offset/duration: simulated partials need the segment YAML "
            "(put it next to the text files or pass --segments FILE)"
        )
    by_talk: dict[str, list[Segment]] = defaultdict(list)
    for segment in segments:
        by_talk[segment.talk].append(segment)
    ends: dict[int, list[float | None]] = {}
    files: dict[str, str] = {}
    matches: list[WordTimesMatch] = []
    for talk, path in talk_file_pairs(list(word_times), list(by_talk), "word-times file"):
        if talk is None:
            raise SimulError(
                f"cannot tell which talk word-times file {path} belongs to (no talk id in its name); "
                f"pass --word-times TALK=FILE with one of: {', '.join(sorted(by_talk))}"
            )
        if talk in files:
            raise SimulError(f"talk {talk} has two word-times files ({files[talk]}, {path.name}); give one")
        talk_ends, matched = talk_word_ends(by_talk[talk], read_word_times(path))
        ends.update(talk_ends)
        files[talk] = path.name
        total = sum(len(v) for v in talk_ends.values())
        matches.append(WordTimesMatch(file=path.name, talk=talk, words=total, matched=matched))
    vocabularies = {
        talk: sorted({f for s in segs for f in (asr_form(w) for w in s.source.split()) if f})
        for talk, segs in by_talk.items()
    }
    streams: list[Stream] = []
    for segment in selected:
        assert segment.duration_ms is not None
        words = segment.source.split()
        known = ends.get(segment.line)
        timing = "word_times" if known is not None and any(e is not None for e in known) else "even"
        if known is None or timing == "even":
            word_ends = [segment.duration_ms * (k + 1) / len(words) for k in range(len(words))]
        else:
            word_ends = _fill(known, segment.duration_ms)
        rng = random.Random(f"{seed}:{segment.id}")
        steps = simulate_steps(
            words, word_ends, segment.duration_ms, interval_ms, revise_rate, rng, vocabularies[segment.talk]
        )
        partials: dict[str, Any] = {
            "source": "simulated",
            "interval_ms": interval_ms,
            "timing": timing,
            "revise_rate": revise_rate,
            "seed": seed,
        }
        if timing == "word_times":
            partials["word_times_file"] = files[segment.talk]
        provenance = {"simulated": True, "partials": partials, "time_origin": "segment_offset"}
        streams.append(stream_from_segment(segment, src, tgt, steps, provenance))
    return SimulationImport(streams=streams, word_times=matches)

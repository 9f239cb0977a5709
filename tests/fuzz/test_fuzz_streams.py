"""Stream files (JSONL) under fire: real files damaged at the JSON and byte level, and generated streams.

Reader: ``simul streams stats FILE`` (every line read and validated) and ``simul streams show FILE --id``
(the text printed). Properties: see tests/fuzz/cli.py; an accepted file round-trips (read, write, read gives
the same records), and what is shown never drives the terminal. Long-form (version-3) records, whole talks
with delta steps and reference segments, are mutated the same way (seeded from the shipped long-form
fixtures) and generated.
"""

from __future__ import annotations

import json
import tempfile
from functools import cache
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from simul.common.paths import fixtures_dir
from simul.streams.format import Segment, Step, Stream, read_streams, write_streams
from tests.fuzz.budget import examples, scratch, tried
from tests.fuzz.cli import check, invoke, leftovers
from tests.fuzz.mutate import hostile_text, mutated_bytes, mutated_lines_json

FLORES_STREAMS = fixtures_dir() / "streams" / "flores200-devtest-en-de-lag3.jsonl"
LONGFORM_STREAMS = (
    fixtures_dir() / "streams" / "acl6060-dev-110-first7-simulstreaming-en-de-longform.jsonl",
    fixtures_dir() / "streams" / "acl6060-dev-110-first12-en-de-longform.jsonl",
)
SLTEV = fixtures_dir() / "asr" / "sltev"


@cache
def seed_lines() -> tuple[str, ...]:
    """Two FLORES streams and one timed ASR stream (with per-step extra and nested provenance)."""
    flores = FLORES_STREAMS.read_text(encoding="utf-8").splitlines()[:2]
    folder = Path(tempfile.mkdtemp(prefix="simul-fuzz-seed-"))
    out = folder / "asr.jsonl"
    outcome = invoke(
        [
            "streams",
            "asr",
            "--partials",
            str(SLTEV / "kaccNlwi6lUCEM.en.OStt"),
            "--source",
            str(SLTEV / "kaccNlwi6lUCEM.en.OSt"),
            "--tgt-lang",
            "de",
            "--limit",
            "2",
            "-o",
            str(out),
        ]
    )
    assert outcome.code == 0, outcome.describe()
    asr = out.read_text(encoding="utf-8").splitlines()[:1]
    out.unlink()
    folder.rmdir()
    return (*flores, *asr)


def _round_trip(path: Path, folder: Path) -> None:
    first = read_streams(path)
    again = folder / "again.jsonl"
    write_streams(again, first)
    second = read_streams(again)
    assert [s.to_json() for s in first] == [s.to_json() for s in second]
    write_streams(folder / "third.jsonl", second)
    assert again.read_bytes() == (folder / "third.jsonl").read_bytes()


def _read_and_show(path: Path, folder: Path, reader: str) -> None:
    tried(reader)
    stats = invoke(["streams", "stats", str(path), "--json"])
    check(stats, [path], line=True)
    if stats.code != 0:
        return
    assert json.loads(stats.stdout)["streams"] >= 1
    _round_trip(path, folder)
    first = read_streams(path)[0]
    show = invoke(["streams", "show", str(path), "--id", first.id, "--json"])
    check(show, [path], codes=(0,))
    assert json.loads(show.stdout) == first.to_json()  # the JSON keeps the text byte-exact


@settings(max_examples=examples(150))
@given(data=st.data())
def test_stream_file_json_mutations(data: st.DataObject) -> None:
    seeds = [json.loads(line) for line in seed_lines()]
    content = data.draw(mutated_lines_json(seeds))
    with scratch() as tmp:
        folder = Path(tmp)
        path = folder / "in.jsonl"
        path.write_bytes(content)
        _read_and_show(path, folder, "stream JSONL")


@settings(max_examples=examples(100))
@given(data=st.data())
def test_stream_file_byte_mutations(data: st.DataObject) -> None:
    content = data.draw(mutated_bytes("".join(line + "\n" for line in seed_lines()).encode()))
    with scratch() as tmp:
        folder = Path(tmp)
        path = folder / "in.jsonl"
        path.write_bytes(content)
        _read_and_show(path, folder, "stream JSONL")


text_no_blank = st.one_of(hostile_text, st.text(min_size=1, max_size=30)).filter(lambda s: s.strip() != "")


@st.composite
def streams(draw: st.DrawFn) -> list[Stream]:
    count = draw(st.integers(1, 3))
    out = []
    for index in range(count):
        n = draw(st.integers(1, 5))
        timed = draw(st.booleans())
        times = sorted(draw(st.lists(st.floats(0, 1e7), min_size=n, max_size=n))) if timed else [None] * n
        steps = tuple(
            Step(
                source=draw(text_no_blank),
                final=k == n - 1,
                time_ms=times[k],
                extra=draw(st.dictionaries(st.text(max_size=4), st.integers(0, 9), max_size=2)),
            )
            for k in range(n)
        )
        out.append(
            Stream(
                id=f"{index}-{draw(st.one_of(hostile_text, st.text(max_size=10)))}",
                src=draw(st.sampled_from(["en", "de", "zh", "ja"])),
                tgt=draw(st.sampled_from(["en", "de", "zh", "ja"])),
                steps=steps,
                reference=draw(st.none() | hostile_text.filter(str.strip)),  # an empty reference is refused
                provenance=draw(st.dictionaries(st.text(max_size=5), hostile_text, max_size=2)),
            )
        )
    return out


@settings(max_examples=examples(100))
@given(generated=streams())
def test_generated_streams_round_trip_and_show_safely(generated: list[Stream]) -> None:
    tried("stream JSONL (generated)")
    with scratch() as tmp:
        folder = Path(tmp)
        path = folder / "gen.jsonl"
        write_streams(path, generated)
        assert leftovers(folder) == [path]
        back = read_streams(path)
        assert [s.to_json() for s in back] == [s.to_json() for s in generated]
        for stream in back:
            shown = invoke(["streams", "show", str(path), "--id", stream.id])
            check(shown, [path], codes=(0,))
        check(invoke(["streams", "stats", str(path)]), [path], codes=(0,))


@cache
def longform_seed_lines() -> tuple[str, ...]:
    """A talk from recognizer chunks (22 steps, extra per step) and a simulated one (78 steps)."""
    return tuple(path.read_text(encoding="utf-8").strip() for path in LONGFORM_STREAMS)


@settings(max_examples=examples(100))
@given(data=st.data())
def test_longform_json_mutations(data: st.DataObject) -> None:
    seeds = [json.loads(line) for line in longform_seed_lines()]
    content = data.draw(mutated_lines_json(seeds))
    with scratch() as tmp:
        folder = Path(tmp)
        path = folder / "in.jsonl"
        path.write_bytes(content)
        _read_and_show(path, folder, "stream JSONL (long-form)")


@settings(max_examples=examples(60))
@given(data=st.data())
def test_longform_byte_mutations(data: st.DataObject) -> None:
    content = data.draw(mutated_bytes(longform_seed_lines()[0].encode() + b"\n"))
    with scratch() as tmp:
        folder = Path(tmp)
        path = folder / "in.jsonl"
        path.write_bytes(content)
        _read_and_show(path, folder, "stream JSONL (long-form)")


@st.composite
def talks(draw: st.DrawFn) -> list[Stream]:
    """Valid long-form streams: sources that grow, shrink or get revised; timed or untimed; segments in
    talk order inside the recording, each with the same number of references."""
    out = []
    for index in range(draw(st.integers(1, 2))):
        n = draw(st.integers(1, 6))
        sources: list[str] = []
        for _ in range(n):
            previous = sources[-1] if sources else ""
            keep = draw(st.integers(0, len(previous)))
            source = previous[:keep] + draw(text_no_blank)
            sources.append(source if source.strip() else "x")
        timed = draw(st.booleans())
        times = sorted(draw(st.lists(st.floats(0, 1e7), min_size=n, max_size=n))) if timed else [None] * n
        steps = tuple(
            Step(
                source=sources[k],
                final=k == n - 1,
                time_ms=times[k],
                extra=draw(st.sampled_from([{}, {"a": 1}])),
            )
            for k in range(n)
        )
        count = draw(st.integers(0, 4))
        refs = draw(st.integers(0, 2))
        timed_segments = draw(st.booleans())
        bounds = sorted(draw(st.lists(st.floats(0, 1e6), min_size=2 * count, max_size=2 * count)))
        segments = tuple(
            Segment(
                references=tuple(draw(hostile_text.filter(str.strip)) for _ in range(refs)),
                source=draw(st.none() | hostile_text),
                offset_ms=bounds[2 * k] if timed_segments else None,
                duration_ms=bounds[2 * k + 1] - bounds[2 * k] if timed_segments else None,
            )
            for k in range(count)
        )
        duration = draw(st.none() | st.floats(1e6 + 1, 1e7)) if timed_segments or not count else None
        out.append(
            Stream.talk(
                id=f"talk{index}-{draw(st.text(max_size=6))}",
                src=draw(st.sampled_from(["en", "de", "zh", "ja"])),
                tgt=draw(st.sampled_from(["en", "de", "zh", "ja"])),
                steps=steps,
                segments=segments,
                duration_ms=duration,
                provenance=draw(st.dictionaries(st.text(max_size=5), hostile_text, max_size=2)),
            )
        )
    return out


@settings(max_examples=examples(80))
@given(generated=talks())
def test_generated_talks_round_trip_and_show_safely(generated: list[Stream]) -> None:
    tried("stream JSONL (generated long-form)")
    with scratch() as tmp:
        folder = Path(tmp)
        path = folder / "talks.jsonl"
        write_streams(path, generated)
        assert leftovers(folder) == [path]
        back = read_streams(path)
        assert [s.to_json() for s in back] == [s.to_json() for s in generated]
        # the whole source of every step survives the delta encoding (times are rounded to 0.1 ms on disk)
        assert [[x.source for x in s.steps] for s in back] == [[x.source for x in s.steps] for s in generated]
        for stream in back:
            check(invoke(["streams", "show", str(path), "--id", stream.id]), [path], codes=(0,))
            check(invoke(["streams", "show", str(path), "--id", stream.id, "--segments"]), [path], codes=(0,))
        stats = invoke(["streams", "stats", str(path), "--json"])
        check(stats, [path], codes=(0,))
        assert [t["steps"] for t in json.loads(stats.stdout)["talks"]] == [len(s.steps) for s in generated]

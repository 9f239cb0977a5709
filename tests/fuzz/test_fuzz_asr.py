"""The JSON summary of `simul streams asr --audio FILE --longform --json` under fire, and its record read
back.

1. What the command reads that ends up in the summary: the source transcript (--source: the committed WER
   and the lines whose times are derived), the reference lines (--ref, twice) and the data set name
   (--name: the stream id), damaged at the byte level or swapped for one another. The recording is
   recognized by the scripted recognizer of tests/fuzz/speech.py (no Whisper).
2. The summary's ``segment_times`` record, which the stream keeps as ``provenance["segment_times"]`` and
   `simul eval`, `simul ingest` and `simul score` read back (simul.streams.references.segment_times_summary):
   damaged in the streams.jsonl of a run of whole talks, which `simul score` reads.

Properties (tests/fuzz/cli.py): a documented exit code and no traceback; an error names one of the input
files (or the option at fault) and leaves no stream file behind; the summary is JSON (no NaN, no Infinity)
that says what was written: the stream's id, steps and segment-time record, and the file written reads
back and writes again byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simul.runs.directory import STREAMS_FILE
from simul.streams.format import read_streams, write_streams
from simul.streams.references import segment_times_caption, segment_times_summary
from simul.streams.segments import read_utf8_lines
from tests.fuzz.budget import examples, scratch, tried
from tests.fuzz.cli import check, invoke, leftovers, strict_json
from tests.fuzz.mutate import hostile_text, mutated_bytes, mutated_json
from tests.fuzz.runs import (
    JsonPath,
    Seeds,
    damaged_file,
    encode_lines,
    files_of,
    materialize,
    snapshot,
    talk_run,
    targeted_json,
)
from tests.fuzz.speech import recognizing, spoken, talk, write_recording

RECORDING = "2022.acl-long.110.wav"


def _seeds() -> dict[str, bytes]:
    lines, _ = talk()
    source = "".join(line.source + "\n" for line in lines).encode()
    reference = "".join(line.reference + "\n" for line in lines).encode()
    return {"talk.en": source, "talk.de": reference, "talk.2.de": reference.replace(b"Wir ", b"Wir hier ")}


SEEDS = _seeds()


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_recording(tmp_path_factory.mktemp("fuzz-asr") / RECORDING, talk()[1])


@st.composite
def text_inputs(draw: st.DrawFn) -> dict[str, bytes]:
    """The three text files, one of them damaged at the byte level or replaced by another of them."""
    files = dict(SEEDS)
    name = draw(st.sampled_from(sorted(files)))
    if draw(st.integers(0, 4)) == 0:
        files[name] = files[draw(st.sampled_from(sorted(files)))]
    else:
        files[name] = draw(mutated_bytes(files[name]))
    return files


def _asr(recording: Path, folder: Path, refs: int, name: str | None) -> list[str]:
    args = ["streams", "asr", "--audio", str(recording), "--longform", "--tgt-lang", "de", "--json"]
    args += [
        "--source",
        str(folder / "talk.en"),
        "--interval-ms",
        "2000",
        "-o",
        str(folder / "out" / "o.jsonl"),
    ]
    args += [arg for path in ("talk.de", "talk.2.de")[:refs] for arg in ("--ref", str(folder / path))]
    return args + (["--name", name] if name is not None else [])


@settings(max_examples=examples(60))
@given(files=text_inputs(), refs=st.integers(0, 2), name=st.none() | hostile_text)
def test_asr_summary_inputs(recording: Path, files: dict[str, bytes], refs: int, name: str | None) -> None:
    tried("ASR summary: inputs")
    lines, duration = talk()
    with scratch() as tmp:
        folder = Path(tmp)
        for file, content in files.items():
            (folder / file).write_bytes(content)
        (folder / "out").mkdir()
        out = folder / "out" / "o.jsonl"
        with recognizing(spoken(lines), duration):
            outcome = invoke(_asr(recording, folder, refs, name))
        inputs = [folder / "talk.en", *(folder / f for f in ("talk.de", "talk.2.de")[:refs]), recording]
        check(outcome, [*inputs, *(["--name"] if name is not None else [])])
        if outcome.code != 0:
            assert leftovers(folder / "out") == [], f"files left behind after an error:\n{outcome.describe()}"
            return
        assert leftovers(folder / "out") == [out], outcome.describe()
        _check_summary(strict_json(outcome.stdout), out, folder)


def _check_summary(summary: dict[str, Any], out: Path, folder: Path) -> None:
    """The summary says what was written, and the file written reads back and writes again unchanged."""
    (stream,) = read_streams(out)
    # a reference segment per line of the transcript (an empty transcript is refused)
    assert len(stream.segments) == len(read_utf8_lines(folder / "talk.en", "source")) > 0
    assert summary["output"] == str(out) and summary["streams"] == 1 and summary["longform"] is True
    assert summary["id"] == stream.id and summary["steps"] == len(stream.steps)
    assert summary.get("segment_times") == stream.provenance.get("segment_times")
    assert ("committed_wer" in summary) == ("transcript" in stream.provenance)
    derived = segment_times_summary([stream])
    if "segment_times" in summary:
        assert derived is not None and derived["source_words"] == summary["segment_times"]["source_words"]
        assert derived["interpolated_segments"] == summary["segment_times"]["interpolated_segments"]
    again = folder / "again.jsonl"
    write_streams(again, [stream])
    assert again.read_bytes() == out.read_bytes()


# --- the record read back: provenance["segment_times"] of a run's talks, which `simul score` reads ---------

TIMES_FIELDS: tuple[JsonPath, ...] = tuple(
    ("provenance", "segment_times", *path)
    for path in (
        (),
        ("derived",),
        ("method",),
        ("source_words",),
        ("recognized_words",),
        ("matched_words",),
        ("placed_words",),
        ("interpolated_segments",),
        ("interpolated_lines",),
    )
)
RECORD = {
    "derived": True,
    "method": "recognizer word times aligned to the source lines",
    "source_words": 10,
    "recognized_words": 11,
    "matched_words": 9,
    "placed_words": 10,
    "interpolated_segments": 1,
    "interpolated_lines": [3],
}


@pytest.fixture(scope="module")
def derived_run(tmp_path_factory: pytest.TempPathFactory) -> Seeds:
    """An ingested run of the two talks of tests/data/longform, the first with derived segment times."""
    root = tmp_path_factory.mktemp("fuzz-asr-run")
    streams = root / "talks.jsonl"
    talks = [
        json.loads(line)
        for line in (Path(__file__).parent.parent / "data" / "longform" / "talks.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()
    ]
    talks[0]["provenance"]["segment_times"] = RECORD
    streams.write_bytes(encode_lines(talks, False))
    run = talk_run(root, "omnisteval", streams)
    return Seeds({run.name: files_of(run)})


@st.composite
def damaged_record(draw: st.DrawFn, content: bytes) -> bytes | None:
    """streams.jsonl with the first talk's segment-time record damaged (now and then the file at large)."""
    if draw(st.integers(0, 9)) == 0:
        return draw(damaged_file(STREAMS_FILE, content))
    talks = [json.loads(line) for line in content.decode().splitlines()]
    if draw(st.booleans()):
        talks[0] = draw(targeted_json(talks[0], TIMES_FIELDS))
    else:
        talks[0]["provenance"]["segment_times"] = draw(mutated_json(RECORD))
    if draw(st.booleans()):  # the second talk's record too: the summary adds the talks up
        talks[1]["provenance"]["segment_times"] = draw(mutated_json(RECORD))
    return encode_lines(talks, draw(st.booleans()))


@settings(max_examples=examples(30))
@given(data=st.data())
def test_asr_summary_read_back(derived_run: Seeds, data: st.DataObject) -> None:
    ((name, files),) = derived_run.items()
    content = data.draw(damaged_record(files[STREAMS_FILE]))
    tried("ASR summary: read back")
    with scratch() as tmp:
        run = materialize(Path(tmp) / name, {**files, STREAMS_FILE: content})
        before = snapshot(run)
        outcome = invoke(["score", str(run)])
        check(outcome, [run])
        assert snapshot(run) == before, f"score changed the run directory:\n{outcome.describe()}"
        assert leftovers(Path(tmp), [run / f for f in before]) == []
        if outcome.code == 0:  # the caption says what the records say, as far as they can be read
            caption = segment_times_caption(segment_times_summary(read_streams(run / STREAMS_FILE)))
            shown = " ".join(outcome.stderr.split())
            assert (caption is None) == ("segment times derived" not in shown), outcome.describe()
            assert caption is None or " ".join(caption.split()) in shown, outcome.describe()


def test_the_intact_inputs_give_a_summary(recording: Path, derived_run: Seeds, tmp_path: Path) -> None:
    """The properties above are about damage: the seeds are accepted, their segment times derived."""
    lines, duration = talk()
    for file, content in SEEDS.items():
        (tmp_path / file).write_bytes(content)
    (tmp_path / "out").mkdir()
    with recognizing(spoken(lines), duration):
        outcome = invoke(_asr(recording, tmp_path, 2, None))
    check(outcome, [recording], codes=(0,))
    summary = strict_json(outcome.stdout)
    assert summary["segment_times"]["matched_words"] == summary["segment_times"]["source_words"]
    _check_summary(summary, tmp_path / "out" / "o.jsonl", tmp_path)
    ((name, files),) = derived_run.items()
    run = materialize(tmp_path / name, dict(files))
    scored = invoke(["score", str(run)])
    check(scored, [run], codes=(0,))
    assert "segment times derived from the recognizer's words for 1 of 2 talks" in " ".join(
        scored.stderr.split()
    )

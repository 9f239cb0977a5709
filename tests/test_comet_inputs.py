"""What COMET is given: (complete source, final output, reference) per stream (SPEC "Metrics"), or per
reference segment after re-segmentation for a talk, and where each score lands (the stub tests.comet_stub)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.streams.format import Segment, Step, Stream, read_streams, write_streams
from tests.comet_stub import CometStub, stub_score
from tests.ingested import DATA

runner = CliRunner()


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def final_outputs(run: Path) -> dict[tuple[str, str], str]:
    """(method key, stream id) -> the final step's output, from the run's steps.jsonl."""
    return {(d["method"], d["stream"]): d["output"] for d in lines(run / "steps.jsonl") if d["final"]}


def method_keys(run: Path) -> list[str]:
    return [m["key"] for m in json.loads((run / "run.json").read_text())["methods"]]


def check_stream_scores(run: Path, stub: CometStub) -> None:
    """Each stream's COMET in per_stream.jsonl is the stub's score of that stream's own triple, and each
    method's system score the mean of its streams'."""
    scored = {triple: stub_score(triple) for call in stub.calls for triple in call}
    rows = lines(run / "per_stream.jsonl")
    assert {row["comet"] for row in rows} <= set(scored.values())
    for key, call in zip(method_keys(run), stub.calls, strict=True):
        mine = [row["comet"] for row in rows if row["method"] == key]
        assert mine == [stub_score(t) for t in call]
        system = json.loads((run / "run.json").read_text())["methods"][method_keys(run).index(key)]["metrics"]
        assert system["comet"] == pytest.approx(sum(mine) / len(mine), abs=1e-4)


def test_short_form_triples(
    tiny_model: Path, streams_file: Path, tmp_path: Path, comet_stub: CometStub
) -> None:
    run = tmp_path / "run"
    args = [
        "eval",
        "--model",
        str(tiny_model),
        "--streams",
        str(streams_file),
        "--threads",
        "2",
        "--out",
        str(run),
    ]
    result = runner.invoke(app, [*args, "--comet-model", str(comet_stub.path), "--require-comet", "--quiet"])
    assert result.exit_code == 0, result.output
    streams = read_streams(streams_file)
    finals = final_outputs(run)
    assert comet_stub.calls == [
        [(s.steps[-1].source, finals[(key, s.id)], s.reference) for s in streams] for key in method_keys(run)
    ]
    assert all(s.reference and s.steps[-1].source for s in streams) and len(comet_stub.calls) == 2
    check_stream_scores(run, comet_stub)
    # `simul score` gives COMET the same triples again
    calls = list(comet_stub.calls)
    rescored = runner.invoke(app, ["score", str(run), "--comet-model", str(comet_stub.path), "--quiet"])
    assert rescored.exit_code == 0, rescored.output
    assert comet_stub.calls[len(calls) :] == calls


def test_ingested_triples(tmp_path: Path, comet_stub: CometStub) -> None:
    run = tmp_path / "ingested"
    outputs, streams_path = DATA / "simul_outputs.jsonl", DATA / "streams.jsonl"
    args = ["ingest", str(outputs), "--format", "simul", "--streams", str(streams_path), "--out", str(run)]
    result = runner.invoke(app, [*args, "--comet-model", str(comet_stub.path), "--quiet"])
    assert result.exit_code == 0, result.output
    streams = read_streams(streams_path)
    ingested = {d["id"]: d["outputs"][-1]["output"] for d in lines(outputs)}
    assert comet_stub.calls == [[(s.steps[-1].source, ingested[s.id], s.reference) for s in streams]]
    check_stream_scores(run, comet_stub)


SENTENCES = [
    ("The museum is closed on Mondays.", "Das Museum ist montags geschlossen."),
    ("She has worked as a nurse for ten years.", "Sie arbeitet seit zehn Jahren als Krankenschwester."),
    ("Heavy rain is expected in the north tomorrow.", "Morgen wird im Norden starker Regen erwartet."),
]


def talk() -> Stream:
    words = " ".join(s for s, _ in SENTENCES).split()
    counts = [*range(3, len(words), 3), len(words)]
    steps = tuple(Step(" ".join(words[:n]), i == len(counts) - 1, 400.0 * n) for i, n in enumerate(counts))
    segments, offset = [], 0.0
    for src, ref in SENTENCES:
        duration = 400.0 * len(src.split())
        segments.append(Segment((ref,), src, offset, duration))
        offset += duration
    return Stream.talk("talk-a", "en", "de", steps, tuple(segments), offset)


def test_long_form_triples_are_the_resegmented_segments(
    tiny_model: Path, tmp_path: Path, comet_stub: CometStub
) -> None:
    """A talk is scored per reference segment: the segment's source, the part of the talk's final output that
    re-segmentation aligned to it (together, the whole output in order), and the segment's reference."""
    streams = tmp_path / "talk.jsonl"
    write_streams(streams, [talk()])
    run = tmp_path / "run"
    args = [
        "eval",
        "--model",
        str(tiny_model),
        "--streams",
        str(streams),
        "--max-window",
        "8",
        "--threads",
        "2",
    ]
    args += ["--comet-model", str(comet_stub.path), "--require-comet", "--quiet", "--out", str(run)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    finals = final_outputs(run)
    rows = lines(run / "per_stream.jsonl")
    assert len(comet_stub.calls) == len(method_keys(run)) == 2
    for key, call in zip(method_keys(run), comet_stub.calls, strict=True):
        assert [(src, ref) for src, _, ref in call] == [(src, ref) for src, ref in SENTENCES]
        hypotheses = [mt for _, mt, _ in call]
        assert " ".join(hypotheses).split() == finals[(key, "talk-a")].split()
        (row,) = [r for r in rows if r["method"] == key]
        assert [seg["hypothesis"] for seg in row["segments"]] == hypotheses
        assert [seg["comet"] for seg in row["segments"]] == [stub_score(t) for t in call]

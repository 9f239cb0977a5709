"""No run decodes and then fails at scoring for what could be known first (simul.streams.scorable): `simul
eval`, `simul ingest` and `simul score` refuse talks whose long-form figures cannot be computed, naming the
option that fixes them, before any model is loaded."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.streams.format import Stream, read_streams, write_streams
from simul.streams.scorable import longform_problems
from tests.helpers import eval_args
from tests.ingested import ingest_args
from tests.test_export_longform import TALKS, untimed, write_longform_run

runner = CliRunner(env={"COLUMNS": "200"})


def without_segment_times(stream: Stream) -> Stream:
    segments = tuple(replace(seg, offset_ms=None, duration_ms=None) for seg in stream.segments)
    return replace(stream, segments=segments)


def test_each_missing_need_is_named_with_its_fix() -> None:
    talks = read_streams(TALKS)
    assert longform_problems(talks) == []
    assert longform_problems([untimed(s) for s in talks]) == []
    (problem,) = longform_problems([without_segment_times(talks[0])])
    assert "has audio times on its steps but 3 of its 3 segments have no offset_ms" in problem
    assert "--source TRANSCRIPT" in problem and "--segments YAML" in problem
    no_refs = replace(talks[0], segments=tuple(replace(s, references=()) for s in talks[0].segments))
    (problem,) = longform_problems([no_refs])
    assert "3 of its 3 segments have no reference" in problem and "--ref TRANSLATION" in problem
    (problem,) = longform_problems([replace(talks[0], segments=())])
    assert "has no reference segments" in problem
    no_source = untimed(talks[0])
    no_source = replace(no_source, segments=tuple(replace(s, source=None) for s in no_source.segments))
    (problem,) = longform_problems([no_source])
    assert "untimed document" in problem and "--source" in problem


def test_eval_and_ingest_refuse_before_loading_anything(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_engine(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr("simul.runs.evaluation.Engine", no_engine)
    streams = tmp_path / "talks.jsonl"
    write_streams(streams, [without_segment_times(s) for s in read_streams(TALKS)])
    done = runner.invoke(app, eval_args(tiny_model, streams, "--out", str(tmp_path / "run")))
    text = " ".join(done.output.split())
    assert done.exit_code == 1, done.output
    assert "2 talks could be decoded but not scored" in text and "--segments YAML" in text
    assert not (tmp_path / "run" / "run.json").exists()
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text("", encoding="utf-8")
    done = runner.invoke(app, ingest_args("simulstream", outputs, streams, tmp_path / "ingested"))
    assert done.exit_code == 1 and "could be decoded but not scored" in " ".join(done.output.split())


def test_score_names_the_fix_for_a_run_whose_talks_lost_their_times(tmp_path: Path) -> None:
    run = write_longform_run(tmp_path / "run")
    assert runner.invoke(app, ["score", str(run)]).exit_code == 0
    streams_file = run / "streams.jsonl"
    header, *talks = streams_file.read_text(encoding="utf-8").splitlines()
    changed = []
    for line in talks:
        talk = json.loads(line)
        for seg in talk["segments"]:
            del seg["offset_ms"], seg["duration_ms"]
        changed.append(json.dumps(talk))
    streams_file.write_text("\n".join([header, *changed]) + "\n", encoding="utf-8")
    done = runner.invoke(app, ["score", str(run)])
    text = " ".join(done.output.split())
    assert done.exit_code == 1 and "could be decoded but not scored" in text and "--source" in text

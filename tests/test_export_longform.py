"""`simul export` of long-form runs (talks): OmniSTEval's long-form files and simulstream's log, read back by
`simul ingest` to the same talk-level outputs and word delays, and accepted by OmniSTEval itself."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from simul.cli import app
from simul.decoding.records import StepRecord, StreamResult
from simul.metrics.longform.delays import talk_from_records
from simul.request.methods import Method
from simul.runs.directory import STATUS_COMPLETE, RunWriter, load_run
from simul.streams.format import Segment, Step, Stream, read_streams, write_streams
from tests.ingested import ingest

runner = CliRunner()
TALKS = Path(__file__).resolve().parent / "data" / "longform" / "talks.jsonl"
TALK1 = "Hallo zusammen. Heute spreche ich über Streams. Sie sind lang."
TALK2 = "Vielen Dank. Auf Wiedersehen."
# per talk and method: the talk-level display after each step (one step per update) and its seconds
DISPLAYS: dict[str, dict[str, list[tuple[str, float]]]] = {
    "rt": {
        "talk1": [
            ("Hallo alle.", 0.15),
            ("Hallo zusammen. Heute", 0.2),
            ("Hallo zusammen. Heute spreche ich", 0.9),
            ("Hallo zusammen. Heute spreche ich über Streams.", 0.25),
            (TALK1, 0.3),
        ],
        "talk2": [("Danke", 0.1), ("Vielen Dank.", 0.2), (TALK2, 0.1)],
    },
    "ssbd-b0.2": {
        "talk1": [
            ("Hallo", 0.1),
            ("Hallo zusammen. Heute", 0.1),
            ("Hallo zusammen. Heute spreche ich", 0.1),
            ("Hallo zusammen. Heute spreche ich über Streams.", 0.1),
            (TALK1, 0.1),
        ],
        "talk2": [("Vielen", 0.05), ("Vielen Dank.", 0.05), (TALK2, 0.05)],
    },
}


def _common_prefix(a: str, b: str) -> int:
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return i


def untimed(stream: Stream) -> Stream:
    """The talk as a text document: no times on its steps or segments."""
    return Stream.talk(
        id=stream.id,
        src=stream.src,
        tgt=stream.tgt,
        steps=tuple(Step(source=s.source, final=s.final) for s in stream.steps),
        segments=tuple(Segment(references=g.references, source=g.source) for g in stream.segments),
    )


def write_longform_run(folder: Path, timed: bool = True) -> Path:
    """A long-form run directory as a long-form decoder writes it: one record per step of each talk, with
    talk-level outputs and the ``talk`` facts (elapsed_t = max(time_t, elapsed_(t-1)) + seconds_t; for text
    documents the cumulative seconds)."""
    streams = read_streams(TALKS) if timed else [untimed(s) for s in read_streams(TALKS)]
    methods = [Method(name="rt"), Method(name="ssbd", beta=0.2)]
    assert [m.key for m in methods] == list(DISPLAYS)
    run: dict[str, Any] = {
        "schema_version": 1,
        "tool": {"name": "simul", "version": "test"},
        "config": {
            "streams": {"path": str(TALKS), "count": len(streams), "src": "en", "tgt": "de"},
            "methods": [m.to_json() for m in methods],
            "model": {"name": "hand-made"},
            "ne_tokenizer": "word",
        },
    }
    writer = RunWriter.create(folder, run, streams, overwrite=False)
    for stream in streams:
        results = []
        for method in methods:
            records = []
            previous, elapsed = "", 0.0
            for index, (step, (display, seconds)) in enumerate(
                zip(stream.steps, DISPLAYS[method.key][stream.id], strict=True)
            ):
                elapsed = max(step.time_ms or 0.0, elapsed) + 1000 * seconds
                talk = {
                    "source_words": len(step.source.split()),
                    "emitted_ms": step.time_ms,
                    "elapsed_ms": elapsed,
                    "deleted": previous[_common_prefix(previous, display) :],
                    "committed_words": 0,
                    "committed_chars": 0,
                    "closed": [],
                    "open": [0, len(step.source.split())],
                    "prompt_tokens": 40,
                }
                records.append(
                    StepRecord(
                        step=index,
                        source=step.source,
                        final=step.final,
                        time_ms=step.time_ms,
                        prompt_tokens=40,
                        reused_tokens=0,
                        processed_tokens=40,
                        draft_tokens=0,
                        accepted=0,
                        output_ids=list(range(len(display.split()))),
                        output=display,
                        display=display,
                        accepted_chars=0,
                        stop="eog",
                        t_prompt=seconds / 2,
                        t_gen=seconds / 2,
                        talk=talk,
                    )
                )
                previous = display
            results.append(StreamResult(stream.id, method, records))
        writer.append(stream.id, results)
    run["status"] = STATUS_COMPLETE
    writer.run = run
    writer.save()
    return folder


def talks_of(run_dir: Path, key: str | None = None) -> dict[str, Any]:
    loaded = load_run(run_dir)
    key = key or loaded.methods[-1].key
    return {r.stream_id: talk_from_records(loaded.streams[r.stream_id], r.steps) for r in loaded.results[key]}


def export(run_dir: Path, fmt: str, *extra: str) -> str:
    result = runner.invoke(app, ["export", str(run_dir), "--format", fmt, *extra])
    assert result.exit_code == 0, result.output
    return result.output


def test_omnisteval_export_writes_what_omnisteval_longform_reads(tmp_path: Path) -> None:
    run = write_longform_run(tmp_path / "run")
    printed = " ".join(export(run, "omnisteval", "--out", str(tmp_path / "out")).split())
    folder = tmp_path / "out" / "rt"
    assert (tmp_path / "out" / "ssbd-b0.2" / "hypotheses.jsonl").is_file()  # every method
    assert f"omnisteval longform --speech_segmentation {folder}/segmentation.yaml" in printed
    lines = [json.loads(x) for x in (folder / "hypotheses.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(x["source"], x["prediction"]) for x in lines] == [("talk1.wav", TALK1), ("talk2.wav", TALK2)]
    # each word delayed to the update from which it stayed: "Hallo" from the first, "alle." was revised
    assert lines[0]["delays"] == [800, 1900, 1900, 2600, 2600, 3700, 3700, 5200, 5200, 5200]
    assert lines[0]["elapsed"] == [950, 2100, 2100, 3500, 3500, 3950, 3950, 5500, 5500, 5500]
    assert lines[1]["delays"] == [1500, 1500, 2600, 2600]
    assert lines[0]["source_length"] == 5600
    segmentation = yaml.safe_load((folder / "segmentation.yaml").read_text(encoding="utf-8"))
    assert [(s["wav"], s["offset"], s["duration"]) for s in segmentation][:2] == [
        ("talk1.wav", 0.0, 1.2),
        ("talk1.wav", 1.3, 2.6),
    ]
    references = (folder / "references.txt").read_text(encoding="utf-8").splitlines()
    assert references == [
        "Hallo zusammen.",
        "Heute spreche ich über Streams.",
        "Sie sind lang.",
        "Vielen Dank.",
        "Auf Wiedersehen.",
    ]


def test_omnisteval_export_ingests_back_to_the_same_outputs_and_delays(tmp_path: Path) -> None:
    run = write_longform_run(tmp_path / "run")
    export(run, "omnisteval")
    original = talks_of(run, "rt")
    back_dir = ingest("omnisteval", run / "omnisteval" / "rt" / "hypotheses.jsonl", TALKS, tmp_path / "back")
    back = talks_of(back_dir)
    for talk_id, talk in original.items():
        assert back[talk_id].prediction == talk.prediction
        assert back[talk_id].delays == talk.delays
        assert back[talk_id].elapsed == talk.elapsed
    final = {r.stream_id: r.steps[-1].display for r in load_run(back_dir).results["ext-hypotheses"]}
    assert final == {"talk1": TALK1, "talk2": TALK2}


def test_text_documents_export_in_source_words_and_ingest_back(tmp_path: Path) -> None:
    run = write_longform_run(tmp_path / "run", timed=False)
    export(run, "omnisteval", "--method", "rt")
    line = json.loads(
        (run / "omnisteval" / "rt" / "hypotheses.jsonl").read_text(encoding="utf-8").split("\n")[0]
    )
    assert line["timed"] is False
    assert line["delays"] == [2, 4, 4, 5, 5, 7, 7, 10, 10, 10]  # source words read when each word stayed
    documents = tmp_path / "documents.jsonl"
    write_streams(documents, [untimed(s) for s in read_streams(TALKS)])
    back_dir = ingest(
        "omnisteval", run / "omnisteval" / "rt" / "hypotheses.jsonl", documents, tmp_path / "back"
    )
    back = talks_of(back_dir)
    for talk_id, talk in talks_of(run, "rt").items():
        assert (back[talk_id].prediction, back[talk_id].delays) == (talk.prediction, talk.delays)
        assert back[talk_id].elapsed == talk.elapsed and not back[talk_id].timed


def test_simulstream_export_ingests_back_with_every_update(tmp_path: Path) -> None:
    run = write_longform_run(tmp_path / "run")
    printed = " ".join(export(run, "simulstream", "--method", "rt").split())
    folder = run / "simulstream" / "rt"
    assert not (run / "simulstream" / "ssbd-b0.2").exists()
    assert "--hypothesis_format simulstream" in printed
    assert yaml.safe_load((folder / "eval.yaml").read_text(encoding="utf-8")) == {
        "detokenizer_type": "simuleval",
        "latency_unit": "word",
    }
    log = [json.loads(x) for x in (folder / "log.jsonl").read_text(encoding="utf-8").splitlines()]
    assert log[0] == {"id": 0, "metadata": {"wav_name": "talk1.wav"}}
    assert log[2]["deleted_tokens"] == ["alle."] and log[2]["total_audio_processed"] == 1.9
    back_dir = ingest("simulstream", folder / "log.jsonl", TALKS, tmp_path / "back")
    original = load_run(run)
    loaded = load_run(back_dir)
    for mine, theirs in zip(original.results["rt"], loaded.results["ext-log"], strict=True):
        assert [s.display for s in theirs.steps] == [s.display for s in mine.steps]
        for a, b in zip(mine.steps, theirs.steps, strict=True):
            assert a.talk is not None and b.talk is not None
            assert b.talk["elapsed_ms"] == pytest.approx(a.talk["elapsed_ms"])
            for key in ("emitted_ms", "deleted", "source_words"):
                assert b.talk[key] == a.talk[key], key
    for talk_id, talk in talks_of(run, "rt").items():
        assert talks_of(back_dir)[talk_id].delays == talk.delays


def test_long_form_exports_refuse_what_they_cannot_write(tmp_path: Path) -> None:
    run = write_longform_run(tmp_path / "run")
    refused = runner.invoke(app, ["export", str(run), "--format", "simuleval"])
    assert refused.exit_code == 2 and "holds sentences" in " ".join(refused.output.split())
    refused = runner.invoke(app, ["export", str(run), "--format", "omnisteval", "--unit", "char"])
    assert refused.exit_code == 2 and "--unit applies to --format simulstream" in refused.output
    refused = runner.invoke(app, ["export", str(run), "--format", "omnisteval", "--method", "cd"])
    assert refused.exit_code == 1 and "has no method" in refused.output
    # a talk without times on its segments cannot be placed on the talk clock: refused, nothing written
    streams_file = run / "streams.jsonl"
    lines = streams_file.read_text(encoding="utf-8").splitlines()
    talk = json.loads(lines[1])
    for seg in talk["segments"]:
        del seg["offset_ms"], seg["duration_ms"]
    streams_file.write_text(lines[0] + "\n" + json.dumps(talk) + "\n", encoding="utf-8")
    refused = runner.invoke(app, ["export", str(run), "--format", "omnisteval"])
    assert refused.exit_code == 1, refused.output
    assert "the run has times but the segments do not" in " ".join(refused.output.split())
    assert not (run / "omnisteval" / "rt" / "hypotheses.jsonl").exists()
    sentences = Path(__file__).resolve().parent / "data" / "ingest"
    short = ingest(
        "simul", sentences / "simul_outputs.jsonl", sentences / "streams.jsonl", tmp_path / "short"
    )
    # a sentence-level run exports OmniSTEval's short-form instances instead (tests/test_degeneracy.py)
    done = runner.invoke(app, ["export", str(short), "--format", "omnisteval"])
    assert done.exit_code == 0, done.output
    assert list((short / "omnisteval").glob("*/instances.jsonl")) and "omnisteval shortform" in done.output


def _omnisteval() -> str:
    pytest.importorskip("omnisteval", reason="OmniSTEval is not installed (the dev extra)")
    found = shutil.which("omnisteval") or str(Path(sys.executable).with_name("omnisteval"))
    if not Path(found).exists():
        pytest.skip("the omnisteval command is not installed")
    return found


@pytest.mark.parametrize("fmt", ["omnisteval", "simulstream"])
def test_omnisteval_longform_accepts_the_export(fmt: str, tmp_path: Path) -> None:
    command = _omnisteval()
    run = write_longform_run(tmp_path / "run")
    export(run, fmt, "--method", "rt")
    folder = run / fmt / "rt"
    name = "command.txt" if fmt == "omnisteval" else "command.simulstream.txt"
    argv = (folder / name).read_text(encoding="utf-8").split()
    assert argv[:2] == ["omnisteval", "longform"]
    done = subprocess.run(
        [command, *argv[1:], "--output_folder", str(tmp_path / "scores")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    scores = (tmp_path / "scores" / "scores.tsv").read_text(encoding="utf-8")
    assert "BLEU" in scores and "LongYAAL (CU)" in scores
    # the command scores the export as simul scores the run (for the simulstream log too: it needs --lang)
    peer = {k: float(v) for k, v in (line.split("\t") for line in scores.splitlines()[1:])}
    scored = runner.invoke(app, ["score", str(run), "--json", "--quiet"])
    mine = next(m["metrics"] for m in json.loads(scored.stdout)["methods"] if m["key"] == "rt")
    assert peer["chrF"] == pytest.approx(mine["chrf"], abs=1e-3)
    assert peer["LongYAAL (CU)"] == pytest.approx(mine["long_yaal"], abs=1e-3)


def test_omnisteval_on_the_simulstream_log_gives_simuls_figures(tmp_path: Path) -> None:
    """The printed command on the simulstream log tokenizes as the JSONL's does (``--lang de``), so OmniSTEval
    re-segments as simul does and its figures are simul's (without ``--lang``, on an ACL 60/60 talk: chrF
    35.51 against 35.56, LongYAAL 2655 against 2133 ms)."""
    command = _omnisteval()
    run = write_longform_run(tmp_path / "run")
    export(run, "simulstream", "--method", "ssbd-b0.2")
    argv = (run / "simulstream" / "ssbd-b0.2" / "command.simulstream.txt").read_text(encoding="utf-8").split()
    assert argv[argv.index("--lang") + 1] == "de"
    subprocess.run([command, *argv[1:], "--output_folder", str(tmp_path / "s")], check=True, timeout=300)
    theirs = dict(
        line.split("\t")
        for line in (tmp_path / "s" / "scores.tsv").read_text(encoding="utf-8").splitlines()[1:]
    )
    result = runner.invoke(app, ["score", str(run), "--json", "-q"])
    assert result.exit_code == 0, result.output
    (ours,) = [m["metrics"] for m in json.loads(result.stdout)["methods"] if m["key"] == "ssbd-b0.2"]
    for key, name in (("chrf", "chrF"), ("bleu", "BLEU"), ("long_yaal", "LongYAAL (CU)")):
        assert ours[key] == pytest.approx(float(theirs[name]), abs=0.01), key
    assert ours["ca_long_yaal"] == pytest.approx(float(theirs["LongYAAL (CA)"]), abs=1.0)

"""`simul ingest` of long-form talks: OmniSTEval's JSONL, simulstream's log and SimulStreaming's output become
long-form run directories whose step records carry the talk-level texts and the ``talk`` facts the format
gives (hand-written fixtures in tests/data/longform, two talks of tests/data/longform/talks.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.decoding.records import TALK_KEYS
from tests.ingested import ingest, ingest_args

runner = CliRunner()
DATA = Path(__file__).resolve().parent / "data" / "longform"
TALKS = DATA / "talks.jsonl"
FIXTURES = {
    "omnisteval": DATA / "omnisteval.jsonl",
    "simulstream": DATA / "simulstream_talks.jsonl",
    "simulstreaming": DATA / "simulstreaming",
}
TALK1 = "Hallo zusammen. Heute spreche ich über Streams. Sie sind lang."
TALK2 = "Vielen Dank. Auf Wiedersehen."


def steps(run: Path) -> dict[str, list[dict[str, Any]]]:
    by_talk: dict[str, list[dict[str, Any]]] = {}
    for line in (run / "steps.jsonl").read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        by_talk.setdefault(obj["stream"], []).append(obj)
    return by_talk


def column(records: list[dict[str, Any]], key: str) -> list[Any]:
    return [r["talk"][key] for r in records]


@pytest.mark.parametrize("fmt", sorted(FIXTURES))
def test_each_long_form_format_gives_a_complete_run_that_score_reads(fmt: str, tmp_path: Path) -> None:
    out = ingest(fmt, FIXTURES[fmt], TALKS, tmp_path / "run")
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["status"] == "complete"
    assert run["config"]["ingest"]["format"] == fmt
    by_talk = steps(out)
    assert [r["display"] for r in (by_talk["talk1"][-1], by_talk["talk2"][-1])] == [TALK1, TALK2]
    for records in by_talk.values():
        assert records[-1]["final"] and not any(r["final"] for r in records[:-1])
        for record in records:
            assert set(record["talk"]) == set(TALK_KEYS)
            assert record["output_ids"] == []  # no model tokens: not invented
            for key in ("committed_words", "closed", "open", "prompt_tokens"):
                assert record["talk"][key] is None  # simul's own windows: not available
    rescored = runner.invoke(app, ["score", str(out), "--comet-model", "none", "--json", "--quiet"])
    assert rescored.exit_code == 0, rescored.output


def test_omnisteval_jsonl_becomes_one_update_per_emission_time(tmp_path: Path) -> None:
    talk1 = steps(ingest("omnisteval", FIXTURES["omnisteval"], TALKS, tmp_path / "run"))["talk1"]
    assert [r["display"] for r in talk1] == [
        "Hallo zusammen.",
        "Hallo zusammen. Heute spreche",
        "Hallo zusammen. Heute spreche ich",
        "Hallo zusammen. Heute spreche ich über Streams.",
        TALK1,
    ]
    assert column(talk1, "emitted_ms") == [1000.0, 2100.0, 2800.0, 3900.0, 5400.0]
    assert column(talk1, "elapsed_ms") == [1300.0, 2450.0, 3200.0, 4300.0, 5900.0]
    # the transcript known at each emission time (steps at 800, 1900, 2600, 3700, 5200 ms)
    assert column(talk1, "source_words") == [2, 4, 5, 7, 10]
    assert column(talk1, "deleted") == [None] * 5  # append-only: revisions are not recorded
    run = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert "revisions" in run["config"]["ingest"]["not_available"]


def test_omnisteval_jsonl_without_elapsed_has_no_computation_aware_times(tmp_path: Path) -> None:
    lines = [json.loads(x) for x in FIXTURES["omnisteval"].read_text(encoding="utf-8").splitlines()]
    for obj in lines:
        del obj["elapsed"]
    path = tmp_path / "hyp.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in lines), encoding="utf-8")
    by_talk = steps(ingest("omnisteval", path, TALKS, tmp_path / "run"))
    assert column(by_talk["talk2"], "elapsed_ms") == [None, None]
    assert column(by_talk["talk2"], "emitted_ms") == [1600.0, 2800.0]


def test_simulstream_long_form_log_keeps_revisions_and_derives_elapsed(tmp_path: Path) -> None:
    talk1 = steps(ingest("simulstream", FIXTURES["simulstream"], TALKS, tmp_path / "run"))["talk1"]
    assert [r["display"] for r in talk1][:2] == ["Hallo alle.", "Hallo zusammen. Heute"]
    assert column(talk1, "deleted") == ["", "alle.", "", "", ""]
    assert column(talk1, "emitted_ms") == [800.0, 1900.0, 2600.0, 3700.0, 5200.0]
    # elapsed_t = max(time_t, elapsed_(t-1)) + computation_time_t (0.2, 0.25, 0.3, 0.2, 0.4 s)
    assert column(talk1, "elapsed_ms") == [1000.0, 2150.0, 2900.0, 3900.0, 5600.0]
    assert column(talk1, "committed_chars") == [None] * 5


def test_simulstreaming_display_is_confirmed_so_far_plus_unconfirmed(tmp_path: Path) -> None:
    by_talk = steps(ingest("simulstreaming", FIXTURES["simulstreaming"], TALKS, tmp_path / "run"))
    talk1 = by_talk["talk1"]
    assert [r["display"] for r in talk1] == [
        "Hallo alle.",
        "Hallo zusammen. Heute ich",
        "Hallo zusammen. Heute spreche ich",
        "Hallo zusammen. Heute spreche ich über Streams.",
        TALK1,
        TALK1,  # is_final: the unconfirmed rest is confirmed, the text stays
    ]
    assert [r["output"] for r in talk1] == [r["display"] for r in talk1]
    confirmed = ["", "Hallo", "Hallo zusammen. Heute", "Hallo zusammen. Heute spreche ich"]
    confirmed += ["Hallo zusammen. Heute spreche ich über Streams.", TALK1]
    assert column(talk1, "committed_chars") == [len(c) for c in confirmed]
    assert all(r["display"].startswith(c) for r, c in zip(talk1, confirmed, strict=True))
    assert column(talk1, "deleted") == ["", "alle.", "ich", "", "", ""]
    assert column(talk1, "emitted_ms") == [800.0, 1900.0, 2600.0, 3700.0, 5200.0, 5200.0]
    assert column(talk1, "elapsed_ms") == [None] * 6  # the output records no computation time
    run = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert "timing" in run["config"]["ingest"]["not_available"]


def test_simulstreaming_single_file_joins_by_name_or_to_the_only_talk(tmp_path: Path) -> None:
    by_talk = steps(
        ingest("simulstreaming", FIXTURES["simulstreaming"] / "talk2.jsonl", TALKS, tmp_path / "a")
    )
    assert list(by_talk) == ["talk2"]
    one_talk = tmp_path / "one.jsonl"
    one_talk.write_text(TALKS.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    renamed = tmp_path / "output-llm.jsonl"
    renamed.write_bytes((FIXTURES["simulstreaming"] / "talk1.jsonl").read_bytes())
    assert list(steps(ingest("simulstreaming", renamed, one_talk, tmp_path / "b"))) == ["talk1"]


def _write(tmp_path: Path, name: str, source: Path, line: int, change: dict[str, Any] | str) -> Path:
    lines = source.read_text(encoding="utf-8").splitlines()
    if isinstance(change, str):
        lines[line - 1] = change
    else:
        obj = json.loads(lines[line - 1])
        for key, value in change.items():
            if value is None:
                obj.pop(key, None)
            else:
                obj[key] = value
        lines[line - 1] = json.dumps(obj, ensure_ascii=False)
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


OMNI = FIXTURES["omnisteval"]
SS1 = FIXTURES["simulstreaming"] / "talk1.jsonl"
BAD: list[tuple[str, Path, str, int, dict[str, Any] | str, str]] = [
    ("omnisteval", OMNI, "hyp.jsonl", 2, {"delays": [1600, 2800]}, "4 word units but there are 2 delays"),
    ("omnisteval", OMNI, "hyp.jsonl", 1, {"elapsed": [1]}, "10 word units but there are 1 elapsed"),
    ("omnisteval", OMNI, "hyp.jsonl", 1, {"source": "other.wav"}, "talk 'other' is not a stream id"),
    (
        "omnisteval",
        OMNI,
        "hyp.jsonl",
        1,
        {"prediction": None},
        "'prediction' (the talk's output text) is missing or not a string",
    ),
    ("omnisteval", OMNI, "hyp.jsonl", 2, {"delays": None}, "no 'delays'"),
    ("omnisteval", OMNI, "hyp.jsonl", 2, {"delays": [1, -2, 3, 4]}, "'delays' must be 0 or more"),
    ("omnisteval", OMNI, "hyp.jsonl", 2, {"delays": [1, "2", 3, 4]}, "must be a list of finite numbers"),
    ("omnisteval", OMNI, "hyp.jsonl", 2, '{"source": "talk2.wav", ', "not JSON"),
    ("simulstreaming", SS1, "talk1.jsonl", 5, {"emission_time": 1.0}, "'emission_time' goes backwards"),
    ("simulstreaming", SS1, "talk1.jsonl", 3, {"status": "DONE"}, "'status' must be INCOMPLETE or COMPLETE"),
    ("simulstreaming", SS1, "talk1.jsonl", 2, {"text": 3}, "'text' must be a string"),
    (
        "simulstreaming",
        SS1,
        "talk1.jsonl",
        1,
        '{"start": 0.3, "end": 0.8, "text": " Hello", "words": [], "is_final": false, "emission_time": 0.8}',
        "this looks like Whisper's (ASR) output",
    ),
]


@pytest.mark.parametrize(("fmt", "source", "name", "line", "change", "message"), BAD)
def test_bad_input_names_file_line_and_writes_nothing(
    fmt: str, source: Path, name: str, line: int, change: dict[str, Any] | str, message: str, tmp_path: Path
) -> None:
    path = _write(tmp_path, name, source, line, change)
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        [
            "ingest",
            str(path),
            "--format",
            fmt,
            "--streams",
            str(TALKS),
            "--out",
            str(out),
            "--comet-model",
            "none",
        ],
    )
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert message in text
    assert f"{name}:{line}" in text
    assert "Traceback" not in result.output
    assert not out.exists()  # nothing half-written


def _refused(tmp_path: Path, path: Path, fmt: str, streams: Path, *extra: str, code: int = 1) -> str:
    """The message of an ingest that is refused with exit ``code`` (1: a file's content, 2: usage)."""
    out = tmp_path / "run"
    result = runner.invoke(app, ingest_args(fmt, path, streams, out, *extra))
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert not out.exists()
    return " ".join(result.output.split())


def test_whole_file_problems_are_refused_with_the_fix(tmp_path: Path) -> None:
    some = _write(tmp_path, "some.jsonl", OMNI, 2, {"elapsed": None})
    assert "'elapsed' is on 1 of 2 talks" in _refused(tmp_path, some, "omnisteval", TALKS)
    unknown = tmp_path / "lecture.jsonl"
    unknown.write_bytes(SS1.read_bytes())
    assert "name it <talk id>.jsonl" in _refused(tmp_path, unknown, "simulstreaming", TALKS)
    assert "--unit does not apply" in _refused(
        tmp_path, SS1, "simulstreaming", TALKS, "--unit", "word", code=2
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no .jsonl files" in _refused(tmp_path, empty, "simulstreaming", TALKS)
    # a sentence-level stream file: these formats read whole talks
    sentences = Path(__file__).resolve().parent / "data" / "ingest" / "timed_streams.jsonl"
    sentence_id = json.loads(sentences.read_text(encoding="utf-8").splitlines()[0])["id"]
    as_sentence = tmp_path / f"{sentence_id}.jsonl"
    as_sentence.write_bytes(SS1.read_bytes())
    assert "is not long-form" in _refused(tmp_path, as_sentence, "simulstreaming", sentences)
    line = _write(tmp_path, "hyp.jsonl", OMNI, 1, {"source": f"{sentence_id}.wav"})
    assert "is not long-form" in _refused(tmp_path, line, "omnisteval", sentences)


def test_updates_that_do_not_fall_on_the_stream_steps_read_back(tmp_path: Path) -> None:
    # a sentence-level simulstream log with one update more than its stream has steps: the run's copy of the
    # stream has one step per update, so `simul score` reads the run back to the same figures
    sentences = Path(__file__).resolve().parent / "data" / "ingest"
    lines = (sentences / "simulstream_metrics.jsonl").read_text(encoding="utf-8").splitlines()
    first = next(i for i, line in enumerate(lines) if "generated_tokens" in line)
    extra = json.loads(lines[first])
    extra.update(total_audio_processed=1.2, generated_tokens=[], deleted_tokens=[])
    log = tmp_path / "log.jsonl"
    log.write_text(
        "\n".join([*lines[: first + 1], json.dumps(extra), *lines[first + 1 :]]) + "\n", encoding="utf-8"
    )
    out = ingest("simulstream", log, sentences / "timed_streams.jsonl", tmp_path / "run")
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    stream = json.loads((out / "streams.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert [s["time_ms"] for s in stream["steps"]] == [800.0, 1200.0, 1600.0, 2500.0]
    rescored = runner.invoke(app, ["score", str(out), "--comet-model", "none", "--json", "--quiet"])
    assert rescored.exit_code == 0, rescored.output
    assert json.loads(rescored.stdout)["methods"][0]["metrics"] == run["methods"][0]["metrics"]

"""`simul ingest`: other systems' outputs become complete run directories that every command reads."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from simul.cli import app
from simul.common.errors import SimulError
from simul.common.languages import get_language
from simul.request.templates import get_template
from simul.runs.ingest.ssbd_ref import prompt_halves
from simul.streams.format import read_streams
from tests.ingested import DATA, FIXTURES, ingest, ingest_args, ingest_fixture, metrics

runner = CliRunner()


@pytest.mark.parametrize("fmt", sorted(FIXTURES))
def test_every_format_gives_a_complete_run_that_score_reproduces(fmt: str, tmp_path: Path) -> None:
    out = ingest_fixture(fmt, tmp_path / "run", "--ne-tokenizer", "word")
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["status"] == "complete"
    assert run["config"]["ingest"]["format"] == fmt
    assert [m["key"] for m in run["methods"]] == [f"ext-{Path(FIXTURES[fmt][0]).stem}"]
    rescored = runner.invoke(app, ["score", str(out), "--comet-model", "none", "--json", "--quiet"])
    assert rescored.exit_code == 0, rescored.output
    assert json.loads(rescored.stdout)["methods"][0]["metrics"] == run["methods"][0]["metrics"]


def test_fields_a_format_lacks_are_not_available_never_zero(tmp_path: Path) -> None:
    ssbd = metrics(ingest_fixture("ssbd-ref", tmp_path / "ssbd"))
    for name in ("ad", "ao", "tps", "speedup", "p50_update_ms", "latency_ca", "ideal_speedup"):
        assert ssbd[name] is None, name
    assert ssbd["ne"] is not None and ssbd["latency"] is not None
    simuleval = metrics(ingest_fixture("simuleval", tmp_path / "se"))
    assert simuleval["ne"] is None and simuleval["ne_display"] is None  # append-only: no revisions
    assert simuleval["latency"] is not None
    timed = metrics(ingest_fixture("simulstream", tmp_path / "ss"))
    assert timed["p50_update_ms"] == pytest.approx(150.0)  # computation_time 0.12, 0.15, 0.2 s
    assert timed["latency_ca"] is not None and timed["tps"] is None
    per_stream = (tmp_path / "ssbd" / "per_stream.jsonl").read_text(encoding="utf-8").splitlines()
    assert all(json.loads(line)["accepted"] is None for line in per_stream)


def test_ssbd_reference_output_figures_by_hand(tmp_path: Path) -> None:
    # s1: outputs of 3, 6, 8 and 11 words, the last erases "planen" (1 word); s2 erases nothing (9 words)
    m = metrics(ingest_fixture("ssbd-ref", tmp_path / "run", "--ne-tokenizer", "word"))
    assert m["ne"] == pytest.approx(round(1 / 20, 4))
    assert m["ne_mean"] == pytest.approx(round((1 / 11 + 0) / 2, 4))
    # s1 delays 3,3,3,6,6,6,9,12,...; |X| = 12, |Y| = |Y*| = 11; s2 delays 3,3,3,6,6,6,9,9,9, |X| = 9
    s1 = (48 - 28 * 12 / 11) / 8
    s2 = (36 - 21) / 7
    assert m["latency"] == pytest.approx(round((s1 + s2) / 2, 4))


def test_simuleval_log_and_ssbd_output_of_the_same_outputs_agree(tmp_path: Path) -> None:
    ssbd = metrics(ingest_fixture("ssbd-ref", tmp_path / "a"))
    simuleval = metrics(ingest_fixture("simuleval", tmp_path / "b"))
    for name in ("bleu", "chrf", "latency", "al", "dal", "yaal"):
        assert ssbd[name] == simuleval[name], name


def test_ingested_runs_show_export_and_diff(tmp_path: Path) -> None:
    a = ingest_fixture("ssbd-ref", tmp_path / "a")
    b = ingest_fixture("simul", tmp_path / "b")
    shown = runner.invoke(app, ["show", str(a), "--stream", "s1"])
    assert shown.exit_code == 0, shown.output
    exported = runner.invoke(app, ["export", str(a), "--format", "simulstream"])
    assert exported.exit_code == 0, exported.output
    assert (a / "simulstream" / "ext-ssbd_ref_out" / "log.jsonl").exists()
    diffed = runner.invoke(app, ["diff", str(a), str(b), "--json"])
    assert diffed.exit_code == 0, diffed.output
    report = json.loads(diffed.stdout)
    assert report["methods"][0]["base"] == "ext-ssbd_ref_out"
    assert report["methods"][0]["new"] == "ext-simul_outputs"


def test_streams_export_writes_the_reference_stream_jsonl(tmp_path: Path) -> None:
    out = tmp_path / "stream.jsonl"
    done = runner.invoke(app, ["streams", "export", str(DATA / "streams.jsonl"), "-o", str(out)])
    assert done.exit_code == 0, done.output
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert records[0] == {
        "id": "s1",
        "source": "The weather is nice today and we plan to go hiking now.",
        "segmentation": {"policy": "interval", "n": 3},
        "stream_ins": [
            "The weather is",
            "The weather is nice today and",
            "The weather is nice today and we plan to",
            "The weather is nice today and we plan to go hiking now.",
        ],
    }
    # the README's record, answered with its own inputs, ingests against the same streams
    answered = tmp_path / "out.jsonl"
    answered.write_text(
        "".join(json.dumps({**r, "stream_outs": r["stream_ins"]}) + "\n" for r in records), encoding="utf-8"
    )
    ingest("ssbd-ref", answered, DATA / "streams.jsonl", tmp_path / "run")


BASELINE = Path(__file__).resolve().parent.parent / ".ci" / "baseline-tiny"


def _export_prompt(run_dir: Path, streams: Path, out: Path) -> Result:
    args = ["streams", "export", str(streams), "-o", str(out), "--prompt-of", str(run_dir)]
    return runner.invoke(app, args)


def test_streams_export_writes_the_runs_prompt_for_the_reference(tmp_path: Path) -> None:
    out = tmp_path / "stream.jsonl"
    done = _export_prompt(BASELINE, DATA / "streams.jsonl", out)
    assert done.exit_code == 0, done.output
    prefix = (tmp_path / "stream.prefix.txt").read_text(encoding="utf-8")
    suffix = (tmp_path / "stream.suffix.txt").read_text(encoding="utf-8")
    # the reference's prompt for every update, prefix + source + suffix, is the one simul decodes from
    template = get_template(json.loads((BASELINE / "run.json").read_text())["config"]["model"]["template"])
    for stream in read_streams(DATA / "streams.jsonl"):
        for step in stream.steps:
            rendered = template.render(get_language(stream.src), get_language(stream.tgt), step.source)
            assert prefix + step.source + suffix == rendered.text
    assert prefix.endswith("English: ") and suffix == "\nGerman:"
    assert "--no-escape" in done.output


def test_the_printed_recipe_keeps_a_chat_prompts_trailing_newline(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(BASELINE, run_dir)
    run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    chat = "<|im_start|>user\nEnglish: {source}\nGerman:<|im_end|>\n<|im_start|>assistant\n"
    run["config"]["model"]["prompt"] = chat
    (run_dir / "run.json").write_text(json.dumps(run), encoding="utf-8")
    out = tmp_path / "the reference's files" / "s.jsonl"  # a path the shell must be given quoted
    done = _export_prompt(run_dir, DATA / "streams.jsonl", out)
    assert done.exit_code == 0, done.output
    recipe = next(line.strip() for line in done.output.splitlines() if line.strip().startswith('P="$(cat'))
    shown = subprocess.run(
        ["bash", "-c", recipe + '; printf "%s" "$P"; printf "\\0"; printf "%s" "$S"'],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    prefix, suffix = chat.split("{source}")
    assert shown.split("\0") == [prefix, suffix]


def test_a_prompt_for_another_pair_or_without_one_source_is_refused(tmp_path: Path) -> None:
    zh = tmp_path / "zh.jsonl"
    zh.write_text(
        "".join(
            json.dumps({**json.loads(line), "tgt": "zh"}) + "\n"
            for line in (DATA / "streams.jsonl").read_text(encoding="utf-8").splitlines()
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out" / "stream.jsonl"
    refused = _export_prompt(BASELINE, zh, out)
    assert refused.exit_code == 1
    assert "holds en->zh but the prompt of" in refused.output and "is for en->de" in refused.output
    assert "Traceback" not in refused.output
    assert not out.parent.exists()  # nothing written
    for prompt in ("English: {source} {source}", "English:"):
        with pytest.raises(SimulError, match="not once"):
            prompt_halves(prompt, "run.json")


def _lines(name: str) -> list[str]:
    return (DATA / name).read_text(encoding="utf-8").splitlines()


def _broken(
    tmp_path: Path, name: str, line: int, change: dict[str, object] | None, raw: str | None = None
) -> Path:
    lines = _lines(name)
    if raw is not None:
        lines[line - 1] = raw
    else:
        obj = json.loads(lines[line - 1])
        assert change is not None
        for key, value in change.items():
            if value is None:
                obj.pop(key, None)
            else:
                obj[key] = value
        lines[line - 1] = json.dumps(obj, ensure_ascii=False)
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


CASES: list[tuple[str, str, int, dict[str, object] | str, str]] = [
    ("ssbd-ref", "ssbd_ref_out.jsonl", 2, '{"id": "s2", "stream_ins": [', "malformed JSON"),
    (
        "ssbd-ref",
        "ssbd_ref_out.jsonl",
        2,
        {"stream_outs": ["Wir haben jetzt"]},
        "3 stream_ins but 1 stream_outs",
    ),
    ("ssbd-ref", "ssbd_ref_out.jsonl", 1, {"id": "nope"}, "id 'nope' is not in"),
    ("ssbd-ref", "ssbd_ref_out.jsonl", 1, {"source": "Another sentence."}, "differs from the one in"),
    ("ssbd-ref", "ssbd_ref_out.jsonl", 2, {"stream_outs": None}, "no 'stream_outs'"),
    (
        "simulstream",
        "simulstream_metrics.jsonl",
        5,
        {"deleted_tokens": ["nicht", "da"]},
        "are not the last tokens",
    ),
    ("simulstream", "simulstream_metrics.jsonl", 2, {"metadata": {"wav": "x"}}, "metadata needs 'wav_name'"),
    ("simulstream", "simulstream_metrics.jsonl", 3, {"total_audio_processed": "soon"}, "must be a number"),
    ("simuleval", "simuleval_instances.log", 2, {"delays": [3, 3]}, "9 word units but there are 2 delays"),
    ("simuleval", "simuleval_instances.log", 1, {"source": "Unknown."}, "matches no stream"),
    ("simuleval", "simuleval_instances.log", 2, {"delays": [9, 3, 3, 6, 6, 6, 9, 9, 9]}, "go backwards"),
    ("simul", "simul_outputs.jsonl", 2, {"outputs": ["Wir"]}, "3 steps but 1 outputs"),
    ("simul", "simul_outputs.jsonl", 1, {"outputs": [1, 2, 3, 4]}, "must be a string or an object"),
]


@pytest.mark.parametrize(("fmt", "name", "line", "change", "message"), CASES)
def test_malformed_input_names_file_and_line(
    fmt: str, name: str, line: int, change: object, message: str, tmp_path: Path
) -> None:
    if isinstance(change, str):
        path = _broken(tmp_path, name, line, None, change)
    else:
        assert isinstance(change, dict)
        path = _broken(tmp_path, name, line, change)
    streams = DATA / ("timed_streams.jsonl" if fmt == "simulstream" else "streams.jsonl")
    out = tmp_path / "run"
    result = runner.invoke(app, ingest_args(fmt, path, streams, out))
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert message in text
    assert f"{path.name}:" in text
    assert "Traceback" not in result.output
    assert not (out / "run.json").exists()  # nothing half-written


def test_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "ingest",
            str(DATA / "streams.jsonl"),
            "--format",
            "xml",
            "--streams",
            str(DATA / "streams.jsonl"),
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 2
    assert "Invalid value for '--format'" in result.output and "'xml' is not one of" in result.output


def test_diff_notes_figures_in_different_units(tmp_path: Path) -> None:
    a = ingest_fixture("ssbd-ref", tmp_path / "a")
    b = ingest_fixture("simul", tmp_path / "b")
    run_file = a / "run.json"
    run = json.loads(run_file.read_text(encoding="utf-8"))
    del run["methods"][0]["counts"]["target_latency_unit"]  # as in runs written before units were recorded
    run_file.write_text(json.dumps(run), encoding="utf-8")
    diffed = runner.invoke(app, ["diff", str(a), str(b), "--json"])
    assert diffed.exit_code == 0, diffed.output
    notes = json.loads(diffed.stdout)["notes"]
    assert any("target_latency_unit unknown vs word" in note for note in notes)


@pytest.mark.parametrize(
    ("fixture", "streams"), [("ssbd-ref", "streams.jsonl"), ("simulstream", "timed_streams.jsonl")]
)
def test_exports_ingest_back_to_the_same_figures(fixture: str, streams: str, tmp_path: Path) -> None:
    run = ingest_fixture(fixture, tmp_path / "run", "--ne-tokenizer", "word")
    key = json.loads((run / "run.json").read_text(encoding="utf-8"))["methods"][0]["key"]
    original = metrics(run)
    for fmt, name in (("simulstream", "log.jsonl"), ("simuleval", "instances.log")):
        done = runner.invoke(app, ["export", str(run), "--format", fmt])
        assert done.exit_code == 0, done.output
        back = metrics(
            ingest(fmt, run / fmt / key / name, DATA / streams, tmp_path / fmt, "--ne-tokenizer", "word")
        )
        for metric in ("bleu", "chrf", "latency", "al", "dal", "yaal"):
            assert back[metric] == original[metric], (fmt, metric)
        if fmt == "simulstream":  # the log keeps revisions and update times
            assert back["ne_display"] == original["ne_display"]
            assert back["latency_ca"] == original["latency_ca"]

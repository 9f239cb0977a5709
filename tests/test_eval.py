"""`simul eval`, `score` and `export` end to end on the tiny model: run files, resume, rescoring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.decoding.engine import EngineSettings
from simul.metrics.registry import METRICS
from simul.request.methods import Method
from simul.runs.directory import STATUS_COMPLETE, STATUS_INTERRUPTED
from simul.runs.evaluation import EvalRequest, Interrupted, run_evaluation
from tests.helpers import eval_args, isa_flag_this_cpu_lacks, make_streams

runner = CliRunner()
QUALITY = [name for name, info in METRICS.items() if not info.timing]


def test_eval_json_and_run_directory(tiny_model: Path, streams_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        eval_args(tiny_model, streams_file, "--beta", "0.2", "--mask-k", "3", "--json", "--out", str(out)),
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [m["name"] for m in doc["methods"]] == ["rt", "ssbd"]
    ssbd = doc["methods"][1]
    assert (ssbd["beta"], ssbd["mask_k"], ssbd["mask"]) == (0.2, 3, "display")
    for key in ("comet", "bleu", "chrf", "ne", "ne_display", "ad", "ao", "tps", "speedup", "latency"):
        assert key in ssbd["metrics"]
    assert ssbd["metrics"]["comet"] is None and doc["comet"]["available"] is False
    assert doc["methods"][0]["metrics"]["speedup"] == 1.0
    assert 0 <= ssbd["metrics"]["ao"] <= ssbd["metrics"]["ad"] <= 100
    assert doc["run_dir"] == str(out)

    run = json.loads((out / "run.json").read_text())
    assert run["status"] == STATUS_COMPLETE and run["schema_version"] == 1
    assert run["config"]["model_sha256"] and run["config"]["streams"]["sha256"]
    assert run["environment"]["llama_cpp_python"]
    assert run["higher_is_better"]["ne"] is False and run["higher_is_better"]["chrf"] is True
    assert run["signatures"]["chrf"].startswith("nrefs:1")
    lines = (out / "steps.jsonl").read_text().splitlines()
    n_steps = sum(len(s.steps) for s in make_streams())
    assert len(lines) == 2 * n_steps
    first = json.loads(lines[0])
    for key in ("source", "output_ids", "output", "display", "draft_tokens", "accepted"):
        assert key in first
    assert not [key for key in first if key.startswith("t_")]  # wall-clock figures live in timings.jsonl
    assert list(first) == sorted(first)
    timing = json.loads((out / "timings.jsonl").read_text().splitlines()[0])
    assert {"method", "stream", "step", "t_prompt", "t_gen"} <= set(timing)
    assert (timing["method"], timing["stream"], timing["step"]) == (first["method"], first["stream"], 0)


def test_max_len_options_cap_every_update(tiny_model: Path, streams_file: Path, tmp_path: Path) -> None:
    """--max-len-ratio 0 --max-len-slack N: N tokens an update whatever the source (llama.cpp's -n N); the
    default cap (2 x source tokens + 10) lets the tiny model's outputs run longer."""
    lengths = {}
    for name, extra in (("capped", ["--max-len-ratio", "0", "--max-len-slack", "3"]), ("default", [])):
        out = tmp_path / name
        result = runner.invoke(
            app, eval_args(tiny_model, streams_file, "--beta", "0.2", "--out", str(out), *extra)
        )
        assert result.exit_code == 0, result.output
        rows = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
        lengths[name] = [len(row["output_ids"]) for row in rows]
        config = json.loads((out / "run.json").read_text())["config"]
        if name == "capped":
            assert (config["max_len_ratio"], config["max_len_slack"]) == (0.0, 3)
    assert max(lengths["capped"]) == 3 and 3 in lengths["capped"]
    assert max(lengths["default"]) > 3


def test_score_reproduces_eval(tiny_model: Path, streams_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    evaluated = runner.invoke(app, eval_args(tiny_model, streams_file, "--json", "--out", str(out)))
    assert evaluated.exit_code == 0, evaluated.output
    scored = runner.invoke(app, ["score", str(out), "--json", "--quiet"])
    assert scored.exit_code == 0, scored.output
    a = {m["key"]: m["metrics"] for m in json.loads(evaluated.stdout)["methods"]}
    b = {m["key"]: m["metrics"] for m in json.loads(scored.stdout)["methods"]}
    assert a == b


def test_interrupted_run_resumes_to_the_same_figures(
    tiny_model: Path, streams_file: Path, tmp_path: Path
) -> None:
    methods = [Method("rt"), Method("ssbd", beta=0.2)]
    settings = EngineSettings(model=tiny_model, n_ctx=1024, threads=2)

    def request(out: Path, resume: bool = False) -> EvalRequest:
        return EvalRequest(streams_file, methods, settings, out=out, resume=resume, comet_model="none")

    whole = run_evaluation(request(tmp_path / "whole"))

    def stop_after_two(done: int, total: int) -> None:
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(Interrupted) as stopped:
        run_evaluation(request(tmp_path / "cut"), progress=stop_after_two)
    assert stopped.value.outcome.streams_done == 2
    cut = json.loads((tmp_path / "cut" / "run.json").read_text())
    assert cut["status"] == STATUS_INTERRUPTED and "methods" not in cut
    # an interrupted run is refused by the commands that need a complete one
    refused = runner.invoke(app, ["score", str(tmp_path / "cut")])
    assert refused.exit_code == 1 and "not a complete run" in refused.output
    # simulate a write cut short by the interruption
    with (tmp_path / "cut" / "steps.jsonl").open("a") as handle:
        handle.write('{"method": "rt", "stream": "s2", "step": 0, "sou')

    resumed = run_evaluation(request(tmp_path / "cut", resume=True))
    assert resumed.complete and resumed.streams_done == len(make_streams())
    got = {r["key"]: {k: r["metrics"].get(k) for k in QUALITY} for r in resumed.scored.methods_json()}
    want = {r["key"]: {k: r["metrics"].get(k) for k in QUALITY} for r in whole.scored.methods_json()}
    assert got == want
    lines = (tmp_path / "cut" / "steps.jsonl").read_text().splitlines()
    assert len(lines) == len((tmp_path / "whole" / "steps.jsonl").read_text().splitlines())
    # the timings of the dropped tail went with it: one timing record per step record, in the same order
    timings = (tmp_path / "cut" / "timings.jsonl").read_text().splitlines()
    keys = [(o["method"], o["stream"], o["step"]) for o in map(json.loads, lines)]
    assert keys == [(o["method"], o["stream"], o["step"]) for o in map(json.loads, timings)]


def test_resume_refuses_other_settings(tiny_model: Path, streams_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert (
        runner.invoke(app, eval_args(tiny_model, streams_file, "--limit", "1", "--out", str(out))).exit_code
        == 0
    )
    again = runner.invoke(app, eval_args(tiny_model, streams_file, "--limit", "1", "--out", str(out)))
    assert again.exit_code == 1 and "already holds a run" in again.output
    other = runner.invoke(
        app,
        eval_args(tiny_model, streams_file, "--limit", "1", "--beta", "0.3", "--out", str(out), "--resume"),
    )
    assert other.exit_code == 2 and "cannot resume" in other.output


def test_resume_refuses_other_decoding_conditions(
    tiny_model: Path, streams_file: Path, tmp_path: Path
) -> None:
    """Streams decoded with another thread count, llama-cpp-python or instruction-set family would make a
    run that no single process gives: --resume refuses, naming what differs (exit 2)."""
    out = tmp_path / "run"
    # fast mode: there the thread count changes llama.cpp's sums (exact mode's rows do not depend on it)
    args = ("--limit", "2", "--threads", "2", "--no-exact", "--out", str(out))
    assert runner.invoke(app, eval_args(tiny_model, streams_file, *args)).exit_code == 0
    run = json.loads((out / "run.json").read_text())
    run["status"] = STATUS_INTERRUPTED
    (out / "run.json").write_text(json.dumps(run))

    def resume(*extra: str) -> tuple[int, str]:
        result = runner.invoke(app, eval_args(tiny_model, streams_file, *args, "--resume", *extra))
        return result.exit_code, " ".join(result.output.split())

    code, text = resume("--threads", "1")
    assert code == 2 and "config.threads was 2 when the run started and is 1 now" in text
    flag = isa_flag_this_cpu_lacks()
    for key, value, shown in (
        ("llama_cpp_python", "0.0.1", "environment.llama_cpp_python was 0.0.1"),
        ("cpu_isa", [*run["environment"]["cpu_isa"], flag], f"environment.cpu_isa was +{flag}"),
    ):
        edited = {**run, "environment": {**run["environment"], key: value}}
        (out / "run.json").write_text(json.dumps(edited))
        code, text = resume()
        assert code == 2 and shown in text, text
    # the same conditions: the run is finished
    (out / "run.json").write_text(json.dumps(run))
    code, text = resume()
    assert code == 0, text


def test_an_exact_run_resumes_on_another_thread_count(
    tiny_model: Path, streams_file: Path, tmp_path: Path
) -> None:
    """In exact mode a row's logits do not depend on how the threads share a pass: --resume takes the run."""
    out = tmp_path / "run"
    args = ("--limit", "2", "--threads", "2", "--exact", "--out", str(out))
    assert runner.invoke(app, eval_args(tiny_model, streams_file, *args)).exit_code == 0
    run = json.loads((out / "run.json").read_text())
    run["status"] = STATUS_INTERRUPTED
    (out / "run.json").write_text(json.dumps(run))
    again = runner.invoke(app, eval_args(tiny_model, streams_file, *args, "--resume", "--threads", "1"))
    assert again.exit_code == 0, again.output


def test_score_errors(tiny_model: Path, streams_file: Path, tmp_path: Path) -> None:
    missing = runner.invoke(app, ["score", str(tmp_path / "nope")])
    assert missing.exit_code == 1 and "does not exist" in missing.output
    out = tmp_path / "run"
    assert (
        runner.invoke(app, eval_args(tiny_model, streams_file, "--limit", "2", "--out", str(out))).exit_code
        == 0
    )
    unknown = runner.invoke(app, ["score", str(out), "--metric", "meteor"])
    assert unknown.exit_code == 2 and "unknown metric 'meteor'" in unknown.output
    only = runner.invoke(app, ["score", str(out), "--metric", "chrf", "--json", "--quiet"])
    assert only.exit_code == 0 and set(json.loads(only.stdout)["methods"][0]["metrics"]) == {"chrf"}
    steps = out / "steps.jsonl"
    text = steps.read_text()
    steps.write_text(text[: len(text) // 2])
    truncated = runner.invoke(app, ["score", str(out)])
    assert truncated.exit_code == 1 and "steps.jsonl:" in truncated.output


def test_comet_through_a_real_checkpoint(
    tiny_model: Path, streams_file: Path, tiny_comet: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        [
            "eval",
            "--model",
            str(tiny_model),
            "--streams",
            str(streams_file),
            "--comet-model",
            str(tiny_comet),
            "--require-comet",
            "--json",
            "--quiet",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["comet"]["available"] is True
    for method in doc["methods"]:
        assert isinstance(method["metrics"]["comet"], float)
    assert "model:" in doc["signatures"]["comet"]
    rows = [json.loads(x) for x in (out / "per_stream.jsonl").read_text().splitlines()]
    assert all(isinstance(r["comet"], float) for r in rows)
    rescored = runner.invoke(app, ["score", str(out), "--json", "--quiet"])
    assert rescored.exit_code == 0
    assert [m["metrics"]["comet"] for m in json.loads(rescored.stdout)["methods"]] == [
        m["metrics"]["comet"] for m in doc["methods"]
    ]


def test_require_comet_fails_clearly(tiny_model: Path, streams_file: Path) -> None:
    result = runner.invoke(
        app,
        [
            "eval",
            "--model",
            str(tiny_model),
            "--streams",
            str(streams_file),
            "--comet-model",
            "/no/such.ckpt",
            "--require-comet",
            "--quiet",
        ],
    )
    assert result.exit_code == 1 and "COMET is required" in result.output


def test_export_simuleval(tiny_model: Path, streams_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert runner.invoke(app, eval_args(tiny_model, streams_file, "--out", str(out))).exit_code == 0
    done = runner.invoke(app, ["export", str(out), "--format", "simuleval"])
    assert done.exit_code == 0, done.output
    log = out / "simuleval" / "ssbd-b0.2" / "instances.log"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(records) == len(make_streams())
    for record in records:
        assert len(record["delays"]) == record["prediction_length"] == len(record["prediction"].split())
        assert all(d <= record["source_length"] for d in record["delays"])
        assert record["delays"] == sorted(record["delays"])  # a token is final only after those before it
    bad = runner.invoke(app, ["export", str(out), "--format", "xml"])
    assert bad.exit_code == 2


def test_eval_bad_inputs(tiny_model: Path, streams_file: Path, tmp_path: Path) -> None:
    missing = runner.invoke(app, eval_args(tiny_model, tmp_path / "none.jsonl"))
    assert missing.exit_code == 1 and "does not exist" in missing.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "simul-stream", "version": 1, "id": "x"\n')
    malformed = runner.invoke(app, eval_args(tiny_model, bad))
    assert malformed.exit_code == 1 and "bad.jsonl:1" in malformed.output
    nomodel = runner.invoke(app, eval_args(tmp_path / "none.gguf", streams_file))
    assert nomodel.exit_code == 1 and "does not exist" in nomodel.output
    beta = runner.invoke(app, eval_args(tiny_model, streams_file, "--beta", "1.5"))
    assert beta.exit_code == 2 and "--beta" in beta.output
    small = runner.invoke(app, eval_args(tiny_model, streams_file, "--n-ctx", "64"))
    assert small.exit_code == 1 and "context window" in small.output

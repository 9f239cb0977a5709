"""Every figure of a run pinned: run.json's methods (metrics and counts), per_stream.jsonl's rows and the
signatures, recomputed from the tiny model's runs, must equal tests/data/figures/expected.json exactly.

The expected file was written by the scoring code before `method_report` was split by metric family (issue
32), so the split, and any later change, cannot move a figure unnoticed. The runs cover every path of the
scoring: short-form methods with mask-k (display and output), LocalAgreement and CD (a sweep), COMET (the
stub of tests.comet_stub, whose scores are a hash of the triple), a long-form talk (re-segmented quality and
latencies, the talk cost), and ingested runs whose records lack drafts, model tokens, revisions or timing.

The decoded outputs of the tiny model are the same on any CPU and thread count (simul.testing.code_machine);
the wall-clock times are not, so they are replaced by fixed ones before scoring (:func:`fixed_timings`), and
the timing figures (TPS, speedup, row cost, p50/p95, computation-aware latencies, cost growth) are pinned too.

A deliberate change of a figure rewrites the file (say in the commit which figures moved and why):
``SIMUL_WRITE_PINNED=1 pytest tests/test_figures_pinned.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.decoding.records import StepRecord, StreamResult
from simul.metrics.comet import load_comet
from simul.metrics.scoring import DEFAULT_RESEGMENT, not_available, score
from simul.runs.directory import load_run
from tests.comet_stub import CometStub
from tests.ingested import ingest_fixture

REPO = Path(__file__).resolve().parent.parent
EXPECTED = Path(__file__).resolve().parent / "data" / "figures" / "expected.json"
FLORES = REPO / "fixtures" / "streams" / "flores200-devtest-en-de-lag3.jsonl"
TALK = REPO / "fixtures" / "streams" / "acl6060-dev-110-first12-en-de-longform.jsonl"
WRITE = os.environ.get("SIMUL_WRITE_PINNED") == "1"

runner = CliRunner()


def _invoke(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output


def fixed_step_times(steps: list[StepRecord]) -> Iterator[StepRecord]:
    """The steps of one stream with made-up, fixed times in place of the measured ones: each a function of
    the step's counts, so that every figure built on time is reproducible. A talk's computation-aware clock
    (``talk["elapsed_ms"]``) follows its definition (simul.decoding.records) with these times."""
    elapsed = 0.0
    for step in steps:
        t_prompt = 0.001 * (1 + step.processed_tokens % 7)
        t_verify = 0.0003 * step.verify_rows
        t_decode = 0.002 * step.decode_passes
        t_gen = t_verify + t_decode + 0.0001 * (1 + step.step % 3)
        talk = step.talk
        if talk is not None:
            elapsed = max(step.time_ms or 0.0, elapsed) + 1000.0 * (t_prompt + t_gen)
            talk = {**talk, "elapsed_ms": round(elapsed, 3)}
        yield replace(
            step,
            t_prompt=t_prompt,
            t_gen=t_gen,
            t_prompt_eval=0.8 * t_prompt,
            t_verify=t_verify,
            t_decode=t_decode,
            talk=talk,
        )


def fixed_timings(results: dict[str, list[StreamResult]]) -> dict[str, list[StreamResult]]:
    return {
        key: [replace(r, steps=list(fixed_step_times(r.steps))) for r in rs] for key, rs in results.items()
    }


def figures(run_dir: Path, comet_model: str, measured: bool = True) -> dict[str, Any]:
    """What `simul score` computes from a run directory, as plain JSON (times fixed when ``measured``)."""
    loaded = load_run(run_dir)
    config = loaded.run["config"]
    comet, reason = load_comet(comet_model)
    scored = score(
        loaded.methods,
        fixed_timings(loaded.results) if measured else loaded.results,
        loaded.streams,
        config["ne_tokenizer"],
        [comet],
        reason,
        not_available(loaded.run),
        resegment=config.get("resegment", DEFAULT_RESEGMENT),
    )
    obj = {
        "methods": scored.methods_json(),
        "per_stream": scored.per_stream_rows(),
        "signatures": scored.signatures,
    }
    # what run.json and per_stream.jsonl would hold, floats as JSON writes them; the COMET stub's path (in
    # its signature) is the test's temporary folder
    text = json.dumps(obj, ensure_ascii=False, sort_keys=True)
    if comet_model != "none":
        text = text.replace(comet_model, "<comet stub>")
    loaded_back: dict[str, Any] = json.loads(text)
    return loaded_back


def differences(expected: Any, got: Any, where: str = "") -> list[str]:
    if isinstance(expected, dict) and isinstance(got, dict):
        out = [f"{where}.{k}: missing" for k in expected if k not in got]
        out += [f"{where}.{k}: not expected" for k in got if k not in expected]
        for key in expected.keys() & got.keys():
            out += differences(expected[key], got[key], f"{where}.{key}")
        return out
    if isinstance(expected, list) and isinstance(got, list) and len(expected) == len(got):
        pairs = enumerate(zip(expected, got, strict=True))
        return [d for i, (e, g) in pairs for d in differences(e, g, f"{where}[{i}]")]
    return [] if expected == got else [f"{where}: expected {expected!r}, got {got!r}"]


@pytest.fixture
def runs(tiny_model: Path, tmp_path: Path, comet_stub: CometStub) -> dict[str, dict[str, Any]]:
    """The figures of each run, by name."""
    common = ["--model", str(tiny_model), "--threads", "2", "--quiet"]
    stub = str(comet_stub.path)
    sweep = tmp_path / "sweep"
    _invoke(
        [
            "sweep",
            *common,
            "--streams",
            str(FLORES),
            "--limit",
            "3",
            "--beta",
            "0,0.2",
            "--mask-k",
            "0,3",
            "--local-agreement",
            "2",
            "--comet-model",
            stub,
            "--out",
            str(sweep),
        ]
    )
    talk = tmp_path / "talk"
    _invoke(["eval", *common, "--streams", str(TALK), "--comet-model", stub, "--out", str(talk)])
    out = {"sweep": figures(sweep, stub), "talk": figures(talk, stub)}
    for fmt in ("simuleval", "simulstream", "ssbd-ref"):
        out[f"ingest-{fmt}"] = figures(ingest_fixture(fmt, tmp_path / fmt), "none", measured=False)
    return out


def test_every_figure_is_pinned(runs: dict[str, dict[str, Any]]) -> None:
    if WRITE:
        EXPECTED.parent.mkdir(parents=True, exist_ok=True)
        EXPECTED.write_text(json.dumps(runs, ensure_ascii=False, sort_keys=True, indent=1) + "\n", "utf-8")
        pytest.skip(f"wrote {EXPECTED}")
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
    problems = differences(expected, runs)
    assert not problems, f"{len(problems)} figures moved:\n" + "\n".join(sorted(problems)[:40])

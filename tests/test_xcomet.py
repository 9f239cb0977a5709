"""XCOMET through unbabel-comet's XCOMETMetric in simul's child process (issue 41), on the tiny XCOMET that
``python -m simul.testing.tiny_xcomet`` builds offline: the scores, the error spans and the 512-token
truncation per segment, for sentence-level runs, runs of whole talks and ingested systems; the free-memory
check before loading; and a fake out-of-memory kill of the child (simul.testing.kill), which leaves the run
``scoring_failed`` for `simul score` to finish."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import SimulError
from simul.machine.memory import GIB, MemoryReading
from simul.metrics import comet_model
from simul.metrics.comet import load_comet
from simul.metrics.xcomet import XcometScorer
from simul.metrics.xcomet_worker import truncation
from simul.runs.directory import ERROR_SPANS_FILE, read_error_spans
from simul.testing.kill import KILL_ENV
from tests.helpers import eval_args
from tests.ingested import ingest

runner = CliRunner()
REPO = Path(__file__).resolve().parent.parent
TALK = REPO / "fixtures" / "streams" / "acl6060-dev-110-first12-en-de-longform.jsonl"
LONGFORM_DATA = Path(__file__).parent / "data" / "longform"
SEVERITIES = {"minor", "major", "critical"}

TRIPLES = [
    ("The cat sat on the mat.", "Die Katze saß auf der Matte und der Hund.", "Die Katze saß auf der Matte."),
    (
        "We now have 4-month-old mice that are non-diabetic.",
        "Wir haben jetzt vier Monate alte Mäuse, die nicht diabetisch sind.",
        "Wir haben jetzt 4 Monate alte Mäuse, die keine Diabetes haben.",
    ),
]


def _run(path: Path) -> dict[str, Any]:
    return dict(json.loads((path / "run.json").read_text(encoding="utf-8")))


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (path / "per_stream.jsonl").read_text(encoding="utf-8").splitlines()]


def _xcomet_eval(model: Path, streams: Path, xcomet: Path, out: Path, *extra: str) -> Any:
    return runner.invoke(
        app,
        [
            *eval_args(model, streams, "--threads", "2", "--out", str(out), *extra),
            "--comet-model",
            str(xcomet),
        ],
    )


def _check_spans(line: dict[str, Any]) -> None:
    for span in line["spans"]:
        assert span["severity"] in SEVERITIES
        assert 0 <= span["start"] <= span["end"] <= len(line["hypothesis"])


def test_the_tiny_xcomet_loads_through_the_xcomet_class_with_spans(tiny_xcomet: Path) -> None:
    hparams = (tiny_xcomet / "hparams.yaml").read_text(encoding="utf-8")
    assert "class_identifier: xcomet_metric" in hparams and "encoder_model: XLM-RoBERTa-XL" in hparams
    scorer, reason = load_comet(str(tiny_xcomet), 4)
    assert reason is None and isinstance(scorer, XcometScorer) and scorer.kind == "xcomet"
    assert scorer.max_tokens == 512  # XLM-RoBERTa's 514 positions less 2, as XCOMET-XL
    sources, outputs, references = (list(x) for x in zip(*TRIPLES, strict=True))
    first = scorer.score(sources, outputs, references)
    again = scorer.score(sources, outputs, references)
    assert first.segments == again.segments  # deterministic, from one loaded model
    assert first.kind == "xcomet" and first.details is not None and len(first.details) == 2
    assert first.system == pytest.approx(sum(first.segments) / 2)
    assert first.segments[0] != first.segments[1]
    spans = [span for detail in first.details for span in detail.spans]
    assert spans, "the tiny model tags some tokens as errors"
    for detail, hyp in zip(first.details, outputs, strict=True):
        _check_spans({"spans": detail.spans, "hypothesis": hyp})
        assert not detail.truncated and detail.tokens["mt"] > 2
    scorer.close()


def test_a_segment_past_512_tokens_is_reported_truncated(tiny_xcomet: Path) -> None:
    scorer, _ = load_comet(str(tiny_xcomet), 4)
    assert isinstance(scorer, XcometScorer)
    long_mt = " ".join(["Katze"] * 600)  # one token per word in the tiny vocabulary, plus <s> and </s>
    scores = scorer.score(["short", "a b"], [long_mt, "kurz"], ["kurz", "c d"])
    assert scores.details is not None
    cut, kept = scores.details
    assert cut.truncated and cut.tokens["mt"] > 510
    assert not kept.truncated
    scorer.close()


class _Encoder:
    """A stand-in encoder with XLM-R's limits, whose tokenizer gives each text as many tokens as its words
    plus <s> and </s>: to check the truncation rule by hand."""

    max_positions = 512
    size_separator = 2

    def tokenizer(self, texts: list[str], **_: Any) -> dict[str, list[list[int]]]:
        return {"input_ids": [[0] * (len(t.split()) + 2) for t in texts]}


class _Model:
    encoder = _Encoder()


@pytest.mark.parametrize(
    ("mt", "src", "ref", "cut"),
    [
        (500, 1, 1, False),  # 502 + 3 + 3 tokens: joined without specials 500 + 1 + 1 = 502 <= 505
        (503, 1, 1, False),  # 505 <= 512 - (1 + 3 * 2)
        (503, 2, 1, True),  # 506 > 505: the joined input is cut
        (509, 0, 0, True),  # alone 511 > 510: the hypothesis itself is cut
        (508, 0, 0, True),  # alone 510 (fits), joined 508 > 505
        (200, 200, 105, False),  # 505
        (200, 200, 106, True),
    ],
)
def test_truncation_follows_unbabel_comets_rule(mt: int, src: int, ref: int, cut: bool) -> None:
    data = [{"mt": "w " * mt, "src": "w " * src, "ref": "w " * ref}]
    [(truncated, tokens)] = truncation(_Model(), data)
    assert truncated is cut
    assert tokens == {"mt": mt + 2, "src": src + 2, "ref": ref + 2}


def test_short_form_eval_scores_xcomet_with_spans_that_show_displays(
    tiny_model: Path, streams_file: Path, tiny_xcomet: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    result = _xcomet_eval(tiny_model, streams_file, tiny_xcomet, out)
    assert result.exit_code == 0, result.output
    run = _run(out)
    assert run["status"] == "complete"
    assert run["comet"]["kind"] == "xcomet" and run["comet"]["available"]
    assert run["signatures"]["xcomet"].startswith(f"model:{tiny_xcomet}|batch:16|version:")
    rows = _rows(out)
    lines = read_error_spans(out)
    assert len(lines) == len(rows) == 8  # RT and SSBD, 4 streams
    for method in run["methods"]:
        own = [r for r in rows if r["method"] == method["key"]]
        assert method["metrics"]["comet"] is None
        assert method["metrics"]["xcomet"] == pytest.approx(
            sum(r["xcomet"] for r in own) / len(own), abs=1e-3
        )
        assert method["counts"]["xcomet_truncated"] == 0 and method["counts"]["xcomet_max_tokens"] == 512
    steps = [json.loads(x) for x in (out / "steps.jsonl").read_text(encoding="utf-8").splitlines()]
    finals = {(s["method"], s["stream"]): s["output"] for s in steps if s["final"]}
    by_key = {(r["method"], r["stream"]): r for r in rows}
    for line in lines:
        assert line["segment"] is None and line["truncated"] is False
        assert line["hypothesis"] == finals[(line["method"], line["stream"])]
        assert line["xcomet"] == by_key[(line["method"], line["stream"])]["xcomet"]
        _check_spans(line)
    assert any(line["spans"] for line in lines)

    shown = runner.invoke(app, ["show", str(out), "--stream", "s1", "--html", str(tmp_path / "s1.html")])
    assert shown.exit_code == 0, shown.output
    assert "XCOMET error spans: s1" in shown.output
    page = (tmp_path / "s1.html").read_text(encoding="utf-8")
    assert "<h2>XCOMET error spans</h2>" in page
    marked = [x for x in lines if x["stream"] == "s1" and x["spans"]]
    if marked:  # the first span of s1, marked with its severity class in the page
        span = marked[0]["spans"][0]
        assert f'class="{span["severity"]}"' in page

    # simul score recomputes the same figures; without XCOMET the span file goes away with --update
    rescored = runner.invoke(app, ["score", str(out), "--json", "--quiet"])
    assert rescored.exit_code == 0, rescored.output
    again = json.loads(rescored.stdout)
    assert [m["metrics"]["xcomet"] for m in again["methods"]] == [
        m["metrics"]["xcomet"] for m in run["methods"]
    ]
    dropped = runner.invoke(app, ["score", str(out), "--comet-model", "none", "--update", "--quiet"])
    assert dropped.exit_code == 0, dropped.output
    assert not (out / ERROR_SPANS_FILE).exists()
    assert all("xcomet" not in m["metrics"] for m in _run(out)["methods"])


def test_long_form_runs_are_scored_on_the_resegmented_segments(
    tiny_model: Path, tiny_xcomet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "talk"
    result = _xcomet_eval(tiny_model, TALK, tiny_xcomet, out, "--beta", "0.2", "--max-window", "12")
    assert result.exit_code == 0, result.output
    run = _run(out)
    rows = _rows(out)
    lines = read_error_spans(out)
    for method in run["methods"]:
        segments = [seg for r in rows if r["method"] == method["key"] for seg in r["segments"]]
        assert len(segments) == 12 and all(seg["comet"] is None for seg in segments)
        mean = sum(seg["xcomet"] for seg in segments) / len(segments)
        assert method["metrics"]["xcomet"] == pytest.approx(mean, abs=1e-3)
        own = sorted((x for x in lines if x["method"] == method["key"]), key=lambda x: x["segment"])
        assert [x["segment"] for x in own] == list(range(12))
        assert [x["hypothesis"] for x in own] == [seg["hypothesis"] for seg in segments]
        assert [x["xcomet"] for x in own] == pytest.approx([seg["xcomet"] for seg in segments], abs=1e-4)
        for line in own:
            _check_spans(line)
    shown = runner.invoke(app, ["show", str(out), "--stream", "acl6060-dev-2022.acl-long.110"])
    assert shown.exit_code == 0 and "XCOMET error spans" in shown.output

    # `score --update` reuses the talks' XCOMET figures as they are, per segment and spans included, without
    # starting XCOMET (simul.runs.learned_reuse)
    files = {name: (out / name).read_bytes() for name in ("per_stream.jsonl", ERROR_SPANS_FILE)}

    def no_xcomet(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("XCOMET was started")

    monkeypatch.setattr(XcometScorer, "__init__", no_xcomet)
    again = runner.invoke(app, ["score", str(out), "--update", "--quiet"])
    assert again.exit_code == 0, again.output
    assert {name: (out / name).read_bytes() for name in files} == files
    after = _run(out)
    for key in ("methods", "signatures", "comet", "learned_inputs"):
        assert after[key] == run[key], key


def test_ingested_talks_get_xcomet_per_segment(tiny_xcomet: Path, tmp_path: Path) -> None:
    out = ingest(
        "omnisteval",
        LONGFORM_DATA / "omnisteval.jsonl",
        LONGFORM_DATA / "talks.jsonl",
        tmp_path / "ingested",
        "--comet-model",
        str(tiny_xcomet),
        "--hardware",
        "1x test GPU",
    )
    run = _run(out)
    assert run["config"]["ingest"]["hardware"] == "1x test GPU"
    [method] = run["methods"]
    lines = read_error_spans(out)
    segments = [seg for r in _rows(out) for seg in r["segments"]]
    assert len(lines) == len(segments) > 0
    assert method["metrics"]["xcomet"] == pytest.approx(
        sum(s["xcomet"] for s in segments) / len(segments), abs=1e-3
    )
    for line in lines:
        _check_spans(line)


def test_a_damaged_span_file_is_an_error_naming_the_line(tmp_path: Path) -> None:
    good = {"method": "rt", "stream": "s0", "segment": None, "hypothesis": "abc", "truncated": False}
    bad = {**good, "spans": [{"start": 1, "end": 9, "severity": "major"}]}
    lines = [{**good, "spans": []}, bad]
    (tmp_path / ERROR_SPANS_FILE).write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    with pytest.raises(Exception, match=r"error_spans.jsonl:2: .*offsets 1-9 are outside its hypothesis"):
        read_error_spans(tmp_path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # `simul show` printed the score with float(): a traceback on text, a list or an object
        ({"xcomet": ""}, "field 'xcomet' must be a finite number or null"),
        ({"xcomet": [0.5]}, "field 'xcomet' must be a finite number or null"),
        ({"xcomet": 1e400}, "field 'xcomet' must be a finite number or null"),
        (
            {"spans": [{"start": 0, "end": True, "severity": "minor"}]},
            "'start' and 'end' must be whole numbers",
        ),
    ],
)
def test_a_span_line_with_a_score_or_offset_of_the_wrong_type_is_an_error_naming_the_line(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    good = {"method": "rt", "stream": "s0", "segment": None, "hypothesis": "abc", "truncated": False}
    lines = [
        {**good, "spans": [], "xcomet": 0.5},
        {**good, "spans": [], "xcomet": None},
        {**good, "spans": []},
    ]
    lines.append({**good, "spans": [], "xcomet": 0.5, **change})
    text = "".join(json.dumps(x) + "\n" for x in lines).replace("Infinity", "1e400")
    (tmp_path / ERROR_SPANS_FILE).write_text(text, encoding="utf-8")
    with pytest.raises(SimulError, match=rf"error_spans.jsonl:4: .*{re.escape(message)}.*simul score"):
        read_error_spans(tmp_path)
    (tmp_path / ERROR_SPANS_FILE).write_text(
        "".join(json.dumps(x) + "\n" for x in lines[:3]), encoding="utf-8"
    )
    assert [line.get("xcomet") for line in read_error_spans(tmp_path)] == [0.5, None, None]


# -- memory ----------------------------------------------------------------------------------------------


def test_too_little_memory_is_refused_before_loading_with_what_is_needed(
    tiny_xcomet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = tiny_xcomet / "checkpoints" / "model.ckpt"
    needed = 2 * checkpoint.stat().st_size + GIB
    assert comet_model.memory_needed(checkpoint) == needed
    monkeypatch.setattr(comet_model, "available_memory", lambda: MemoryReading(GIB // 2, "MemAvailable"))
    scorer, reason = load_comet(str(tiny_xcomet), 4)
    assert scorer is None and reason is not None
    assert f"not enough memory to load {tiny_xcomet}" in reason
    assert (
        f"needs about {needed / GIB:.1f} GiB" in reason and "only 0.5 GiB available (MemAvailable)" in reason
    )
    assert f"--comet-model {tiny_xcomet} --update" in reason
    monkeypatch.setattr(comet_model, "available_memory", lambda: MemoryReading(needed, "cgroup v2 limit"))
    scorer, reason = load_comet(str(tiny_xcomet), 4)
    assert reason is None and scorer is not None


def test_xcomet_xl_sized_checkpoint_needs_about_twice_its_size(tmp_path: Path) -> None:
    checkpoint = tmp_path / "model.ckpt"
    with checkpoint.open("wb") as handle:
        handle.truncate(14 * 10**9)  # sparse: XCOMET-XL's fp32 checkpoint, 3.5 B parameters x 4 bytes
    assert comet_model.memory_needed(checkpoint) == 28 * 10**9 + GIB


# -- a fake out-of-memory kill ---------------------------------------------------------------------------


@pytest.mark.parametrize("stage", ["score", "load"])
def test_an_oom_kill_of_the_scorer_leaves_a_run_that_score_finishes(
    stage: str,
    tiny_model: Path,
    streams_file: Path,
    tiny_xcomet: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "run"
    with monkeypatch.context() as patch:
        patch.setenv(KILL_ENV, stage)  # the child sends itself SIGKILL there, as the OOM killer would
        killed = _xcomet_eval(tiny_model, streams_file, tiny_xcomet, out)
    assert killed.exit_code == 1, killed.output
    message = " ".join(killed.output.split())
    doing = "scoring with" if stage == "score" else "loading"
    assert f"the XCOMET process was killed by SIGKILL while {doing} {tiny_xcomet}" in message
    assert "out-of-memory killer" in message and f"simul score {out}" in message
    assert "Traceback" not in killed.output
    run = _run(out)
    assert run["status"] == "scoring_failed" and "methods" not in run
    assert run["scoring_error"]["error"] == "ScorerKilled"

    finished = runner.invoke(app, ["score", str(out), "--comet-model", str(tiny_xcomet), "--quiet"])
    assert finished.exit_code == 0, finished.output
    run = _run(out)
    assert run["status"] == "complete" and run["scored_later"]["error"]["error"] == "ScorerKilled"
    assert all(m["metrics"]["xcomet"] is not None for m in run["methods"])
    assert len(read_error_spans(out)) == 8


def test_an_oom_kill_while_ingesting_leaves_the_run_scoring_failed(
    tiny_xcomet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "ingested"
    monkeypatch.setenv(KILL_ENV, "score")
    args = [
        "ingest",
        str(LONGFORM_DATA / "omnisteval.jsonl"),
        "--format",
        "omnisteval",
        "--streams",
        str(LONGFORM_DATA / "talks.jsonl"),
        "--out",
        str(out),
        "--comet-model",
        str(tiny_xcomet),
        "--quiet",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and "killed by SIGKILL" in result.output
    assert _run(out)["status"] == "scoring_failed"
    monkeypatch.delenv(KILL_ENV)
    done = runner.invoke(app, ["score", str(out), "--comet-model", str(tiny_xcomet), "--quiet"])
    assert done.exit_code == 0, done.output
    assert _run(out)["status"] == "complete" and read_error_spans(out)

"""error_spans.jsonl under fire: the XCOMET error spans of a run (a line per method and segment: the
hypothesis, its spans' character offsets and severities, the segment's score, whether the model's input was
cut), damaged and read by `simul show RUN --stream ID` (the terminal table and the --html page).

The seeds are written by hand, as XCOMET's scoring writes them (simul.metrics.families.quality.xcomet_spans),
onto the final outputs of a sentence-level run of the tiny model and the re-segmented segments of an ingested
system of whole talks: no XCOMET model is needed.

Properties (tests/fuzz/cli.py): exit 0 or 1 and no traceback; an error names error_spans.jsonl and its line
(simul.runs.directory.read_error_spans) and says how to write it again; nothing printed drives the terminal;
the page is written whole on success and not at all on an error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simul.runs.directory import ERROR_SPANS_FILE, load_run, read_per_stream
from tests.fuzz.budget import examples, scratch, tried
from tests.fuzz.cli import check, invoke, leftovers
from tests.fuzz.runs import JsonPath, Seeds, damaged_runs, files_of, materialize, sentence_run, talk_run

SPAN_FIELDS: tuple[JsonPath, ...] = (
    ("method",),
    ("stream",),
    ("segment",),
    ("hypothesis",),
    ("xcomet",),
    ("truncated",),
    ("tokens",),
    ("spans",),
    ("spans", 0),
    ("spans", 0, "start"),
    ("spans", 0, "end"),
    ("spans", 0, "severity"),
    ("spans", 0, "text"),
    ("spans", 0, "confidence"),
    ("spans", -1, "end"),
)
# the stream each run shows
STREAM = {"sentences": "s0", "omnisteval": "talk1"}


def _line(method: str, stream: str, segment: int | None, hypothesis: str, k: int) -> dict[str, Any]:
    """One error-span line as simul writes it: spans over the hypothesis's first words, every severity."""
    words = hypothesis.split()
    spans = []
    at = 0
    for index, word in enumerate(words[:3]):
        start = hypothesis.index(word, at)
        at = start + len(word)
        severity = ("minor", "major", "critical")[(index + k) % 3]
        spans.append({"text": word, "start": start, "end": at, "severity": severity, "confidence": 0.5})
    return {
        "method": method,
        "stream": stream,
        "segment": segment,
        "hypothesis": hypothesis,
        "xcomet": round(0.3 + 0.1 * k, 4),
        "spans": spans,
        "truncated": k % 2 == 1,
        "tokens": {"mt": len(words) + 2, "src": 8, "ref": 9},
    }


def _sentence_spans(run: Path) -> bytes:
    loaded = load_run(run)
    lines = [
        _line(key, result.stream_id, None, result.final_output, k)
        for key, results in loaded.results.items()
        for k, result in enumerate(results)
    ]
    return "".join(json.dumps(x, ensure_ascii=False, sort_keys=True) + "\n" for x in lines).encode()


def _talk_spans(run: Path) -> bytes:
    lines = [
        _line(method, stream, int(seg["index"]), str(seg["hypothesis"]), k)
        for (method, stream), row in read_per_stream(run).items()
        for k, seg in enumerate(row.get("segments") or [])
    ]
    return "".join(json.dumps(x, ensure_ascii=False, sort_keys=True) + "\n" for x in lines).encode()


@pytest.fixture(scope="module")
def span_runs(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Seeds:
    """A sentence run and a run of talks, each with its error-span file."""
    root = tmp_path_factory.mktemp("fuzz-spans")
    sentences, talks = sentence_run(tiny_model, root), talk_run(root, "omnisteval")
    return Seeds(
        {
            sentences.name: {**files_of(sentences), ERROR_SPANS_FILE: _sentence_spans(sentences)},
            talks.name: {**files_of(talks), ERROR_SPANS_FILE: _talk_spans(talks)},
        }
    )


@settings(max_examples=examples(50))
@given(data=st.data())
def test_error_spans(span_runs: Seeds, data: st.DataObject) -> None:
    only_spans = {run: {ERROR_SPANS_FILE: files[ERROR_SPANS_FILE]} for run, files in span_runs.items()}
    damage = data.draw(damaged_runs(only_spans, {ERROR_SPANS_FILE: SPAN_FIELDS}))
    # the talk's page draws its cost plot (a third of a second): the sentence run's page most of the time
    html = data.draw(st.integers(0, 3)) == 0 if damage.run == "omnisteval" else data.draw(st.booleans())
    tried("error spans: show")
    with scratch() as tmp:
        folder = Path(tmp)
        run = materialize(folder / damage.run, {**span_runs[damage.run], **damage.runs[damage.run]})
        out_dir = folder / "out"
        out_dir.mkdir()
        page = out_dir / "page.html"
        outcome = invoke(
            ["show", str(run), "--stream", STREAM[damage.run], *(["--html", str(page)] if html else [])]
        )
        # only the error-span file is damaged: an error is about it, at its line
        check(outcome, [run / ERROR_SPANS_FILE], codes=(0, 1), line=True)
        if outcome.code == 1:
            assert "simul score" in outcome.stderr, f"the error says not how to fix it:\n{outcome.describe()}"
        assert leftovers(out_dir) == ([page] if outcome.code == 0 and html else []), outcome.describe()
        if outcome.code == 0 and html:
            assert page.read_text(encoding="utf-8").rstrip().endswith("</html>")


def test_the_intact_spans_are_shown(span_runs: Seeds, tmp_path: Path) -> None:
    """The property above is about damage: the seeds are read, and shown in the table and the page."""
    for name, files in span_runs.items():
        run = materialize(tmp_path / name, dict(files))
        page = tmp_path / f"{name}.html"
        outcome = invoke(["show", str(run), "--stream", STREAM[name], "--html", str(page)])
        check(outcome, [run], codes=(0,))
        assert "XCOMET error spans" in outcome.stderr and "XCOMET error spans" in page.read_text(
            encoding="utf-8"
        )

"""Stream files that would give misleading figures: bad times, mixed timed and untimed streams, ids past
--limit, streams without a reference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import SimulError
from simul.streams.format import Step, Stream, dumps_stream, read_streams, write_streams
from tests.helpers import eval_args, lag_stream, make_streams

runner = CliRunner()


def _timed(stream: Stream) -> Stream:
    steps = tuple(Step(s.source, s.final, time_ms=1000.0 * (i + 1)) for i, s in enumerate(stream.steps))
    return Stream(stream.id, stream.src, stream.tgt, steps, stream.reference, stream.provenance)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-1"])
def test_bad_time_ms_is_refused_with_file_and_line(tmp_path: Path, value: str) -> None:
    path = tmp_path / "s.jsonl"
    streams = [_timed(s) for s in make_streams()[:2]]
    lines = [dumps_stream(s) for s in streams]
    lines[1] = lines[1].replace('"time_ms": 2000.0', f'"time_ms": {value}', 1)
    path.write_text("\n".join(lines) + "\n")
    # NaN and Infinity are not JSON: the reader refuses the line itself; -1 is JSON but no time
    expected = (
        rf"s\.jsonl:2: unreadable JSON \({value} is not a JSON number"
        if value in ("NaN", "Infinity")
        else r"s\.jsonl:2, step 1: step 'time_ms' must be a finite number"
    )
    with pytest.raises(SimulError, match=expected):
        read_streams(path)


def test_mixed_timed_and_untimed_streams_are_refused(tiny_model: Path, tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    plain = make_streams()
    write_streams(path, [_timed(plain[0]), plain[1]])
    result = runner.invoke(app, eval_args(tiny_model, path))
    text = " ".join(result.output.split())
    assert result.exit_code == 1
    assert "mixes timed and untimed streams (stream 's0' has time_ms" in text and "'s1' has none" in text


def test_limit_still_validates_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "dup.jsonl"
    streams = make_streams()
    lines = [dumps_stream(s) for s in streams] + [dumps_stream(streams[0])]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SimulError, match=rf"dup\.jsonl:{len(lines)}: duplicate stream id 's0'"):
        read_streams(path, limit=1)
    good = tmp_path / "good.jsonl"
    write_streams(good, make_streams())
    assert [s.id for s in read_streams(good, limit=2)] == ["s0", "s1"]


def test_a_stream_without_reference_does_not_blank_the_scores(tiny_model: Path, tmp_path: Path) -> None:
    path = tmp_path / "noref.jsonl"
    streams = make_streams()
    streams[1] = lag_stream("s1", streams[1].final_source, None)
    write_streams(path, streams)
    out = tmp_path / "run"
    result = runner.invoke(app, eval_args(tiny_model, path, "--out", str(out), "--json"))
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)["methods"][0]["metrics"]
    assert metrics["chrf"] is not None and metrics["bleu"] is not None
    shown = runner.invoke(app, ["score", str(out)], env={"COLUMNS": "200"})
    assert "chrF, BLEU and COMET on the 3 of 4 streams that have a reference; 1 has reference: null" in (
        " ".join(shown.output.split())
    )
    rows = [json.loads(line) for line in (out / "per_stream.jsonl").read_text().splitlines()]
    assert [r["chrf"] is None for r in rows if r["method"] == "rt"] == [False, True, False, False]


def test_no_reference_at_all_says_why_the_scores_are_blank(tiny_model: Path, tmp_path: Path) -> None:
    path = tmp_path / "none.jsonl"
    write_streams(path, [lag_stream(f"s{i}", s.final_source, None) for i, s in enumerate(make_streams()[:2])])
    out = tmp_path / "run"
    assert runner.invoke(app, eval_args(tiny_model, path, "--out", str(out), "--no-baseline")).exit_code == 0
    shown = runner.invoke(app, ["score", str(out)], env={"COLUMNS": "200"})
    assert "chrF, BLEU and COMET blank: none of the 2 streams has a reference" in " ".join(
        shown.output.split()
    )

"""per_stream.jsonl is read in one place (simul.runs.directory.read_per_stream, beside its writer) for
`simul diff` and `simul rank`, and every row is checked: a bad row is an error naming the file, the line and
how to write the file again, whichever command reads it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import SimulError
from simul.runs.directory import PER_STREAM_FILE, RunWriter, read_per_stream

BASELINE = Path(__file__).resolve().parent.parent / ".ci" / "baseline-tiny"
runner = CliRunner()

SENTENCE = {"method": "rt", "stream": "s1", "chrf": 41.2, "comet": 0.81, "xcomet": None}
SEGMENT = {
    "index": 0,
    "hypothesis": "Hallo Welt.",
    "references": ["Hallo, Welt."],
    "chrf": 50.0,
    "comet": 0.7,
}
TALK = {"method": "rt", "stream": "talk1", "comet": None, "segments": [SEGMENT, {**SEGMENT, "index": 1}]}


def _write(folder: Path, lines: list[str | bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    raw = b"".join((line if isinstance(line, bytes) else line.encode("utf-8")) + b"\n" for line in lines)
    (folder / PER_STREAM_FILE).write_bytes(raw)
    return folder


def test_what_the_writer_writes_the_reader_reads(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = [SENTENCE, {**SENTENCE, "stream": "s2", "comet": None}, TALK]
    RunWriter(tmp_path, {}).write_per_stream(rows)
    read = read_per_stream(tmp_path)
    assert read == {("rt", "s1"): SENTENCE, ("rt", "s2"): rows[1], ("rt", "talk1"): TALK}
    assert read_per_stream(tmp_path / "no-such-run") == {}


def _bad(change: Any) -> dict[str, Any]:
    row: dict[str, Any] = json.loads(json.dumps(TALK))
    change(row)
    return row


MALFORMED: dict[str, tuple[str | bytes, str]] = {
    "not JSON": ('{"method": "rt", "stream": ', "malformed JSON"),
    "not an object": ('["rt", "s1"]', "expected a JSON object"),
    "no method": (json.dumps({"stream": "s1"}), "field 'method' must be a string"),
    "a stream number": (json.dumps({"method": "rt", "stream": 3}), "field 'stream' must be a string"),
    "COMET NaN": ('{"method": "rt", "stream": "s1", "comet": NaN}', "field 'comet' must be a finite number"),
    "BLEURT text": (json.dumps({**SENTENCE, "bleurt": "0.5"}), "field 'bleurt' must be a finite number"),
    "not UTF-8": (b'{"method": "rt", "stream": "s\xff"}', "can't decode byte 0xff"),
    "segments an object": (json.dumps({**TALK, "segments": {}}), "field 'segments' must be a list"),
    "a segment without a hypothesis": (
        json.dumps(_bad(lambda r: r["segments"][1].pop("hypothesis"))),
        r"field 'segments\[1\].hypothesis' must be a string",
    ),
    "a negative index": (
        json.dumps(_bad(lambda r: r["segments"][0].update(index=-1))),
        r"field 'segments\[0\].index' must be a whole number >= 0",
    ),
    "no references": (
        json.dumps(_bad(lambda r: r["segments"][0].update(references=[]))),
        r"field 'segments\[0\].references' must be a non-empty list of strings",
    ),
    "a segment's XCOMET text": (
        json.dumps(_bad(lambda r: r["segments"][1].update(xcomet="high"))),
        r"field 'segments\[1\].xcomet' must be a finite number or null",
    ),
    "a second row for a stream": (
        json.dumps({**SENTENCE, "chrf": 1.0}),
        "a second row for method 'rt', stream 's1'",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_bad_row_names_the_file_the_line_and_the_fix(tmp_path: Path, case: str) -> None:
    line, why = MALFORMED[case]
    run = _write(tmp_path / "run", [json.dumps(SENTENCE), json.dumps(TALK), line])
    with pytest.raises(SimulError) as caught:
        read_per_stream(run)
    message = str(caught.value)
    assert message.startswith(f"{run / PER_STREAM_FILE}:3: ")
    assert re.search(why, message), message
    assert f"`simul score {run} --update`" in message


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    """A copy of the CI baseline run whose per_stream.jsonl has a row with no stream name on line 2."""
    run = tmp_path / "damaged"
    shutil.copytree(BASELINE, run)
    lines = (run / PER_STREAM_FILE).read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[1])
    del row["stream"]
    lines[1] = json.dumps(row)
    (run / PER_STREAM_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run


@pytest.mark.parametrize("command", ["diff", "rank"])
def test_diff_and_rank_refuse_a_damaged_file_alike(damaged: Path, command: str) -> None:
    args = (
        ["diff", str(BASELINE), str(damaged)]
        if command == "diff"
        else ["rank", str(damaged), "--metric", "chrf"]
    )
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert (
        f"{damaged / PER_STREAM_FILE}:2: unreadable per-stream row (field 'stream' must be a string)" in text
    )
    assert f"simul score {damaged} --update" in text
    assert "Traceback" not in result.output

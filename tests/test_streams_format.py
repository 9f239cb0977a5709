"""The stream file format: round trip, validation and reader errors that name file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simul.common.errors import SimulError
from simul.streams.format import Step, Stream, iter_streams, read_streams, write_streams


def timed_stream(stream_id: str = "s1") -> Stream:
    return Stream(
        id=stream_id,
        src="en",
        tgt="ja",
        steps=(
            Step("hello this", time_ms=500.0, extra={"talk_time_ms": 1090.0}),
            Step("hello these", time_ms=1000.0),  # a revision: the previous step is not a prefix
            Step("hello", time_ms=1000.0),  # shrinks, at the same time
            Step("Hello, this is Jiawei.", final=True, time_ms=2833.0),
        ),
        reference="こんにちは。",
        provenance={"dataset": "acl6060", "line": 1, "simulated": True},
    )


def record(**overrides: Any) -> dict[str, Any]:
    base = timed_stream().to_json()
    base.update(overrides)
    return base


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_round_trip_keeps_everything(tmp_path: Path) -> None:
    untimed = Stream("s2", "en", "de", (Step("a b c"), Step("a b c d", final=True)), None, {"lag": 3})
    path = tmp_path / "out" / "streams.jsonl"
    assert write_streams(path, [timed_stream(), untimed]) == 2
    back = read_streams(path)
    assert back == [timed_stream(), untimed]
    assert back[0].steps[0].extra == {"talk_time_ms": 1090.0}
    assert back[0].provenance == {"dataset": "acl6060", "line": 1, "simulated": True}
    assert back[0].timed and not back[1].timed
    assert back[1].reference is None
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert (first["format"], first["version"]) == ("simul-stream", 1)
    assert list(first) == sorted(first)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["streams.jsonl"]


def test_times_are_stored_to_a_tenth_of_a_millisecond(tmp_path: Path) -> None:
    stream = Stream(
        "s", "en", "de", (Step("a", time_ms=12.34), Step("a b", final=True, time_ms=6700.0000000000455))
    )
    path = tmp_path / "s.jsonl"
    write_streams(path, [stream])
    assert [step.time_ms for step in read_streams(path)[0].steps] == [12.3, 6700.0]


def test_language_codes_are_normalised_on_read(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [json.dumps(record(src="eng_Latn", tgt="jpn_Jpan"))])
    assert (read_streams(path)[0].src, read_streams(path)[0].tgt) == ("en", "ja")


def test_blank_lines_are_skipped_and_limit_applies(tmp_path: Path) -> None:
    lines = [json.dumps(record(id=f"s{i}")) for i in range(3)]
    path = write_lines(tmp_path / "s.jsonl", [lines[0], "", lines[1], "   ", lines[2]])
    assert [s.id for s in read_streams(path)] == ["s0", "s1", "s2"]
    assert [s.id for s in read_streams(path, limit=2)] == ["s0", "s1"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"format": "simul-stream", "version": 1, "id": ', "s.jsonl:2: malformed JSON"),
        ('{"id": "a\tb"}', "s.jsonl:2: malformed JSON (Invalid control character at column 10)"),
        (json.dumps(record(version=9)), "s.jsonl:2: stream format version 9 is not supported"),
        (json.dumps(record(format="other")), "s.jsonl:2: not a simul stream record"),
        (json.dumps(record(tgt="xx")), "s.jsonl:2: unknown language code 'xx'"),
        (json.dumps(record(steps=[])), "s.jsonl:2: stream 's1' has no steps"),
        (
            json.dumps(record(steps=[{"source": "a", "final": False}, {"source": "a b", "final": False}])),
            "s.jsonl:2: stream 's1': the last step must be final",
        ),
        (
            json.dumps(record(steps=[{"source": "a", "final": True}, {"source": "a b", "final": True}])),
            "step 0 is final but is not the last",
        ),
        (
            json.dumps(
                record(
                    steps=[
                        {"source": "a", "final": False, "time_ms": 900},
                        {"source": "a b", "final": True, "time_ms": 400},
                    ]
                )
            ),
            "s.jsonl:2: stream 's1': time_ms goes backwards at step 1 (400.0 < 900.0)",
        ),
        (
            json.dumps(
                record(
                    steps=[{"source": "a", "final": False, "time_ms": 1}, {"source": "a b", "final": True}]
                )
            ),
            "time_ms must be given on every step or on none",
        ),
        (json.dumps(record(steps=[{"source": " ", "final": True}])), "step 0 has an empty source"),
        (
            json.dumps(record(steps=[{"source": "a", "final": True, "when": 3}])),
            "unknown step field(s) ['when']",
        ),
        ('["a list"]', "s.jsonl:2: expected a JSON object per line"),
    ],
)
def test_reader_errors_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = write_lines(tmp_path / "s.jsonl", [json.dumps(record(id="ok")), line])
    with pytest.raises(SimulError) as caught:
        read_streams(path)
    assert message in str(caught.value)


def test_duplicate_ids_are_an_error(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [json.dumps(record()), json.dumps(record())])
    with pytest.raises(SimulError, match=r"s\.jsonl:2: duplicate stream id 's1'"):
        read_streams(path)


def test_non_utf8_is_an_error_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(json.dumps(record()).encode() + b"\n" + b'{"id": "caf\xe9"}\n')
    with pytest.raises(SimulError, match=r"s\.jsonl:2: not valid UTF-8"):
        read_streams(path)


def test_missing_empty_and_directory_files(tmp_path: Path) -> None:
    with pytest.raises(SimulError, match="does not exist"):
        read_streams(tmp_path / "none.jsonl")
    with pytest.raises(SimulError, match="is a directory"):
        read_streams(tmp_path)
    empty = write_lines(tmp_path / "empty.jsonl", [""])
    with pytest.raises(SimulError, match="holds no streams"):
        read_streams(empty)


def test_writer_refuses_invalid_streams_and_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    bad = Stream("bad", "en", "de", (Step("a", final=False),))
    with pytest.raises(SimulError, match="refusing to write an invalid stream"):
        write_streams(path, [timed_stream(), bad])
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_writer_keeps_the_old_file_when_the_streams_fail_half_way(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_streams(path, [timed_stream("old")])

    def failing() -> Any:
        yield timed_stream("new")
        raise SimulError("the importer failed")

    with pytest.raises(SimulError, match="the importer failed"):
        write_streams(path, failing())
    assert [s.id for s in iter_streams(path)] == ["old"]
    assert [p.name for p in tmp_path.iterdir()] == ["s.jsonl"]

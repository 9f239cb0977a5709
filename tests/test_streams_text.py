"""`simul streams text`: line-aligned files, TSV, JSONL, several references, bad input, shared lag core."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import SimulError, UsageError
from simul.streams.flores import flores_streams
from simul.streams.format import read_streams
from simul.streams.text_streams import TextRequest, text_streams

runner = CliRunner()
TEXT = ["streams", "text"]
EN_DE = ["--src-lang", "en", "--tgt-lang", "de"]

SOURCES = [
    "The cat sat on the mat and looked out of the window.",
    "We now have four new trains.",
    "Hi.",
]
REF_A = ["Die Katze saß auf der Matte und sah aus dem Fenster.", "Wir haben jetzt vier neue Züge.", "Hallo."]
REF_B = ["Die Katze saß auf der Matte und schaute zum Fenster hinaus.", "Nun gibt es vier neue Züge.", "Hi."]


def write(path: Path, lines: list[str]) -> Path:
    path.write_bytes("".join(line + "\n" for line in lines).encode("utf-8"))
    return path


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    return (
        write(tmp_path / "test.en-de.src.en", SOURCES),
        write(tmp_path / "test.en-de.ref.refA.de", REF_A),
        write(tmp_path / "test.en-de.ref.refB.de", REF_B),
    )


def build(**kwargs: object) -> list:  # type: ignore[type-arg]
    request = TextRequest(src="en", tgt="de", **kwargs)  # type: ignore[arg-type]
    return text_streams(request).built.streams


def test_line_aligned_files_with_two_references(files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    src, ref_a, ref_b = files
    out = tmp_path / "out.jsonl"
    result = runner.invoke(
        app,
        [
            *TEXT,
            "-o",
            str(out),
            "--source",
            str(src),
            "--ref",
            str(ref_a),
            "--ref",
            str(ref_b),
            *EN_DE,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["references_per_stream"] == 2
    assert "wrote 3 streams" in result.stderr and "2 references per stream" in result.stderr
    streams = read_streams(out)
    assert [s.id for s in streams] == ["test-1", "test-2", "test-3"]
    first = streams[0]
    assert first.references == (REF_A[0], REF_B[0]) and first.reference == REF_A[0]
    assert [s.source for s in first.steps] == [
        "The cat sat",
        "The cat sat on the mat",
        "The cat sat on the mat and looked out",
        "The cat sat on the mat and looked out of the window.",
    ]
    assert [s.final for s in first.steps] == [False, False, False, True]
    assert streams[2].steps[0].final and len(streams[2].steps) == 1  # n <= lag: one final step
    assert first.provenance == {
        "dataset": "test",
        "format": "lines",
        "source_file": src.name,
        "reference_files": [ref_a.name, ref_b.name],
        "line": 1,
        "lag": 3,
        "unit": "word",
        "simulated": True,
    }
    record = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert record["version"] == 2 and "reference" not in record and len(record["references"]) == 2


def test_one_reference_is_written_as_before_and_none_is_allowed(files: tuple[Path, Path, Path]) -> None:
    src, ref_a, _ = files
    one = build(source=src, references=[ref_a])
    record = one[0].to_json()
    assert record["version"] == 1 and record["reference"] == REF_A[0] and "references" not in record
    none = build(source=src)
    assert none[0].reference is None and none[0].references == ()
    assert none[0].to_json()["reference"] is None


def test_tsv_and_jsonl_give_the_same_streams(files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    src, ref_a, ref_b = files
    expected = build(source=src, references=[ref_a, ref_b])
    tsv = write(
        tmp_path / "set.tsv", [f"{s}\t{a}\t{b}" for s, a, b in zip(SOURCES, REF_A, REF_B, strict=True)]
    )
    jsonl = write(
        tmp_path / "set.jsonl",
        [
            json.dumps({"src": s, "refs": [a, b], "docid": "d1"})
            for s, a, b in zip(SOURCES, REF_A, REF_B, strict=True)
        ],
    )
    for path, fmt in ((tsv, "tsv"), (jsonl, "jsonl")):
        got = build(source=path, name="test")
        assert [(s.id, s.steps, s.references) for s in got] == [
            (s.id, s.steps, s.references) for s in expected
        ]
        assert got[0].provenance["format"] == fmt and got[0].provenance["reference_files"] == []
    single = write(
        tmp_path / "one.jsonl",
        [json.dumps({"src": s, "ref": a}) for s, a in zip(SOURCES, REF_A, strict=True)],
    )
    assert build(source=single)[1].references == (REF_A[1],)
    forced = write(tmp_path / "set.txt", [f"{s}\t{a}" for s, a in zip(SOURCES, REF_A, strict=True)])
    assert build(source=forced, text_format="tsv")[0].references == (REF_A[0],)


def test_flores_and_text_share_the_stream_core(tmp_path: Path) -> None:
    root = tmp_path / "flores"
    (root / "devtest").mkdir(parents=True)
    write(root / "devtest" / "eng_Latn.devtest", SOURCES)
    write(root / "devtest" / "zho_Hans.devtest", ["猫坐在垫子上。", "我们有四列新火车。", "你好。"])
    flores = list(flores_streams(root, "devtest", "eng_Latn", "zho_Hans", 2))
    text = text_streams(
        TextRequest(
            source=root / "devtest" / "eng_Latn.devtest",
            references=[root / "devtest" / "zho_Hans.devtest"],
            src="en",
            tgt="zh",
            lag=2,
        )
    ).built.streams
    assert [(s.steps, s.references, s.src, s.tgt) for s in flores] == [
        (s.steps, s.references, s.src, s.tgt) for s in text
    ]
    assert flores[0].id == "flores200-devtest-1" and text[0].id == "eng_Latn-1"
    shared = {"line", "lag", "unit", "simulated", "dataset", "source_file"}
    assert shared <= set(flores[0].provenance) and shared <= set(text[0].provenance)


def test_characters_for_unspaced_sources_and_unit_option(tmp_path: Path) -> None:
    src = write(tmp_path / "zh.txt", ["我们现在有四列新火车。"])
    streams = text_streams(TextRequest(source=src, src="zh", tgt="en", lag=4)).built.streams
    assert [s.source for s in streams[0].steps] == ["我们现在", "我们现在有四列新", "我们现在有四列新火车。"]
    assert streams[0].provenance["unit"] == "char"
    words = build(source=write(tmp_path / "en.txt", ["ab cd"]), unit="char", lag=3)
    assert [s.source for s in words[0].steps] == ["ab c", "ab cd"]


def test_start_limit_and_name(files: tuple[Path, Path, Path]) -> None:
    src, ref_a, _ = files
    streams = build(source=src, references=[ref_a], start=2, limit=1, name="wmt")
    assert [s.id for s in streams] == ["wmt-2"] and streams[0].provenance["line"] == 2
    with pytest.raises(SimulError, match="--start 4 is past the last line"):
        build(source=src, start=4)


BAD_INPUTS = {
    "line count": (b"a b c\nd e f\n", b"x\n", "ref.txt has 1 lines but {src} has 2", "ref.txt"),
    "empty source": (b"a b c\n\nd e f\n", b"x\ny\nz\n", "{src}:2: empty source line", "src.txt"),
    "empty reference": (b"a b c\nd e f\n", b"x\n \n", "ref.txt:2: empty reference line", "ref.txt"),
    "crlf": (b"a b c\r\nd e f\r\n", b"x\ny\n", "{src}:1: carriage return", "src.txt"),
    "bom": (b"\xef\xbb\xbfa b c\n", b"x\n", "{src}:1: the file starts with a byte order mark", "src.txt"),
    "latin-1": (b"a b c\ncaf\xe9 d\n", b"x\ny\n", "{src}:2: not valid UTF-8", "src.txt"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_names_file_and_line_and_writes_nothing(case: str, tmp_path: Path) -> None:
    source, reference, message, _ = BAD_INPUTS[case]
    src, ref = tmp_path / "src.txt", tmp_path / "ref.txt"
    src.write_bytes(source)
    ref.write_bytes(reference)
    out = tmp_path / "out.jsonl"
    out.write_text("previous content\n")
    result = runner.invoke(
        app,
        [*TEXT, "-o", str(out), "--source", str(src), "--ref", str(ref), *EN_DE],
    )
    assert result.exit_code == 1
    assert message.format(src=src) in result.stderr, result.stderr
    assert "Traceback" not in result.output
    assert out.read_text() == "previous content\n"  # nothing half-written, the old file untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl", "ref.txt", "src.txt"]


def test_tsv_rows_with_too_few_fields(tmp_path: Path) -> None:
    tsv = write(tmp_path / "set.tsv", ["a b c\tx\ty", "d e f\tz", "g h\tu\tv"])
    with pytest.raises(SimulError, match=r"set.tsv:2: 2 tab-separated field\(s\), too few: line 1 has 3"):
        build(source=tsv)
    jsonl = write(
        tmp_path / "set.jsonl",
        [json.dumps({"src": "a", "refs": ["x", "y"]}), json.dumps({"src": "b", "ref": "z"})],
    )
    with pytest.raises(SimulError, match=r"set.jsonl:2: 1 reference\(s\), but the first line has 2"):
        build(source=jsonl)
    broken = write(tmp_path / "broken.jsonl", ['{"src": "a"', json.dumps({"src": 3})])
    with pytest.raises(SimulError, match=r"broken\.jsonl:1: malformed JSON"):
        build(source=broken)


def test_skip_empty_counts_and_reports(tmp_path: Path) -> None:
    src = write(tmp_path / "src.txt", ["a b c", "", "d e f", "g h i"])
    ref = write(tmp_path / "ref.txt", ["x", "y", "", "w"])
    out = tmp_path / "out.jsonl"
    result = runner.invoke(
        app,
        [*TEXT, "-o", str(out), "--source", str(src), "--ref", str(ref), *EN_DE, "--skip-empty", "--json"],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["skipped"] == {"empty source line": 1, "empty reference line": 1}
    stderr = result.stderr
    assert "skipped 1 line(s) with an empty source line (--skip-empty): lines 2" in stderr
    assert "2 lines skipped" in stderr
    assert [s.id for s in read_streams(out)] == ["src-1", "src-4"]


def test_options_that_do_not_fit(files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    src, ref_a, _ = files
    tsv = write(tmp_path / "set.tsv", ["a\tb"])
    cases = [
        (TextRequest(source=tsv, references=[ref_a], src="en", tgt="de"), "--ref is for line-aligned files"),
        (TextRequest(source=src), "--src-lang and --tgt-lang"),
        (TextRequest(src="en", tgt="de"), "--source FILE"),
        (TextRequest(testset="wmt22"), "--testset needs --langpair"),
        (TextRequest(testset="wmt22", langpair="en-de", source=src), "leave out --source"),
        (TextRequest(source=src, src="en", tgt="de", langpair="en-de"), "--langpair only applies"),
        (TextRequest(source=src, src="en", tgt="de", unit="token"), "--unit must be one of word, char"),
        (TextRequest(source=src, src="en", tgt="de", text_format="csv"), "--format must be one of"),
    ]
    for request, message in cases:
        with pytest.raises(UsageError, match=message):
            text_streams(request)
    result = runner.invoke(app, ["streams", "text", "-o", str(tmp_path / "x.jsonl"), "--source", str(src)])
    assert result.exit_code == 2 and "--src-lang" in result.stderr

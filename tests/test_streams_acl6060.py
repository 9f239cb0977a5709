"""Reading ACL 60/60 segments: the line-aligned layout, the release XML, segment YAML, and clear errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simul.common.errors import SimulError
from simul.common.paths import fixtures_dir
from simul.streams.acl6060 import acl6060_segments
from simul.streams.segments import line_segments, read_segment_yaml, select, talk_file_pairs

FIXTURE = fixtures_dir() / "acl6060"
TALK = "2022.acl-long.110"


@pytest.fixture
def dev_copy(tmp_path: Path) -> Path:
    """A writable copy of the shipped line-aligned sample (``<tmp>/dev``)."""
    shutil.copytree(FIXTURE / "dev", tmp_path / "dev")
    return tmp_path / "dev"


def rewrite(path: Path, edit: str, line: int) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[line - 1] = edit
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def drop_last_line(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")


def test_shipped_sample_is_the_default() -> None:
    segments, yaml_path = acl6060_segments(None, "dev", "de")
    assert yaml_path is not None and yaml_path.name == "acl6060_dev_gold_segments.yaml"
    assert [s.id for s in segments] == [f"acl6060-dev-{n}" for n in range(1, 8)]
    first = segments[0]
    assert first.source == "Hello, this is Jiawei Zhou from Harvard University."
    assert first.reference == "Hallo, ich bin Jiawei Zhou von der Harvard University."
    assert (first.talk, first.offset_ms, first.duration_ms) == (TALK, 590.0, 2818.0)
    assert first.end_ms == pytest.approx(3408.0)
    assert first.provenance == {
        "dataset": "acl6060",
        "split": "dev",
        "line": 1,
        "talk": TALK,
        "offset_s": 0.59,
        "duration_s": 2.818,
        "source_file": "ACL.6060.dev.en-xx.en.segments.txt",
        "reference_file": "ACL.6060.dev.en-xx.de.segments.txt",
        "talkids_file": "ACL.6060.dev.talkids.txt",
        "segments_file": "acl6060_dev_gold_segments.yaml",
    }


@pytest.mark.parametrize(
    ("tgt", "start"), [("ja", "こんにちは。"), ("zh", "大家好"), ("jpn_Jpan", "こんにちは。")]
)
def test_other_targets(tgt: str, start: str) -> None:
    segments, _ = acl6060_segments(FIXTURE / "dev", "dev", tgt)
    assert segments[0].reference is not None and segments[0].reference.startswith(start)


def test_release_xml_orders_talks_by_docid_and_matches_yaml_per_talk() -> None:
    segments, yaml_path = acl6060_segments(FIXTURE / "release", "dev", "ja")
    assert yaml_path is not None and yaml_path.name == "ACL.6060.dev.en-xx.gold_segments.yaml"
    assert [(s.talk, s.provenance["xml_seg_id"]) for s in segments] == [
        (TALK, "1"),
        (TALK, "2"),
        (TALK, "3"),
        (TALK, "4"),
        ("2022.acl-long.117", "1"),
        ("2022.acl-long.117", "2"),
        ("2022.acl-long.117", "3"),
    ]
    assert segments[0].source == "Hello, this is Jiawei Zhou from Harvard University."
    assert segments[4].source == "Hi." and segments[4].reference == "こんにちは。"
    assert segments[4].offset_ms == 498.0 and segments[4].duration_ms == pytest.approx(456.0)
    assert segments[4].id == "acl6060-dev-5"
    assert segments[0].provenance["source_file"] == "ACL.6060.dev.en-xx.en.xml"


def test_select_start_and_limit() -> None:
    segments, _ = acl6060_segments(None, "dev", "de")
    assert [s.line for s in select(segments, 3, 2)] == [3, 4]
    assert [s.line for s in select(segments, 6, None)] == [6, 7]
    with pytest.raises(SimulError, match="past the last segment"):
        select(segments, 8, None)
    with pytest.raises(SimulError, match="1-based"):
        select(segments, 0, None)


@pytest.mark.data
def test_real_dev_set(shared_data: Path) -> None:
    for tgt, last in (("de", "Vielen Dank"), ("ja", "ありがとう"), ("zh", "感谢")):
        segments, _ = acl6060_segments(shared_data / "acl6060", "dev", tgt)
        assert len(segments) == 468
        assert segments[108].talk == "2022.acl-long.117" and segments[108].source == "Hi."
        assert segments[-1].id == "acl6060-dev-468" and segments[-1].talk == "2022.acl-long.590"
        assert segments[-1].offset_ms == pytest.approx(575377.0)
        assert segments[-1].reference is not None and last in segments[-1].reference
        assert len({s.talk for s in segments}) == 5


# --- errors ---------------------------------------------------------------------------------------------


def test_misaligned_segment_files(dev_copy: Path) -> None:
    drop_last_line(dev_copy / "ACL.6060.dev.en-xx.de.segments.txt")
    with pytest.raises(SimulError) as caught:
        acl6060_segments(dev_copy, "dev", "de")
    message = str(caught.value)
    assert "ACL.6060.dev.en-xx.en.segments.txt has 7 lines but" in message
    assert "ACL.6060.dev.en-xx.de.segments.txt has 6" in message and "line-aligned" in message


def test_misaligned_talk_ids(dev_copy: Path) -> None:
    drop_last_line(dev_copy / "ACL.6060.dev.talkids.txt")
    with pytest.raises(SimulError, match=r"has 7 lines but .*ACL\.6060\.dev\.talkids\.txt has 6"):
        acl6060_segments(dev_copy, "dev", "de")


def test_misaligned_yaml(dev_copy: Path) -> None:
    drop_last_line(dev_copy / "acl6060_dev_gold_segments.yaml")
    with pytest.raises(SimulError, match=r"gold_segments\.yaml has 6 segment rows but .* has 7 segments"):
        acl6060_segments(dev_copy, "dev", "de")


def test_yaml_of_another_talk(dev_copy: Path) -> None:
    yaml_path = dev_copy / "acl6060_dev_gold_segments.yaml"
    rewrite(yaml_path, "- {duration: 1.0, offset: 2.0, wav: 2022.acl-long.117.wav}", 3)
    with pytest.raises(
        SimulError, match=r"gold_segments\.yaml:3: wav of talk 2022\.acl-long\.117 but .*:3 belongs"
    ):
        acl6060_segments(dev_copy, "dev", "de")


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("- {duration: 1.0, offset: -2.0, wav: a.wav}", r"yaml:4: offset must be a non-negative number"),
        ("- {duration: 1.0, wav: a.wav}", r"yaml:4: row lacks offset"),
        ("- {duration: one, offset: 2.0, wav: a.wav}", r"yaml:4: duration must be a non-negative number"),
        ("- {duration: 1.0, offset: 2.0, wav: [a.wav", r"yaml:\d+: malformed YAML"),
        ("- just text", r"yaml:4: each row must be a mapping"),
    ],
)
def test_bad_yaml_rows(dev_copy: Path, row: str, message: str) -> None:
    yaml_path = dev_copy / "acl6060_dev_gold_segments.yaml"
    rewrite(yaml_path, row, 4)
    with pytest.raises(SimulError, match=message):
        read_segment_yaml(yaml_path)


def test_missing_files_list_what_is_there(dev_copy: Path) -> None:
    with pytest.raises(SimulError) as caught:
        acl6060_segments(dev_copy, "dev", "fr")
    assert "no French file for ACL 60/60 split 'dev'" in str(caught.value)
    assert "languages present for split 'dev': de, en, ja, zh" in str(caught.value)
    (dev_copy / "ACL.6060.dev.en-xx.en.segments.txt").unlink()
    with pytest.raises(SimulError, match="no English file"):
        acl6060_segments(dev_copy, "dev", "de")
    with pytest.raises(SimulError, match=r"no ACL\.6060\.eval\.\* files there"):
        acl6060_segments(dev_copy, "eval", "de")
    with pytest.raises(SimulError, match="does not exist"):
        acl6060_segments(dev_copy / "nowhere", "dev", "de")
    with pytest.raises(SimulError, match=r"segment YAML .* does not exist"):
        acl6060_segments(FIXTURE, "dev", "de", dev_copy / "none.yaml")


def test_unknown_language_and_english_target() -> None:
    with pytest.raises(SimulError, match="unknown language code 'klingon'"):
        acl6060_segments(None, "dev", "klingon")
    with pytest.raises(SimulError, match="translates from English"):
        acl6060_segments(None, "dev", "en")


def test_non_utf8_and_empty_lines(dev_copy: Path) -> None:
    path = dev_copy / "ACL.6060.dev.en-xx.ja.segments.txt"
    data = path.read_bytes().split(b"\n")
    data[4] = b"\xff\xfe broken"
    path.write_bytes(b"\n".join(data))
    with pytest.raises(SimulError, match=r"ja\.segments\.txt:5: not valid UTF-8 .*save the file as UTF-8"):
        acl6060_segments(dev_copy, "dev", "ja")
    rewrite(dev_copy / "ACL.6060.dev.en-xx.de.segments.txt", "  ", 2)
    with pytest.raises(SimulError, match=r"de\.segments\.txt:2: empty reference segment"):
        acl6060_segments(dev_copy, "dev", "de")


def test_no_talk_ids_anywhere(dev_copy: Path) -> None:
    (dev_copy / "ACL.6060.dev.talkids.txt").unlink()
    segments, _ = acl6060_segments(dev_copy, "dev", "de")  # the YAML's wav names the talk
    assert {s.talk for s in segments} == {TALK}
    (dev_copy / "acl6060_dev_gold_segments.yaml").unlink()
    with pytest.raises(SimulError, match="no talk ids"):
        acl6060_segments(dev_copy, "dev", "de")


def xml_copy(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE / "release", tmp_path / "release")
    return tmp_path / "release" / "dev" / "text" / "xml"


def test_malformed_xml_names_the_line(tmp_path: Path) -> None:
    path = xml_copy(tmp_path) / "ACL.6060.dev.en-xx.de.xml"
    rewrite(path, '<seg id="2">Ich freue mich <b>sehr</seg>', 7)
    with pytest.raises(SimulError, match=r"de\.xml:7: malformed XML \(mismatched tag\)"):
        acl6060_segments(tmp_path / "release", "dev", "de")


def test_xml_segments_that_do_not_match(tmp_path: Path) -> None:
    path = xml_copy(tmp_path) / "ACL.6060.dev.en-xx.de.xml"
    rewrite(path, '<seg id="9">Hi.</seg>', 6)
    with pytest.raises(
        SimulError, match=r"de\.xml:6: segment 2022\.acl-long\.117#9 does not match .*en\.xml:6"
    ):
        acl6060_segments(tmp_path / "release", "dev", "de")


def test_xml_talk_without_yaml_rows(tmp_path: Path) -> None:
    xml_copy(tmp_path)
    yaml_path = tmp_path / "release" / "dev" / "ACL.6060.dev.en-xx.gold_segments.yaml"
    rewrite(yaml_path, "- {duration: 1.0, offset: 2.0, wav: 2022.acl-long.110.wav}", 5)
    with pytest.raises(SimulError, match=r"talk 2022\.acl-long\.117 has no row in"):
        acl6060_segments(tmp_path / "release", "dev", "de")


def test_line_segments_without_reference() -> None:
    sltev = fixtures_dir() / "asr" / "sltev"
    segments = line_segments(sltev / "kaccNlwi6lUCEM.en.OSt", [], "sltev", "kacc")
    assert len(segments) == 10
    assert segments[1].id == "sltev-2" and segments[1].source == "her father"
    assert segments[1].reference is None and segments[1].talk == "kacc" and not segments[1].timed


def test_talk_file_pairs(tmp_path: Path) -> None:
    named = tmp_path / f"candidate.{TALK}.txt"
    plain = tmp_path / "asr.txt"
    named.write_text("x", encoding="utf-8")
    plain.write_text("x", encoding="utf-8")
    talks = [TALK, "2022.acl-long.117"]
    assert talk_file_pairs([str(named)], talks, "f") == [(TALK, named)]
    assert talk_file_pairs([f"2022.acl-long.117={plain}"], talks, "f") == [("2022.acl-long.117", plain)]
    assert talk_file_pairs([str(plain)], talks, "f") == [(None, plain)]
    assert talk_file_pairs([str(plain)], [TALK], "f") == [(TALK, plain)]
    with pytest.raises(SimulError, match=r"'2021\.x' is not a talk of the data"):
        talk_file_pairs([f"2021.x={plain}"], talks, "f")
    with pytest.raises(SimulError, match="does not exist"):
        talk_file_pairs([str(tmp_path / "none.txt")], talks, "f")

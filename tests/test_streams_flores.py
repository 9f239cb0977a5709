"""FLORES fixed-lag streams on the shipped sample and, when present, the real devtest split."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from simul.common.errors import SimulError
from simul.streams.flores import flores_streams


def test_shipped_sample_en_de() -> None:
    streams = list(flores_streams(None, "devtest", "eng_Latn", "deu_Latn", 3))
    assert len(streams) == 50
    first = streams[0]
    assert first.id == "flores200-devtest-1"
    assert (first.src, first.tgt) == ("en", "de")
    assert first.steps[0].source == '"We now have'
    assert first.final_source.endswith("he added.")
    assert [len(s.source.split()) for s in first.steps[:-1]] == [3 * t for t in range(1, len(first.steps))]
    assert first.steps[-1].final and not any(s.final for s in first.steps[:-1])
    assert first.reference is not None and first.reference.startswith("„Wir haben jetzt")
    assert first.provenance == {
        "dataset": "flores200",
        "split": "devtest",
        "line": 1,
        "lag": 3,
        "unit": "word",
        "source_file": "eng_Latn.devtest",
        "reference_file": "deu_Latn.devtest",
        "simulated": True,
    }


def test_start_limit_and_unspaced_source() -> None:
    streams = list(flores_streams(None, "devtest", "zho_Hans", "en", 5, start=3, limit=2))
    assert [s.id for s in streams] == ["flores200-devtest-3", "flores200-devtest-4"]
    assert streams[0].provenance["unit"] == "char"
    lengths = [len(step.source.replace(" ", "")) for step in streams[0].steps[:-1]]
    assert lengths == [5 * (k + 1) for k in range(len(lengths))]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tgt": "xx_Xxxx"}, "unknown language code 'xx_Xxxx'"),
        ({"split": "test"}, "no FLORES file for eng_Latn"),
        ({"start": 51}, "--start 51 is past the last line"),
        ({"start": 0}, "--start is 1-based"),
        ({"lag": 0}, "--lag must be at least 1"),
    ],
)
def test_errors(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"split": "devtest", "src": "eng_Latn", "tgt": "deu_Latn", "lag": 3, **kwargs}
    with pytest.raises(SimulError, match=re.escape(message)):
        list(flores_streams(None, **args))  # type: ignore[arg-type]


def test_misaligned_files_and_non_utf8(tmp_path: Path) -> None:
    split = tmp_path / "devtest"
    split.mkdir()
    (split / "eng_Latn.devtest").write_text("One two three four.\nFive six.\n", encoding="utf-8")
    (split / "deu_Latn.devtest").write_text("Eins zwei drei vier.\n", encoding="utf-8")
    with pytest.raises(SimulError, match=r"has 2 lines but .* has 1; FLORES files must be line-aligned"):
        list(flores_streams(tmp_path, "devtest", "en", "de", 3))
    (split / "deu_Latn.devtest").write_bytes(b"Eins zwei.\nF\xfcnf sechs.\n")
    with pytest.raises(SimulError, match=r"deu_Latn\.devtest:2: not valid UTF-8"):
        list(flores_streams(tmp_path, "devtest", "en", "de", 3))


@pytest.mark.parametrize(
    ("tgt", "first_ref"), [("deu_Latn", "„Wir"), ("zho_Hans", "他补充道"), ("jpn_Jpan", "「我々が")]
)
@pytest.mark.data
def test_real_devtest(shared_data: Path, tgt: str, first_ref: str) -> None:
    streams = list(flores_streams(shared_data / "flores200", "devtest", "eng_Latn", tgt, 3))
    assert len(streams) == 1012
    assert streams[0].final_source.startswith('"We now have 4-month-old mice')
    assert streams[0].reference is not None and streams[0].reference.startswith(first_ref)
    assert streams[-1].id == "flores200-devtest-1012"
    assert sum(len(s.steps) for s in streams) == 7628

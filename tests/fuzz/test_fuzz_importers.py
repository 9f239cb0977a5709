"""The importers under fire: recognizer partials (SLTev, whisper-streaming, JSONL), segment YAML, FLORES
and ACL 60/60 line files and release XML, each damaged from the shipped samples.

Properties (tests/fuzz/cli.py): exit 0, 1 or 2 and no traceback; an error names one of the input files and
leaves nothing in the output folder; what is written is a valid stream file that reads back unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from simul.common.paths import fixtures_dir
from simul.streams.format import read_streams, write_streams
from tests.fuzz.budget import examples, scratch, tried
from tests.fuzz.cli import call, check, leftovers
from tests.fuzz.mutate import mutated_bytes, mutated_json, mutated_lines_json

FIX = fixtures_dir()
SLTEV_PARTIALS = FIX / "asr" / "sltev" / "kaccNlwi6lUCEM.en.OStt"
SLTEV_SOURCE = FIX / "asr" / "sltev" / "kaccNlwi6lUCEM.en.OSt"
WHISPER = FIX / "asr" / "simulstreaming" / "candidate.2022.acl-long.110.txt"
ACL_LINES = FIX / "acl6060" / "dev"
ACL_RELEASE = FIX / "acl6060" / "release" / "dev"
FLORES = FIX / "flores200" / "devtest"


def _head(path: Path, lines: int) -> bytes:
    return "".join(line + "\n" for line in path.read_text(encoding="utf-8").splitlines()[:lines]).encode()


def _sltev_as_jsonl() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for line in _head(SLTEV_PARTIALS, 30).decode().splitlines():
        kind, start, end, text = line.split(None, 3)
        out.append(
            {
                "time_ms": float(end) * 10,
                "start_ms": float(start) * 10,
                "end_ms": float(end) * 10,
                "text": text,
                "final": kind == "C",
            }
        )
    return out


Command = tuple[str, dict[str, Any]]


def _run_import(folder: Path, inputs: list[Path], command: Command, reader: str) -> int:
    """Run an import writing into ``folder/out``; check the outcome and what was (not) left there."""
    tried(reader)
    out_dir = folder / "out"
    out_dir.mkdir()
    output = out_dir / "streams.jsonl"
    name, options = command
    outcome = call(name, **options, out=output, as_json=True)
    check(outcome, inputs)
    if outcome.code != 0:
        assert leftovers(out_dir) == [], f"files left behind after an error:\n{outcome.describe()}"
        return outcome.code
    assert leftovers(out_dir) == [output], outcome.describe()
    streams = read_streams(output)
    assert json.loads(outcome.stdout)["streams"] == len(streams)
    again = folder / "again.jsonl"
    write_streams(again, streams)
    assert again.read_bytes() == output.read_bytes()
    return 0


@st.composite
def damaged(draw: st.DrawFn, seeds: dict[str, bytes]) -> dict[str, bytes]:
    """The seed files with one of them damaged at byte level."""
    name = draw(st.sampled_from(sorted(seeds)))
    return {**seeds, name: draw(mutated_bytes(seeds[name]))}


def _write(folder: Path, files: dict[str, bytes]) -> list[Path]:
    paths = []
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        paths.append(path)
    return paths


def _fuzz(files: dict[str, bytes], reader: str, args: Callable[[Path], Command]) -> int:
    with scratch() as tmp:
        folder = Path(tmp)
        inputs = _write(folder / "in", files)
        return _run_import(folder, inputs, args(folder / "in"), reader)


SLTEV_SEEDS = {"talk.en.OStt": _head(SLTEV_PARTIALS, 30), "talk.en.OSt": _head(SLTEV_SOURCE, 3)}


def _asr_args(partials: str) -> Callable[[Path], Command]:
    def args(folder: Path) -> Command:
        source = folder / "talk.en.OSt"
        return "streams asr", {"partials": [str(folder / partials)], "source": source, "tgt_lang": "de"}

    return args


@settings(max_examples=examples(100))
@given(files=damaged(SLTEV_SEEDS))
def test_sltev_partials(files: dict[str, bytes]) -> None:
    _fuzz(files, "partials: sltev", _asr_args("talk.en.OStt"))


WHISPER_SEEDS = {"candidate.2022.acl-long.110.txt": _head(WHISPER, 10)}


@settings(max_examples=examples(100))
@given(files=damaged(WHISPER_SEEDS))
def test_whisper_streaming_partials(files: dict[str, bytes]) -> None:
    _fuzz(files, "partials: whisper-streaming", _whisper_args)


def _whisper_args(folder: Path) -> Command:
    partials = [str(folder / "candidate.2022.acl-long.110.txt")]
    options = {"data_dir": FIX / "acl6060", "partials": partials, "partials_format": "whisper-streaming"}
    return "streams acl6060", {**options, "tgt_lang": "de"}


@settings(max_examples=examples(100))
@given(data=st.data())
def test_jsonl_partials(data: st.DataObject) -> None:
    partials = data.draw(mutated_lines_json(_sltev_as_jsonl()))
    files = {"talk.jsonl": partials, "talk.en.OSt": SLTEV_SEEDS["talk.en.OSt"]}
    _fuzz(files, "partials: jsonl", _asr_args("talk.jsonl"))


ACL_LINE_SEEDS = {f"dev/{p.name}": p.read_bytes() for p in ACL_LINES.iterdir() if ".ja." not in p.name}
YAML_NAME = "dev/acl6060_dev_gold_segments.yaml"


def _acl_args(folder: Path) -> Command:
    return "streams acl6060", {"data_dir": folder, "simulate": True, "tgt_lang": "de"}


@settings(max_examples=examples(100))
@given(data=st.data())
def test_segment_yaml(data: st.DataObject) -> None:
    seed = ACL_LINE_SEEDS[YAML_NAME]
    if data.draw(st.booleans()):
        content = data.draw(mutated_bytes(seed))
    else:  # structural damage: keys dropped, types swapped, huge and negative numbers, hostile text
        rows = data.draw(mutated_json(yaml.safe_load(seed)))
        content = yaml.safe_dump(rows, allow_unicode=data.draw(st.booleans())).encode(
            "utf-8", "surrogatepass"
        )
    _fuzz({**ACL_LINE_SEEDS, YAML_NAME: content}, "segment YAML", _acl_args)


@settings(max_examples=examples(100))
@given(files=damaged({k: v for k, v in ACL_LINE_SEEDS.items() if k != YAML_NAME}))
def test_acl6060_line_files(files: dict[str, bytes]) -> None:
    _fuzz({**files, YAML_NAME: ACL_LINE_SEEDS[YAML_NAME]}, "ACL 60/60 line files", _acl_args)


ACL_XML_SEEDS = {
    "dev/text/xml/ACL.6060.dev.en-xx.en.xml": (
        ACL_RELEASE / "text" / "xml" / "ACL.6060.dev.en-xx.en.xml"
    ).read_bytes(),
    "dev/text/xml/ACL.6060.dev.en-xx.de.xml": (
        ACL_RELEASE / "text" / "xml" / "ACL.6060.dev.en-xx.de.xml"
    ).read_bytes(),
}
ACL_XML_YAML = {
    "dev/ACL.6060.dev.en-xx.gold_segments.yaml": (
        ACL_RELEASE / "ACL.6060.dev.en-xx.gold_segments.yaml"
    ).read_bytes()
}


@settings(max_examples=examples(60))
@given(files=damaged(ACL_XML_SEEDS))
def test_acl6060_release_xml(files: dict[str, bytes]) -> None:
    _fuzz({**files, **ACL_XML_YAML}, "ACL 60/60 XML", _acl_args)


FLORES_SEEDS = {
    f"devtest/{lang}.devtest": _head(FLORES / f"{lang}.devtest", 4) for lang in ("eng_Latn", "deu_Latn")
}


@settings(max_examples=examples(100))
@given(files=damaged(FLORES_SEEDS))
def test_flores_line_files(files: dict[str, bytes]) -> None:
    _fuzz(files, "FLORES line files", _flores_args)


def _flores_args(folder: Path) -> Command:
    return "streams flores", {"data_dir": folder, "tgt_lang": "deu_Latn"}


def test_seeds_import_cleanly() -> None:
    """The undamaged seeds are accepted: the properties above are about damage, not about the samples."""
    assert _fuzz(SLTEV_SEEDS, "seeds", _asr_args("talk.en.OStt")) == 0
    assert _fuzz(ACL_LINE_SEEDS, "seeds", _acl_args) == 0
    assert _fuzz({**ACL_XML_SEEDS, **ACL_XML_YAML}, "seeds", _acl_args) == 0
    assert _fuzz(WHISPER_SEEDS, "seeds", _whisper_args) == 0
    assert (
        _fuzz(
            {"talk.jsonl": "".join(json.dumps(x) + "\n" for x in _sltev_as_jsonl()).encode(), **SLTEV_SEEDS},
            "seeds",
            _asr_args("talk.jsonl"),
        )
        == 0
    )
    assert _fuzz(FLORES_SEEDS, "seeds", _flores_args) == 0

"""Run directories for the properties that read whole runs (`simul rank`, `simul show`'s error spans, `simul
score`'s segment-time caption), and the ways their files are damaged.

* a sentence-level run of the tiny model (two streams, RT and SSBD), as tests/fuzz/test_fuzz_rundirs.py
  builds it;
* runs of whole talks ingested from the hand-written fixtures of tests/data/longform (no model: fast), each a
  system of its own on the same talks, so that `simul rank` puts them in one group and bootstraps them.

A damaged file is mutated at the JSON level (tests/fuzz/mutate.py), at the byte level, removed, or has one of
the fields a reader relies on replaced or dropped (:func:`targeted_json`): random mutations reach a given
field of a large run.json only now and then.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from simul.runs.directory import PER_STREAM_FILE, RUN_FILE, STEPS_FILE, STREAMS_FILE, TIMINGS_FILE
from simul.streams.format import write_streams
from tests.fuzz.cli import invoke
from tests.fuzz.mutate import (
    dump_json,
    hostile_text,
    mutated_bytes,
    mutated_json,
    mutated_lines_json,
    weird_values,
)
from tests.helpers import eval_args, make_streams

RUN_FILES = (RUN_FILE, STEPS_FILE, TIMINGS_FILE, STREAMS_FILE, PER_STREAM_FILE)
LONGFORM_DATA = Path(__file__).resolve().parent.parent / "data" / "longform"
TALKS = LONGFORM_DATA / "talks.jsonl"
# (format, outputs file) of the ingested systems of talks
TALK_SYSTEMS = {"omnisteval": "omnisteval.jsonl", "simulstream": "simulstream_talks.jsonl"}

JsonPath = tuple[str | int, ...]
Files = dict[str, bytes | None]  # file name -> content (None: the file is removed)


class Seeds(dict[str, dict[str, bytes]]):
    """The intact files of the runs, by run: a fixture's value, which Hypothesis prints with a failing
    input, so its repr names the files only (whole files would make the report tens of kilobytes long)."""

    def __repr__(self) -> str:
        return f"Seeds({', '.join(f'{run}: {sorted(files)}' for run, files in self.items())})"


class Damaged:
    """Runs (by folder name) with one file of one of them damaged; its repr shows only the damaged file, for
    the same reason (not a dataclass, which Hypothesis would print field by field)."""

    def __init__(self, runs: dict[str, Files], run: str, file: str) -> None:
        self.runs, self.run, self.file = runs, run, file

    def __repr__(self) -> str:
        content = self.runs[self.run][self.file]
        shown = (
            "removed" if content is None else repr(content[:2000]) + ("..." if len(content) > 2000 else "")
        )
        return f"Damaged({self.run}/{self.file}: {shown})"


@st.composite
def damaged_runs(
    draw: st.DrawFn,
    runs: dict[str, dict[str, bytes]],
    fields: Mapping[str, Sequence[JsonPath]],
    weights: Mapping[str, int] | None = None,
) -> Damaged:
    """``runs`` with one file of one of them damaged (:func:`damaged_file`); ``fields``: the fields a reader
    relies on, by file name (for targeted damage); ``weights``: how often each file is picked, by name
    (default 1 each)."""
    which = draw(st.sampled_from(sorted(runs)))
    files = runs[which]
    names = [name for name in sorted(files) for _ in range((weights or {}).get(name, 1))]
    name = draw(st.sampled_from(names))
    damaged = draw(damaged_file(name, files[name], fields.get(name, ())))
    out: dict[str, Files] = {run: dict(contents) for run, contents in runs.items()}
    out[which][name] = damaged
    return Damaged(out, which, name)


def sentence_run(model: Path, folder: Path) -> Path:
    """A run of the tiny model on two short streams, RT and SSBD (``folder/sentences``)."""
    streams = folder / "streams.jsonl"
    write_streams(streams, make_streams()[:2])
    out = folder / "sentences"
    outcome = invoke([*eval_args(model, streams, "--beta", "0.2", "--mask-k", "2", "--out", str(out))])
    assert outcome.code == 0, outcome.describe()
    return out


def talk_run(folder: Path, fmt: str, streams: Path = TALKS) -> Path:
    """An ingested system of whole talks (``folder/<fmt>``), scored without COMET."""
    out = folder / fmt
    outcome = invoke(
        [
            *("ingest", str(LONGFORM_DATA / TALK_SYSTEMS[fmt]), "--format", fmt, "--streams", str(streams)),
            *("--out", str(out), "--comet-model", "none", "--quiet", "--name", fmt),
        ]
    )
    assert outcome.code == 0, outcome.describe()
    return out


def files_of(run: Path, names: Sequence[str] = RUN_FILES) -> dict[str, bytes]:
    return {name: (run / name).read_bytes() for name in names if (run / name).is_file()}


def materialize(folder: Path, files: Files) -> Path:
    """The files (those not removed) written into the new folder ``folder``."""
    folder.mkdir(parents=True)
    for name, content in files.items():
        if content is not None:
            (folder / name).write_bytes(content)
    return folder


def snapshot(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run.iterdir()) if p.is_file()}


def _holds(obj: Any, part: str | int) -> bool:
    if isinstance(obj, dict):
        return isinstance(part, str) and part in obj
    return isinstance(obj, list) and isinstance(part, int) and -len(obj) <= part < len(obj)


def _parent(obj: Any, path: JsonPath) -> Any:
    """The container holding the value at ``path``, or None when the path is not there."""
    for part in path[:-1]:
        if not _holds(obj, part):
            return None
        obj = obj[part]
    return obj if isinstance(obj, dict | list) else None


@st.composite
def targeted_json(draw: st.DrawFn, seed: Any, paths: Sequence[JsonPath]) -> Any:
    """``seed`` with the value at one or two of ``paths`` (those whose container is there) replaced by a
    value of any type, hostile text or an empty container, or dropped."""
    obj = copy.deepcopy(seed)
    for _ in range(draw(st.integers(1, 2))):
        path = draw(st.sampled_from(paths))
        parent, last = _parent(obj, path), path[-1]
        if isinstance(parent, dict) and isinstance(last, str):
            if draw(st.integers(0, 4)) == 0:
                parent.pop(last, None)
            else:
                parent[last] = copy.deepcopy(draw(st.one_of(weird_values, hostile_text)))
        elif isinstance(parent, list) and isinstance(last, int) and -len(parent) <= last < len(parent):
            parent[last] = copy.deepcopy(draw(weird_values))
    return obj


def encode_json(obj: Any, ascii_only: bool) -> bytes:
    return (dump_json(obj, ascii_only) + "\n").encode("utf-8", "surrogatepass")


def encode_lines(lines: Sequence[Any], ascii_only: bool) -> bytes:
    return "".join(dump_json(x, ascii_only) + "\n" for x in lines).encode("utf-8", "surrogatepass")


@st.composite
def damaged_file(draw: st.DrawFn, name: str, content: bytes, paths: Sequence[JsonPath] = ()) -> bytes | None:
    """One file of a run damaged: JSON-level, byte-level, removed, or (``paths``, of the JSON file or of one
    line of a JSON-lines file) a field a reader relies on replaced or dropped."""
    hows = ["json", "bytes", "remove", *(["targeted"] * 3 if paths else [])]
    how = draw(st.sampled_from(hows))
    if how == "remove":
        return None
    if how == "bytes":
        return draw(mutated_bytes(content))
    text = content.decode("utf-8")
    if name.endswith(".json"):
        obj = json.loads(text)
        changed = draw(targeted_json(obj, paths) if how == "targeted" else mutated_json(obj))
        return encode_json(changed, draw(st.booleans()))
    lines = [json.loads(line) for line in text.split("\n") if line]  # not splitlines: U+2028 is text here
    if how == "targeted":
        k = draw(st.integers(0, len(lines) - 1))
        lines[k] = draw(targeted_json(lines[k], paths))
        return encode_lines(lines, draw(st.booleans()))
    return draw(mutated_lines_json(lines))

"""Hostile run files (issue 31): every value read from a run directory passes the schema (simul.runs.schema)
and the escaping of the rest of the output (simul.common.safe_text) before it reaches the terminal.

The systematic test replaces, one at a time, every value and every key of run.json, and of the first line of
each JSON-lines file, with text that would drive a terminal, and runs `score`, `diff` (table and markdown),
`show` and `export` on the result: each ends with a documented exit code, without a traceback, and prints
nothing raw.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from simul.common.safe_text import has_unsafe
from simul.runs.directory import PER_STREAM_FILE, RUN_FILE, STEPS_FILE, STREAMS_FILE, TIMINGS_FILE
from simul.streams.format import write_streams
from tests.fuzz.cli import Outcome, invoke
from tests.helpers import eval_args, make_streams

HOSTILE = "\x1f\x1b]0;pwned\x07\u202e"
JsonPath = tuple[str | int, ...]


@pytest.fixture(scope="module")
def made(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A real run of two streams whose CPU records say every method's timing was unreliable (so that the
    timing notes, which print from environment.cpu_usage, are shown), and the arguments that made it."""
    root = tmp_path_factory.mktemp("hostile-run")
    streams = root / "streams.jsonl"
    write_streams(streams, make_streams()[:2])
    run = root / "base"
    args = eval_args(tiny_model, streams, "--beta", "0.2", "--mask-k", "2", "--threads", "2")
    outcome = invoke([*args, "--out", str(run)])
    assert outcome.code == 0, outcome.describe()
    doc = json.loads((run / RUN_FILE).read_text())
    for record in doc["environment"]["cpu_usage"]["methods"].values():
        record["reliable"] = False
    (run / RUN_FILE).write_text(json.dumps(doc))
    return run, args


def _copy(base: Path, target: Path, name: str, edit: Any) -> Path:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(base, target)
    if name == RUN_FILE:
        doc = json.loads((target / name).read_text())
        edit(doc)
        (target / name).write_text(json.dumps(doc))
    else:
        first, *rest = (target / name).read_text().splitlines()
        doc = json.loads(first)
        edit(doc)
        (target / name).write_text("\n".join([json.dumps(doc), *rest]) + "\n")
    return target


def _safe(outcome: Outcome) -> None:
    assert outcome.error is None, f"traceback:\n{outcome.describe()}"
    assert outcome.code in (0, 1, 2, 3), outcome.describe()
    assert not has_unsafe(outcome.stderr) and not has_unsafe(outcome.stdout), outcome.describe()


def test_a_control_character_as_the_thread_count_is_refused(
    made: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """The fuzz finding: `simul score` printed environment.cpu_usage.threads (U+001F) raw in the timing
    caption. The schema now refuses it, naming the file and the field, and `eval --resume` too."""
    base, args = made

    def edit(doc: dict[str, Any]) -> None:
        doc["environment"]["cpu_usage"]["threads"] = "\x1f"

    run = _copy(base, tmp_path / "run", RUN_FILE, edit)
    for command in (
        ["score", str(run)],
        ["diff", str(base), str(run)],
        [*args, "--out", str(run), "--resume"],
    ):
        outcome = invoke(command)
        _safe(outcome)
        message = " ".join(outcome.stderr.split())
        assert outcome.code == 1 and "'environment.cpu_usage.threads' must be a whole number >= 1" in message
        assert str(run / RUN_FILE) in message


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("calls", "3"),
        ("cpu_seconds", -1.0),
        ("runqueue_seconds", [1]),
        ("reliable", "no"),
        ("load1_max", True),
    ],
)
def test_a_cpu_record_of_the_wrong_kind_is_refused_not_a_traceback(
    made: tuple[Path, list[str]], tmp_path: Path, field: str, value: object
) -> None:
    base, args = made

    def edit(doc: dict[str, Any]) -> None:
        doc["environment"]["cpu_usage"]["methods"]["rt"][field] = value

    run = _copy(base, tmp_path / "run", RUN_FILE, edit)
    for command in (["score", str(run)], [*args, "--out", str(run), "--resume"]):
        outcome = invoke(command)
        _safe(outcome)
        assert outcome.code == 1 and f"environment.cpu_usage.methods.'rt'.{field}'" in outcome.stderr


def test_the_cpu_record_of_a_method_the_run_does_not_have_is_not_printed(
    made: tuple[Path, list[str]], tmp_path: Path
) -> None:
    base, _ = made

    def edit(doc: dict[str, Any]) -> None:
        records = doc["environment"]["cpu_usage"]["methods"]
        records[f"rt{HOSTILE}"] = records.pop("rt")

    run = _copy(base, tmp_path / "run", RUN_FILE, edit)
    outcome = invoke(["score", str(run)])
    _safe(outcome)
    assert outcome.code == 0 and "SSBD(b=0.2)+display-mask2 got" in " ".join(outcome.stderr.split())
    assert "pwned" not in outcome.stderr


def _places(obj: Any, path: JsonPath = ()) -> Iterator[tuple[str, JsonPath]]:
    """Every value (``set``) and every key (``key``) of a JSON document, by path."""
    if path:
        yield "set", path
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield "key", (*path, key)
            yield from _places(value, (*path, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield from _places(value, (*path, index))


def _edit(how: str, path: JsonPath) -> Any:
    def edit(doc: Any) -> None:
        for part in path[:-1]:
            doc = doc[part]
        if how == "set":
            doc[path[-1]] = HOSTILE
        else:
            doc[f"{path[-1]}{HOSTILE}"] = doc.pop(path[-1])

    return edit


def check_places(base: Path, work: Path, name: str, places: list[tuple[str, JsonPath]]) -> list[str]:
    """Each place of ``name`` made hostile in turn in a copy of ``base`` under ``work``, and read by
    `score`, `diff` (table and markdown), `show` and, for the JSON-lines files, `export`: the description
    of every command that failed the property (a traceback, an undocumented exit, raw output)."""
    failures = []
    for how, path in places:
        run = _copy(base, work / "run", name, _edit(how, path))
        commands = [
            ["score", str(run)],
            ["diff", str(base), str(run), "--bootstrap", "5"],
            ["diff", str(base), str(run), "--bootstrap", "5", "--markdown"],
            ["show", str(run), "--stream", "s0"],
        ]
        if name != RUN_FILE:  # export reads the same run.json values as show; the JSON-lines files vary more
            commands.append(["export", str(run), "-o", str(work / "export" / f"{len(path)}.log")])
        for command in commands:
            outcome = invoke(command)
            try:
                _safe(outcome)
            except AssertionError as error:
                failures.append(f"{how} {path}: {error}")
    return failures


@pytest.mark.parametrize("name", [RUN_FILE, STEPS_FILE, PER_STREAM_FILE, TIMINGS_FILE, STREAMS_FILE])
def test_every_value_of_a_run_file_is_checked_or_escaped(
    made: tuple[Path, list[str]], tmp_path: Path, name: str
) -> None:
    """Every place is checked; the places are dealt round-robin to one worker process per CPU (at most
    four), each running the commands in-process as the fuzz suite does. The commands only read files, so
    the workers share nothing but the base run: run.json's 600-odd places took 88 s in one process on a
    2-core Intel Xeon, most of it Rich laying out diff's tables, while the suite left the second core idle."""
    base, _ = made
    text = (base / name).read_text()
    doc = json.loads(text if name == RUN_FILE else text.splitlines()[0])
    places = list(_places(doc))
    assert len(places) > (600 if name == RUN_FILE else 15)
    workers = max(1, min(4, len(os.sched_getaffinity(0))))
    shares = [places[i::workers] for i in range(workers)]
    if workers == 1:
        failures = check_places(base, tmp_path / "w0", name, places)
    else:
        context = multiprocessing.get_context("spawn")  # no fork of a process that holds llama's threads
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            done = [
                pool.submit(check_places, base, tmp_path / f"w{i}", name, share)
                for i, share in enumerate(shares)
            ]
            failures = [failure for future in done for failure in future.result()]
    assert sum(map(len, shares)) == len(places)
    assert not failures, f"{len(failures)} of {len(places)} places:\n" + "\n".join(failures[:5])

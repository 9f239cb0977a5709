"""Run directories under fire: a real run (tiny model, RT and SSBD) with one of its files damaged, handed to
`simul score`, `diff`, `show` and `export`.

Properties (tests/fuzz/cli.py): a documented exit code and no traceback; an error names the run directory
(or a file in it); nothing printed drives the terminal; an error leaves no output behind and `score
--update` changes no file unless it succeeds; what export writes is JSON lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simul.common.safe_text import has_unsafe
from simul.runs.directory import PER_STREAM_FILE, RUN_FILE, STEPS_FILE, STREAMS_FILE, TIMINGS_FILE
from simul.streams.format import write_streams
from tests.fuzz.budget import examples, scratch, tried
from tests.fuzz.cli import check, invoke, leftovers
from tests.fuzz.mutate import dump_json, mutated_bytes, mutated_json, mutated_lines_json
from tests.fuzz.runs import materialize, snapshot
from tests.helpers import eval_args, make_streams

FILES = (RUN_FILE, STEPS_FILE, TIMINGS_FILE, STREAMS_FILE, PER_STREAM_FILE)


@pytest.fixture(scope="module")
def base_run(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz-run")
    streams = root / "streams.jsonl"
    write_streams(streams, make_streams()[:2])
    out = root / "base"
    outcome = invoke([*eval_args(tiny_model, streams, "--beta", "0.2", "--mask-k", "2", "--out", str(out))])
    assert outcome.code == 0, outcome.describe()
    return out


@st.composite
def damage(draw: st.DrawFn, run: Path) -> dict[str, bytes | None]:
    """The run's files with one of them damaged (None: the file is removed)."""
    files = {name: (run / name).read_bytes() for name in FILES}
    name = draw(st.sampled_from(FILES))
    how = draw(st.sampled_from(["json", "bytes", "remove"]))
    if how == "remove":
        return {**files, name: None}
    content = files[name]
    assert content is not None
    if how == "bytes":
        return {**files, name: draw(mutated_bytes(content))}
    if name == RUN_FILE:
        obj = draw(mutated_json(json.loads(content)))
        return {**files, name: (dump_json(obj, draw(st.booleans())) + "\n").encode("utf-8", "surrogatepass")}
    lines = [json.loads(line) for line in content.decode().splitlines()]
    return {**files, name: draw(mutated_lines_json(lines))}


@settings(max_examples=examples(60))
@given(data=st.data())
def test_score(base_run: Path, data: st.DataObject) -> None:
    files = data.draw(damage(base_run))
    update = data.draw(st.booleans())
    tried("run dir: score")
    with scratch() as tmp:
        run = materialize(Path(tmp) / "new", files)
        before = snapshot(run)
        outcome = invoke(["score", str(run), "--json", *(["--update"] if update else [])])
        check(outcome, [run])
        if outcome.code != 0 or not update:
            assert snapshot(run) == before, f"score changed the run directory:\n{outcome.describe()}"
        if outcome.code == 0:
            assert json.loads(outcome.stdout)["methods"]


@settings(max_examples=examples(60))
@given(data=st.data())
def test_diff(base_run: Path, data: st.DataObject) -> None:
    files = data.draw(damage(base_run))
    form = data.draw(st.sampled_from([[], ["--markdown"], ["--json"]]))
    tried("run dir: diff")
    with scratch() as tmp:
        intact, run = base_run, materialize(Path(tmp) / "new", files)
        before = snapshot(run)
        outcome = invoke(["diff", str(intact), str(run), "--bootstrap", "5", *form])
        check(outcome, [intact, run], codes=(0, 1, 2, 3))
        assert snapshot(run) == before
        if outcome.code in (0, 3) and form == ["--json"]:
            json.loads(outcome.stdout)
        if form == ["--markdown"]:
            assert not has_unsafe(outcome.stdout), outcome.describe()


@settings(max_examples=examples(60))
@given(data=st.data())
def test_show(base_run: Path, data: st.DataObject) -> None:
    files = data.draw(damage(base_run))
    stream = data.draw(st.sampled_from(["s0", "s1"]))
    tried("run dir: show")
    with scratch() as tmp:
        run = materialize(Path(tmp) / "new", files)
        out_dir = Path(tmp) / "out"
        out_dir.mkdir()
        page = out_dir / "page.html"
        outcome = invoke(["show", str(run), "--stream", stream, "--html", str(page)])
        check(outcome, [run])
        assert leftovers(out_dir) == ([page] if outcome.code == 0 else []), outcome.describe()


@settings(max_examples=examples(60))
@given(data=st.data())
def test_export(base_run: Path, data: st.DataObject) -> None:
    files = data.draw(damage(base_run))
    tried("run dir: export")
    with scratch() as tmp:
        run = materialize(Path(tmp) / "new", files)
        out_dir = Path(tmp) / "out"
        out_dir.mkdir()
        target = out_dir / "instances.log"
        outcome = invoke(["export", str(run), "-o", str(target)])
        check(outcome, [run])
        # SimulEval's --score-only reads config.yaml beside the log
        written = sorted([target, out_dir / "config.yaml"]) if outcome.code == 0 else []
        assert sorted(leftovers(out_dir)) == written, outcome.describe()
        if outcome.code == 0:
            # JSON lines are split at "\n" only (splitlines would also split at U+2028 inside a string)
            for line in target.read_text(encoding="utf-8").split("\n")[:-1]:
                assert isinstance(json.loads(line), dict)


def test_the_intact_run_is_accepted_by_every_command(base_run: Path, tmp_path: Path) -> None:
    """The properties above are about damage: the undamaged run passes every command."""
    files: dict[str, bytes | None] = {name: (base_run / name).read_bytes() for name in FILES}
    intact, run = base_run, materialize(tmp_path / "new", files)
    assert invoke(["score", str(run)]).code == 0
    assert invoke(["diff", str(intact), str(run), "--bootstrap", "5"]).code == 0
    assert invoke(["show", str(run), "--stream", "s0"]).code == 0
    assert invoke(["export", str(run), "-o", str(tmp_path / "i.log")]).code == 0

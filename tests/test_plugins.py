"""Methods from outside simul (issue 33, part 2; docs/methods.md, "Methods from outside simul"): the example
method of the docs loaded through its entry point from a temporary package and run in `simul eval` on the
tiny model; its key, label, options and run-file records; its runs read by score, show, export, diff and
merge once it is gone; plug-ins simul cannot use refused with one message naming them; a plug-in that fails
inside a step stops the run as ``failed``, its finished streams kept and resumable."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import UsageError
from simul.decoding.methods.plugins import PluginFailed, PluginRefused, load, plugin_shape
from simul.decoding.methods.protocol import PROTOCOL_VERSION, Position, StepStart
from simul.request.methods import Method, plugin_method
from simul.request.plugin_spec import ENTRY_POINT_GROUP, parse_options, plugin_key
from simul.runs.directory import STATUS_COMPLETE, STATUS_FAILED, load_run
from simul.runs.schema import method_from_json
from tests.helpers import eval_args

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "tests" / "data" / "plugins" / "simul_example_method.py"
MODULE = "simul_example_method"
ENTRY = "exact-rt"
TARGET = f"{MODULE}:ExactRetranslation"
KEY = "plugin-exact-rt-hide=1"
THREADS = ("--threads", "2")

runner = CliRunner()


def forget(*modules: str) -> None:
    for name in modules:
        sys.modules.pop(name, None)
    importlib.invalidate_caches()


def make_site(
    site: Path, files: dict[str, str], entry_points: dict[str, str] | None = None, dist: str = "example"
) -> Path:
    """A folder to put on sys.path: the modules ``files`` (name -> source) and, with ``entry_points``, a
    distribution's dist-info registering them in the group simul.methods, as `pip install` would leave it."""
    site.mkdir(parents=True, exist_ok=True)
    for name, source in files.items():
        (site / f"{name}.py").write_text(source, encoding="utf-8")
    if entry_points is not None:
        info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n", encoding="utf-8"
        )
        lines = [f"[{ENTRY_POINT_GROUP}]", *(f"{name} = {value}" for name, value in entry_points.items())]
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return site


@pytest.fixture
def example_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The docs' example method installed in a temporary folder on sys.path, with its entry point."""
    site = make_site(
        tmp_path / "site",
        {MODULE: EXAMPLE.read_text(encoding="utf-8")},
        {ENTRY: TARGET},
        dist="simul-example-method",
    )
    forget(MODULE)
    monkeypatch.syspath_prepend(str(site))
    yield site
    forget(MODULE)


def uninstall(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Take the plug-in away: off sys.path, out of sys.modules, its files deleted."""
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(site)])
    shutil.rmtree(site)
    forget(MODULE)


def steps(run_dir: Path) -> dict[str, list[dict[str, object]]]:
    by_method: dict[str, list[dict[str, object]]] = {}
    for line in (run_dir / "steps.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        by_method.setdefault(record["method"], []).append(record)
    return by_method


# -- the example, through its entry point --------------------------------------------------------------------


def test_the_example_runs_through_its_entry_point_and_is_read_without_it(
    tiny_model: Path, streams_file: Path, example_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    args = ("--method", ENTRY, "--method-option", "hide=1", *THREADS, "--json", "--out", str(out))
    result = runner.invoke(app, eval_args(tiny_model, streams_file, *args))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [(m["key"], m["label"]) for m in doc["methods"]] == [("rt", "RT"), (KEY, "exact-rt(hide=1)")]

    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["status"] == STATUS_COMPLETE
    recorded = run["config"]["methods"][1]
    assert (recorded["name"], recorded["plugin"], recorded["module"]) == ("plugin", ENTRY, TARGET)
    assert recorded["options"] == {"hide": "1"}
    assert run["config"]["plugins"] == {
        KEY: {
            "entry_point": ENTRY,
            "module": TARGET,
            "protocol_version": PROTOCOL_VERSION,
            "options": {"hide": "1"},
            "version": "0.1",
            "source_sha256": hashlib.sha256((example_site / f"{MODULE}.py").read_bytes()).hexdigest(),
        }
    }
    # exact greedy acceptance of the previous output: RT's outputs, token for token, with drafts kept
    by_method = steps(out)
    assert [s["output_ids"] for s in by_method[KEY]] == [s["output_ids"] for s in by_method["rt"]]
    assert sum(int(s["accepted"]) for s in by_method[KEY]) > 0  # type: ignore[call-overload]
    rt_passes = sum(int(s["decode_passes"]) for s in by_method["rt"])  # type: ignore[call-overload]
    assert sum(int(s["decode_passes"]) for s in by_method[KEY]) < rt_passes  # type: ignore[call-overload]

    uninstall(example_site, monkeypatch)
    with pytest.raises(PluginRefused, match=f"method plug-in {ENTRY} .*no module {MODULE}"):
        load(method_from_json(recorded, "run.json"))  # gone: every reader below runs without it

    scored = runner.invoke(app, ["score", str(out), "--json", "--quiet"])
    assert scored.exit_code == 0, scored.output
    rescored = {m["key"]: m["metrics"]["chrf"] for m in json.loads(scored.stdout)["methods"]}
    assert rescored == {m["key"]: m["metrics"]["chrf"] for m in doc["methods"]}
    shown = runner.invoke(app, ["show", str(out), "--stream", "s0", "--method", KEY], terminal_width=200)
    assert shown.exit_code == 0 and "exact-rt(hide=1)" in shown.output, shown.output
    exported = runner.invoke(app, ["export", str(out), "--format", "simuleval", "--method", KEY])
    assert exported.exit_code == 0, exported.output
    assert (out / "simuleval" / KEY / "instances.log").is_file()
    shutil.copytree(out, tmp_path / "copy", ignore=shutil.ignore_patterns("simuleval"))
    compared = runner.invoke(app, ["diff", str(out), str(tmp_path / "copy")])
    assert compared.exit_code == 0, compared.output


def test_shards_of_a_plugin_run_merge_without_it(
    tiny_model: Path, streams_file: Path, example_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shards = []
    for k in (1, 2):
        shard = tmp_path / f"shard{k}"
        args = ("--method", ENTRY, "--no-baseline", *THREADS, "--shard", f"{k}/2", "--out", str(shard))
        result = runner.invoke(app, eval_args(tiny_model, streams_file, *args))
        assert result.exit_code == 0, result.output
        shards.append(shard)
    uninstall(example_site, monkeypatch)
    merged = tmp_path / "merged"
    result = runner.invoke(app, ["merge", str(merged), *(str(s) for s in shards), "--quiet"])
    assert result.exit_code == 0, result.output
    run = load_run(merged)
    assert [m.key for m in run.methods] == ["plugin-exact-rt"] and len(run.complete) == 4
    assert run.run["config"]["plugins"]["plugin-exact-rt"]["options"] == {"hide": "0"}  # its default


def test_shards_decoded_by_different_plugin_code_are_not_merged(
    tiny_model: Path, streams_file: Path, example_site: Path, tmp_path: Path
) -> None:
    shards = []
    for k in (1, 2):
        if k == 2:  # the plug-in's file changed between the shards
            with (example_site / f"{MODULE}.py").open("a", encoding="utf-8") as handle:
                handle.write("# changed\n")
            forget(MODULE)
        shard = tmp_path / f"shard{k}"
        args = ("--method", ENTRY, "--no-baseline", *THREADS, "--shard", f"{k}/2", "--out", str(shard))
        result = runner.invoke(app, eval_args(tiny_model, streams_file, *args))
        assert result.exit_code == 0, result.output
        shards.append(shard)
    result = runner.invoke(app, ["merge", str(tmp_path / "merged"), *(str(s) for s in shards), "--quiet"])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "different config.plugins.plugin-exact-rt.source_sha256" in said, said


@pytest.mark.slow  # starting Ray and two workers takes well over 30 s on a loaded 2-core machine
def test_ray_workers_import_the_plugin_by_its_module_path(
    tiny_model: Path, streams_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers have the module on their path (PYTHONPATH) but not its entry point, which only this
    process sees: they load the plug-in by the module path the method holds."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'simul[ray]')")
    code = make_site(tmp_path / "code", {MODULE: EXAMPLE.read_text(encoding="utf-8")})
    points = make_site(tmp_path / "points", {}, {ENTRY: TARGET}, dist="simul-example-method")
    forget(MODULE)
    monkeypatch.syspath_prepend(str(code))
    monkeypatch.syspath_prepend(str(points))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, (str(code), os.environ.get("PYTHONPATH")))))
    out = tmp_path / "ray"
    args = ("--method", ENTRY, "--method-option", "hide=1", "--threads", "1", "--n-ctx", "1024")
    try:
        result = runner.invoke(
            app,
            eval_args(
                tiny_model, streams_file, *args, "--out", str(out), "--ray", "local", "--ray-workers", "2"
            ),
        )
    finally:
        forget(MODULE)
    assert result.exit_code == 0, result.output
    run = load_run(out)
    assert run.run["status"] == STATUS_COMPLETE and len(run.run["shards"]) >= 2 and len(run.complete) == 4
    assert run.run["config"]["plugins"][KEY]["entry_point"] == ENTRY
    by_method = steps(out)
    assert [s["output_ids"] for s in by_method[KEY]] == [s["output_ids"] for s in by_method["rt"]]
    assert sum(int(s["accepted"]) for s in by_method[KEY]) > 0  # type: ignore[call-overload]


def test_a_plugin_is_imported_by_its_module_path(example_site: Path) -> None:
    """What an entry point names is resolved once, where the command runs: the method holds the module path,
    and a process that has the module but not the entry point (a Ray worker, a shard) loads it by that."""
    by_entry = plugin_method(ENTRY, ["hide=2"])
    assert (by_entry.plugin, by_entry.module, by_entry.options) == (ENTRY, TARGET, (("hide", "2"),))
    for info in example_site.glob("*.dist-info"):
        shutil.rmtree(info)
    importlib.invalidate_caches()
    with pytest.raises(UsageError, match="not a method"):
        plugin_method(ENTRY)
    assert load(by_entry).options == {"hide": "2"}
    by_path = plugin_method(TARGET)
    assert by_path.key == "plugin-simul_example_method.ExactRetranslation" and by_path.label == TARGET
    assert load(by_path).record()["options"] == {"hide": "0"} and "entry_point" not in load(by_path).record()


def test_the_docs_show_the_example_method() -> None:
    """docs/methods.md's worked example is the file the tests run."""
    docs = (REPO / "docs" / "methods.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", docs, flags=re.S)
    assert EXAMPLE.read_text(encoding="utf-8") in blocks


# -- keys, labels, options -----------------------------------------------------------------------------------


def test_keys_labels_and_options() -> None:
    assert parse_options(["b=2", "a=x y", "c="]) == (("a", "x y"), ("b", "2"), ("c", ""))
    for bad in (["novalue"], ["1a=2"], ["a=1", "a=2"], ["=3"]):
        with pytest.raises(UsageError, match="--method-option"):
            parse_options(bad)
    odd = hashlib.sha256(b"x y").hexdigest()[:8]
    assert plugin_key("mine", (("a", "x y"), ("b", "2"))) == f"plugin-mine-a~{odd}-b=2"
    method = Method("plugin", plugin="mine", module="pkg.mod:Mine", options=(("n", "/data/ngrams.txt"),))
    assert method.key.startswith("plugin-mine-n~") and "/" not in method.key
    assert method.label == "mine(n=/data/ngrams.txt)"
    again = Method.from_json(json.loads(json.dumps(method.to_json())))
    assert again == method and again.key == method.key
    with pytest.raises(UsageError, match="--beta is for simul's own methods"):
        Method("plugin", plugin="mine", module="pkg.mod:Mine", beta=0.2)
    with pytest.raises(UsageError, match="--method-option"):
        Method("ssbd", beta=0.2, options=(("n", "1"),))
    with pytest.raises(UsageError, match="cannot name a method plug-in"):
        Method("plugin", plugin="ssbd", module="pkg.mod:Mine")
    with pytest.raises(UsageError, match="MODULE:CLASS"):
        Method("plugin", plugin="mine", module="not a path")


def test_eval_refuses_options_that_do_not_apply(
    tiny_model: Path, streams_file: Path, example_site: Path
) -> None:
    wrong = runner.invoke(app, eval_args(tiny_model, streams_file, "--method", ENTRY, "--beta", "0.3"))
    assert wrong.exit_code == 2 and "--beta sets simul's own methods" in wrong.output, wrong.output
    built_in = runner.invoke(
        app, eval_args(tiny_model, streams_file, "--method", "rt", "--method-option", "a=1")
    )
    assert built_in.exit_code == 2 and "drop --method-option" in built_in.output, built_in.output
    unknown = runner.invoke(app, eval_args(tiny_model, streams_file, "--method", "nosuch"))
    assert unknown.exit_code == 2, unknown.output
    assert "give one of rt, ssbd, cd" in unknown.output and f"installed plug-ins: {ENTRY}" in unknown.output


# -- plug-ins simul cannot use -------------------------------------------------------------------------------

GOOD_CLASS = """
from simul.decoding.methods import api

class Method:
    protocol_version = {version}
    def __init__(self, options):
        pass
    def shape(self):
        return api.MethodShape(None, (), api.MaskDisplay(0))
"""


@pytest.mark.parametrize(
    ("source", "spec", "message"),
    [
        (None, "missing_module:X", "there is no module missing_module on the Python path"),
        (
            "raise RuntimeError('broken at import')",
            "bad_plugin:X",
            "importing bad_plugin failed: RuntimeError",
        ),
        ("import not_installed_dependency", "bad_plugin:X", "No module named 'not_installed_dependency'"),
        (GOOD_CLASS.format(version=1), "bad_plugin:Other", "module bad_plugin has no Other"),
        ("X = 3", "bad_plugin:X", "is not a class"),
        ("class X: pass", "bad_plugin:X", "does not say which version of simul's method interface"),
        (
            GOOD_CLASS.format(version=PROTOCOL_VERSION + 1),
            "bad_plugin:Method",
            f"written for version {PROTOCOL_VERSION + 1} of simul's method interface, and this simul has "
            f"version {PROTOCOL_VERSION}",
        ),
        (
            "class X:\n    protocol_version = 1\n    def __init__(self, options): pass",
            "bad_plugin:X",
            "has no shape\\(\\) method",
        ),
        (
            "class X:\n    protocol_version = 1\n    def __init__(self, options): pass\n"
            "    def shape(self): return 1",
            "bad_plugin:X",
            "shape\\(\\) returned int, not a MethodShape",
        ),
        (
            "class X:\n    protocol_version = 1\n    def shape(self): pass",
            "bad_plugin:X",
            "could not be made with options {}: TypeError",
        ),
    ],
)
def test_plugins_simul_cannot_use_are_refused_naming_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str | None, spec: str, message: str
) -> None:
    site = make_site(tmp_path / "site", {"bad_plugin": source} if source is not None else {})
    forget("bad_plugin")
    monkeypatch.syspath_prepend(str(site))
    try:
        with pytest.raises(PluginRefused, match=f"^method plug-in {re.escape(spec)}[: ].*{message}"):
            load(plugin_method(spec))
    finally:
        forget("bad_plugin")


def test_options_the_plugin_does_not_take_or_rejects_are_refused(example_site: Path) -> None:
    with pytest.raises(
        PluginRefused, match=f"method plug-in {ENTRY} .* has no option size .*its options are hide"
    ):
        load(plugin_method(ENTRY, ["size=3"]))
    with pytest.raises(
        PluginRefused, match=re.escape("refused its options {'hide': '-1'}: ValueError: hide must be 0")
    ):
        load(plugin_method(ENTRY, ["hide=-1"]))


def test_a_plugin_simul_cannot_use_fails_the_command_before_decoding(
    tiny_model: Path, streams_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    result = runner.invoke(
        app, eval_args(tiny_model, streams_file, "--method", "nowhere:Mine", "--out", str(out))
    )
    assert result.exit_code == 2, result.output
    assert "method plug-in nowhere:Mine: there is no module nowhere" in " ".join(result.output.split())
    assert not out.exists()


# -- a plug-in that fails while decoding ---------------------------------------------------------------------

MISBEHAVING = """
import numpy as np
from simul.decoding.methods import api

MODE = "ok"


class Rule:
    name = "mine"
    bias = 0.0
    verifies = True
    blind = False

    def accepts(self, row, token):
        return "yes" if MODE == "accepts" else bool(np.argmax(row) == token)


class Drafter:
    name = "mine"

    def start(self, step):
        self.previous = step.previous

    def propose(self, at):
        if MODE == "raise":
            raise ZeroDivisionError("the plug-in's own bug")
        if MODE == "type":
            return list(self.previous)
        if MODE == "name":
            return api.Draft.of("other", self.previous[:1], Rule())
        if MODE == "token":
            return api.Draft.of("mine", (10**9,), Rule())
        return api.Draft.of("mine", self.previous, Rule()) if self.previous else None

    def kept(self, draft, n):
        pass


class Display:
    name = "mine"

    def show(self, view):
        return None if MODE == "show" else view.outputs[-1]


class Method:
    protocol_version = 1

    def __init__(self, options):
        pass

    def shape(self):
        return api.MethodShape(lambda vocab: Drafter(), (), Display())
"""


class Pieces:
    n_vocab = 100

    def piece(self, token: int, special: bool = False) -> bytes:
        return b"w"


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        (
            "raise",
            r"Drafter.propose raised ZeroDivisionError: the plug-in's own bug \(at misbehaving.py:\d+\)",
        ),
        ("type", "Drafter.propose returned list, not a Draft or None"),
        ("name", "Drafter.propose returned a draft of 'other'; a drafter's drafts carry its own name"),
        ("token", "Drafter drafted token 1000000000, outside the vocabulary"),
        ("accepts", "Rule.accepts returned 'yes', not True or False"),
        ("show", "Display.show returned NoneType, not text"),
    ],
)
def test_what_a_plugin_does_wrong_while_decoding_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, message: str
) -> None:
    site = make_site(tmp_path / "site", {"misbehaving": MISBEHAVING})
    forget("misbehaving")
    monkeypatch.syspath_prepend(str(site))
    try:
        shape = plugin_shape(plugin_method("misbehaving:Method"))
        module = sys.modules["misbehaving"]
        module.MODE = mode  # type: ignore[attr-defined]
        assert shape.first is not None
        drafter = shape.first(Pieces())
        drafter.start(StepStart((5, 6, 7), False, 10, (1, 2)))
        with pytest.raises(PluginFailed, match=f"^method plug-in misbehaving:Method: {message}"):
            draft = drafter.propose(Position([], 10))
            assert draft is not None
            draft.rules[0].accepts(np.zeros(100, dtype=np.float32), draft.tokens[0])
            shape.display.show(None)  # type: ignore[arg-type]
    finally:
        forget("misbehaving")


FAULTY = """
from simul.decoding.methods import api

FAIL_AT_STREAM = 3  # the third stream it decodes fails at its second step (None: none fails)
made = 0


class Drafter:
    name = "faulty"

    def __init__(self, number):
        self.number = number
        self.steps = 0

    def start(self, step):
        self.steps += 1

    def propose(self, at):
        if self.number == FAIL_AT_STREAM and self.steps == 2:
            raise ZeroDivisionError("the plug-in's own bug")
        return None

    def kept(self, draft, n):
        pass


class Faulty:
    protocol_version = 1

    def __init__(self, options):
        pass

    def shape(self):
        def make(vocab):
            global made
            made += 1
            return Drafter(made)

        return api.MethodShape(make, (), api.MaskDisplay(0))
"""


@pytest.mark.parametrize("parallel", [1, 2])
def test_a_plugin_failing_inside_a_step_keeps_the_finished_streams(
    tiny_model: Path,
    streams_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    parallel: int,
) -> None:
    site = make_site(tmp_path / "site", {"faulty": FAULTY})
    forget("faulty")
    monkeypatch.syspath_prepend(str(site))
    out = tmp_path / "run"
    args = ("--method", "faulty:Faulty", *THREADS, "--parallel", str(parallel), "--out", str(out))
    try:
        result = runner.invoke(app, eval_args(tiny_model, streams_file, *args))
        assert result.exit_code == 1, result.output
        said = " ".join(result.output.split())
        assert re.search(
            r"error: method plug-in faulty:Faulty: Drafter.propose raised ZeroDivisionError: "
            r"the plug-in's own bug \(at faulty.py:\d+\) \(stream 's\d', step 1\)\. The run stopped",
            said,
        ), said
        assert f"continue with `simul eval --resume --out {out}`" in said
        run = json.loads((out / "run.json").read_text(encoding="utf-8"))
        assert run["status"] == STATUS_FAILED and "ZeroDivisionError" in run["failure"]["message"]
        kept = load_run(out, allow_incomplete=True)
        assert len(kept.complete) == run["streams_done"]
        if parallel == 1:
            assert kept.complete == ["s0", "s1"]  # the two streams before the failing one

        key = "plugin-faulty.Faulty"
        old_sha = run["config"]["plugins"][key]["source_sha256"]
        fixed = FAULTY.replace("FAIL_AT_STREAM = 3", "FAIL_AT_STREAM = None")
        (site / "faulty.py").write_text(fixed, encoding="utf-8")  # the plug-in is fixed
        forget("faulty")
        resumed = runner.invoke(app, eval_args(tiny_model, streams_file, *args, "--resume"))
        assert resumed.exit_code == 0, resumed.output
        done = load_run(out)
        assert done.run["status"] == STATUS_COMPLETE and len(done.complete) == 4
        # the run says it failed once, and which plug-in its first streams were decoded with
        assert done.run["failed_earlier"] == run["failure"]
        assert done.run["plugins_earlier"][key]["source_sha256"] == old_sha
        assert done.run["config"]["plugins"][key]["source_sha256"] != old_sha
        by_method = steps(out)
        assert [s["output_ids"] for s in by_method[key]] == [s["output_ids"] for s in by_method["rt"]]
    finally:
        forget("faulty")

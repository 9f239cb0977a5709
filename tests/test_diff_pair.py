"""`simul diff A B --pair BASE_KEY=NEW_KEY`: compare methods whose keys differ, e.g. an RT baseline of a simul
run with an ingested system (`ext-...`), which without --pair share no method."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import UsageError
from simul.reports.compare import pair_methods, parse_pairs
from tests.helpers import eval_args
from tests.ingested import DATA, ingest_fixture

runner = CliRunner()
EXT = "ext-simul_outputs"  # the ingested fixture's method: the reference translations, shown word by word


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> tuple[Path, Path]:
    """(a tiny-model run with RT and SSBD, an ingested run over the same streams with one method)"""
    root = tmp_path_factory.mktemp("pair")
    mine = root / "mine"
    done = runner.invoke(
        app, eval_args(tiny_model, DATA / "streams.jsonl", "--ne-tokenizer", "word", "--out", str(mine))
    )
    assert done.exit_code == 0, done.output
    theirs = ingest_fixture("simul", root / "theirs", "--ne-tokenizer", "word")
    keys = [m["key"] for m in json.loads((mine / "run.json").read_text(encoding="utf-8"))["methods"]]
    assert len(keys) == 2 and "rt" in keys  # two methods against one: nothing pairs by itself
    return mine, theirs


def _diff(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["diff", *args, "--bootstrap", "0"])
    return result.exit_code, result.stdout, result.output


def test_without_pair_the_runs_share_no_method(runs: tuple[Path, Path]) -> None:
    mine, theirs = runs
    code, _, output = _diff(str(mine), str(theirs))
    assert code == 2  # runs that cannot be compared: refused like other incompatible inputs
    assert "share no method" in output and "--pair" in output


def test_pair_compares_rt_with_the_ingested_system(runs: tuple[Path, Path]) -> None:
    mine, theirs = runs
    code, stdout, _ = _diff(str(mine), str(theirs), "--pair", f"rt={EXT}", "--json")
    report = json.loads(stdout)
    assert [(m["base"], m["new"]) for m in report["methods"]] == [("rt", EXT)]
    assert report["methods"][0]["label"] == "RT -> EXT(simul_outputs)"
    rows = {r["name"]: r for r in report["methods"][0]["metrics"]}
    assert rows["chrf"]["verdict"] == "better" and rows["chrf"]["new"] == 100.0
    assert any("not compared (no pair): base ssbd-b0.2" in note for note in report["notes"])
    # the reference translations beat a random model on every thresholded metric: no regression
    assert code == 0 and report["exit_code"] == 0 and report["regressions"] == []


def test_a_regression_through_a_pair_exits_3(runs: tuple[Path, Path]) -> None:
    mine, theirs = runs
    code, _, output = _diff(str(theirs), str(mine), "--pair", f"{EXT}=rt")
    assert code == 3
    assert "regression:" in output and "chrF (EXT(simul_outputs) -> RT)" in output
    code, stdout, _ = _diff(str(theirs), str(mine), "--pair", f"{EXT}=rt", "--markdown")
    assert code == 3 and "### EXT(simul_outputs) -> RT" in stdout and "**REGRESSION**" in stdout


def test_pairs_are_repeatable_and_same_keys_still_pair(runs: tuple[Path, Path]) -> None:
    mine, _ = runs
    code, stdout, _ = _diff(
        str(mine), str(mine), "--pair", "rt=ssbd-b0.2", "--pair", "ssbd-b0.2=rt", "--json"
    )
    report = json.loads(stdout)
    assert code == report["exit_code"]
    assert [(m["base"], m["new"]) for m in report["methods"]] == [("rt", "ssbd-b0.2"), ("ssbd-b0.2", "rt")]
    assert not any("not compared" in note for note in report["notes"])
    _, stdout, _ = _diff(str(mine), str(mine), "--pair", "rt=ssbd-b0.2", "--json")
    report = json.loads(stdout)
    # the pair takes base rt and new ssbd-b0.2; the one method left on each side pairs as before --pair
    assert [(m["base"], m["new"]) for m in report["methods"]] == [("rt", "ssbd-b0.2"), ("ssbd-b0.2", "rt")]


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("rx=" + EXT, "the base run has no method 'rx'; its methods are: rt, ssbd-b0.2"),
        ("rt=ext-nope", f"the new run has no method 'ext-nope'; its methods are: {EXT}"),
    ],
)
def test_unknown_keys_are_named_with_the_keys_present(
    runs: tuple[Path, Path], pair: str, message: str
) -> None:
    mine, theirs = runs
    code, _, output = _diff(str(mine), str(theirs), "--pair", pair)
    assert code == 2
    assert message in " ".join(output.split())


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["rt=a", "rt=b"], "base method 'rt' is already paired (--pair 'rt=a')"),
        (["rt=a", "cd=a"], "new method 'a' is already paired (--pair 'rt=a')"),
        (["rt"], "--pair takes BASE_KEY=NEW_KEY"),
        (["=a"], "--pair takes BASE_KEY=NEW_KEY"),
    ],
)
def test_bad_pairs_are_usage_errors(runs: tuple[Path, Path], pairs: list[str], message: str) -> None:
    mine, theirs = runs
    args = [str(mine), str(theirs)]
    for pair in pairs:
        args += ["--pair", pair]
    code, _, output = _diff(*args)
    assert code == 2
    assert message in " ".join(output.split())
    with pytest.raises(UsageError):
        parse_pairs(pairs)


def test_pair_methods_keeps_the_old_rules_for_the_rest() -> None:
    base = [{"key": k} for k in ("rt", "ssbd-b0.2", "cd")]
    new = [{"key": k} for k in ("ext-x", "ssbd-b0.5", "cd")]
    got = [(b["key"], n["key"]) for b, n in pair_methods(base, new, [("rt", "ext-x")])]
    # explicit first, then same key (cd), then the single method left on each side
    assert got == [("rt", "ext-x"), ("cd", "cd"), ("ssbd-b0.2", "ssbd-b0.5")]
    assert [(b["key"], n["key"]) for b, n in pair_methods(base, new)] == [("cd", "cd")]

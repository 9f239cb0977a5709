"""One rule for every learned metric (simul.metrics.learned_models): `simul score --update` keeps every
figure the run already has unless an option drops it (``none``) or names another model. Shown end to end on a
tiny run with the tiny offline COMET, XCOMET and BLEURT checkpoints, in every order of adding the three, and
on the rule's own functions for runs written before ``xcomet_model`` existed."""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.metrics.learned_models import config_models, run_models
from simul.runs.directory import ERROR_SPANS_FILE
from tests.helpers import eval_args

runner = CliRunner()
KINDS = ("comet", "xcomet", "bleurt")


def _run(path: Path) -> dict[str, Any]:
    return dict(json.loads((path / "run.json").read_text(encoding="utf-8")))


def _figures(path: Path) -> dict[str, list[float | None]]:
    """Each learned metric's system score per method (None where a method lacks it)."""
    return {k: [m["metrics"].get(k) for m in _run(path)["methods"]] for k in KINDS}


@pytest.fixture(scope="module")
def base_run(tiny_model: Path, streams_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("learned") / "base"
    made = runner.invoke(app, eval_args(tiny_model, streams_file, "--threads", "2", "--out", str(out)))
    assert made.exit_code == 0, made.output
    return out


Added = Callable[[tuple[str, ...]], Path]


@pytest.fixture(scope="module")
def added(
    base_run: Path,
    tiny_comet: Path,
    tiny_xcomet: Path,
    tiny_bleurt: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Added:
    """The base run after `simul score --update` added the metrics of an order one at a time: each prefix of
    an order made once for the module, from a copy of the run of the prefix one shorter, and left as it is.
    Orders that begin alike share their first additions (15 additions for the six orders instead of 18; each
    scores every learned metric the run already has, XCOMET in a child process of its own)."""
    root = tmp_path_factory.mktemp("added")
    option = {
        "comet": ["--comet-model", str(tiny_comet)],
        "xcomet": ["--comet-model", str(tiny_xcomet)],
        "bleurt": ["--bleurt-model", str(tiny_bleurt)],
    }
    made: dict[tuple[str, ...], Path] = {(): base_run}

    def add(order: tuple[str, ...]) -> Path:
        if order not in made:
            out = root / "-".join(order)
            shutil.copytree(add(order[:-1]), out)
            result = runner.invoke(app, ["score", str(out), *option[order[-1]], "--update", "--quiet"])
            assert result.exit_code == 0, (order, result.output)
            made[order] = out
        return made[order]

    return add


@pytest.mark.parametrize("order", list(itertools.permutations(KINDS)))
def test_adding_one_learned_metric_never_drops_another(
    order: tuple[str, ...],
    added: Added,
    tiny_comet: Path,
    tiny_xcomet: Path,
    tiny_bleurt: Path,
    tmp_path: Path,
) -> None:
    seen: dict[str, list[float | None]] = {}
    for index, kind in enumerate(order):
        figures = _figures(added(order[: index + 1]))
        assert all(v is not None for v in figures[kind]), (kind, figures)
        for earlier, values in seen.items():  # recomputed with the same model: the same figures
            assert figures[earlier] == values, (earlier, order)
        seen[kind] = figures[kind]
    last = added(order)
    run = _run(last)
    assert run_models(run) == {
        "comet": str(tiny_comet),
        "xcomet": str(tiny_xcomet),
        "bleurt": str(tiny_bleurt),
    }
    assert run["config"]["comet_model"] == str(tiny_comet)
    assert run["config"]["xcomet_model"] == str(tiny_xcomet)
    assert {"comet", "xcomet", "bleurt"} <= set(run["signatures"])
    rows = [json.loads(x) for x in (last / "per_stream.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(row[k] is not None for row in rows for k in KINDS)
    assert (last / ERROR_SPANS_FILE).exists()
    for method in run["methods"]:
        assert method["counts"]["xcomet_max_tokens"] == 512 and method["counts"]["bleurt_truncated"] == 0

    if order != KINDS:
        return  # what follows is the same whatever the order: checked once

    # a plain `simul score` recomputes all three with the run's models
    out = tmp_path / "run"
    shutil.copytree(last, out)
    again = runner.invoke(app, ["score", str(out), "--json", "--quiet"])
    assert again.exit_code == 0, again.output
    methods = json.loads(again.stdout)["methods"]
    assert {k: [m["metrics"].get(k) for m in methods] for k in KINDS} == _figures(out)
    dropped = runner.invoke(app, ["score", str(out), "--bleurt-model", "none", "--update", "--quiet"])
    assert dropped.exit_code == 0, dropped.output
    figures = _figures(out)
    assert figures["bleurt"] == [None] * len(figures["bleurt"])
    assert figures["comet"] == seen["comet"] and figures["xcomet"] == seen["xcomet"]
    assert "bleurt_model" not in _run(out)["config"]
    dropped = runner.invoke(app, ["score", str(out), "--comet-model", "none", "--update", "--quiet"])
    assert dropped.exit_code == 0, dropped.output
    assert run_models(_run(out)) == dict.fromkeys(KINDS)
    assert not (out / ERROR_SPANS_FILE).exists()


def test_a_comet_model_that_fails_to_load_keeps_the_runs_own(
    base_run: Path, tiny_bleurt: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    shutil.copytree(base_run, out)
    assert (
        runner.invoke(
            app, ["score", str(out), "--bleurt-model", str(tiny_bleurt), "--update", "--quiet"]
        ).exit_code
        == 0
    )
    before = _figures(out)
    missing = tmp_path / "no-such-checkpoint.ckpt"
    result = runner.invoke(app, ["score", str(out), "--comet-model", str(missing), "--update", "--quiet"])
    assert result.exit_code == 0, result.output
    assert _figures(out) == before and _run(out)["config"]["bleurt_model"] == str(tiny_bleurt)
    assert _run(out)["comet"]["available"] is False
    required = runner.invoke(
        app, ["score", str(out), "--comet-model", str(missing), "--require-comet", "--quiet"]
    )
    assert required.exit_code == 1 and "COMET is required (--require-comet)" in required.output


def test_runs_written_before_xcomet_model_read_their_xcomet_from_comet_model() -> None:
    legacy = {"config": {"comet_model": "Unbabel/XCOMET-XL"}, "comet": {"available": True, "kind": "xcomet"}}
    assert run_models(legacy) == {"comet": None, "xcomet": "Unbabel/XCOMET-XL", "bleurt": None}
    comet = {
        "config": {"comet_model": "Unbabel/wmt22-comet-da", "bleurt_model": "/b"},
        "comet": {"kind": "comet"},
    }
    assert run_models(comet) == {"comet": "Unbabel/wmt22-comet-da", "xcomet": None, "bleurt": "/b"}
    unavailable = {"config": {"comet_model": "Unbabel/wmt22-comet-da"}, "comet": {"available": False}}
    assert run_models(unavailable)["comet"] == "Unbabel/wmt22-comet-da"
    assert run_models({"config": {"comet_model": "none"}}) == dict.fromkeys(KINDS)
    both = config_models({"comet": "c", "xcomet": "x", "bleurt": None})
    assert both == {"comet_model": "c", "xcomet_model": "x"}
    assert run_models({"config": both, "comet": {"kind": "comet"}}) == {
        "comet": "c",
        "xcomet": "x",
        "bleurt": None,
    }


def test_the_tables_show_every_learned_metric_a_run_has() -> None:
    from simul.reports.tables import TABLE2_COLUMNS, learned_columns

    def names(metrics: dict[str, float | None]) -> list[str]:
        return [c[0] for c in learned_columns([{"metrics": metrics}], TABLE2_COLUMNS)]

    plain = [c[0] for c in TABLE2_COLUMNS]
    assert names({"comet": 0.8}) == plain
    assert names({"comet": None, "xcomet": 0.7}) == ["xcomet", *plain[1:]]  # XCOMET alone: COMET's column
    assert names({"comet": 0.8, "xcomet": 0.7, "bleurt": 0.5}) == ["comet", "xcomet", *plain[1:], "bleurt"]


def test_the_segment_means_come_from_the_metric_records() -> None:
    from simul.reports import compare, rank

    assert set(rank.SEGMENT_MEANS) == set(compare.SEGMENT_MEANS) == set(KINDS)
    assert set(compare.BOOTSTRAP_METRICS) == {"chrf", "bleu", *KINDS}

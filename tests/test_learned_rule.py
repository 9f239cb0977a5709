"""One rule for every learned metric (simul.metrics.learned_models): `simul score --update` keeps every
figure the run already has unless an option drops it (``none``) or names another model. Shown end to end on a
tiny run with the tiny offline COMET, XCOMET and BLEURT checkpoints, in every order of adding the three, and
on the rule's own functions for runs written before ``xcomet_model`` existed.

A kept figure is reused by `--update`, its model not loaded, while nothing it depends on changed
(simul.runs.learned_reuse): adding BLEURT to a run with XCOMET starts no XCOMET and leaves its figures,
counts, signature and error spans as they were; another model, batch size or input, and a run that records
no inputs, are computed again."""

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
from simul.runs.directory import ERROR_SPANS_FILE, RUN_FILE, dump_json
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
    loads only the model of the metric it adds: the run's other figures are reused)."""
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
    monkeypatch: pytest.MonkeyPatch,
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

    # a plain `simul score` recomputes all three with the run's models: the same figures
    out = tmp_path / "run"
    shutil.copytree(last, out)
    loads = _count_loads(monkeypatch)
    again = runner.invoke(app, ["score", str(out), "--json", "--quiet"])
    assert again.exit_code == 0, again.output
    assert loads == {"comet": [str(tiny_comet)], "xcomet": [str(tiny_xcomet)], "bleurt": [str(tiny_bleurt)]}
    methods = json.loads(again.stdout)["methods"]
    assert {k: [m["metrics"].get(k) for m in methods] for k in KINDS} == _figures(out)
    # dropping one keeps the others' figures without loading any model
    dropped = runner.invoke(app, ["score", str(out), "--bleurt-model", "none", "--update", "--quiet"])
    assert dropped.exit_code == 0, dropped.output
    figures = _figures(out)
    assert figures["bleurt"] == [None] * len(figures["bleurt"])
    assert figures["comet"] == seen["comet"] and figures["xcomet"] == seen["xcomet"]
    assert "bleurt_model" not in _run(out)["config"]
    dropped = runner.invoke(app, ["score", str(out), "--comet-model", "none", "--update", "--quiet"])
    assert dropped.exit_code == 0, dropped.output
    assert run_models(_run(out)) == dict.fromkeys(KINDS)
    assert not (out / ERROR_SPANS_FILE).exists() and "learned_inputs" not in _run(out)
    assert loads == {"comet": [str(tiny_comet)], "xcomet": [str(tiny_xcomet)], "bleurt": [str(tiny_bleurt)]}


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (path / "per_stream.jsonl").read_text(encoding="utf-8").splitlines()]


def _count_loads(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Each learned metric's models loaded from now on (its scorer made: for XCOMET, its child process
    started), by metric; the scorers load as before."""
    from simul.metrics.bleurt import BleurtScorer
    from simul.metrics.comet import CometScorer
    from simul.metrics.xcomet import XcometScorer

    loads: dict[str, list[str]] = {kind: [] for kind in KINDS}

    def counting(kind: str, original: Callable[..., None]) -> Callable[..., None]:
        def counted(self: Any, model: str, *args: Any, **kwargs: Any) -> None:
            loads[kind].append(str(model))
            original(self, model, *args, **kwargs)

        return counted

    for kind, scorer in (("comet", CometScorer), ("xcomet", XcometScorer), ("bleurt", BleurtScorer)):
        monkeypatch.setattr(scorer, "__init__", counting(kind, scorer.__init__))
    return loads


def _without(figures: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in figures.items() if k not in names}


def test_adding_bleurt_keeps_xcomet_as_it_is_without_starting_it(
    added: Added, tiny_xcomet: Path, tiny_bleurt: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    shutil.copytree(added(("xcomet",)), out)
    before, rows, spans = _run(out), _rows(out), (out / ERROR_SPANS_FILE).read_bytes()
    loads = _count_loads(monkeypatch)
    result = runner.invoke(app, ["score", str(out), "--bleurt-model", str(tiny_bleurt), "--update"])
    assert result.exit_code == 0, result.output
    assert loads == {"comet": [], "xcomet": [], "bleurt": [str(tiny_bleurt)]}  # no XCOMET process
    assert "XCOMET: the run's figures reused" in result.output
    after = _run(out)
    # everything XCOMET wrote is as it was: figures, counts, per-stream column, signature, block, spans
    assert (out / ERROR_SPANS_FILE).read_bytes() == spans
    for old, new in zip(before["methods"], after["methods"], strict=True):
        assert new["metrics"]["bleurt"] is not None and new["counts"]["bleurt_truncated"] == 0
        assert _without(new["metrics"], "bleurt") == old["metrics"]
        assert _without(new["counts"], "bleurt_truncated") == old["counts"]
    assert [_without(row, "bleurt") for row in _rows(out)] == rows
    assert _without(after["signatures"], "bleurt") == before["signatures"]
    assert after["comet"] == before["comet"] and after["comet"]["checkpoint"]
    assert _without(after["learned_inputs"], "bleurt") == before["learned_inputs"]
    assert run_models(after) == {"comet": None, "xcomet": str(tiny_xcomet), "bleurt": str(tiny_bleurt)}

    # with --recompute every figure is computed again: the same ones, the same error spans
    figures = _figures(out)
    again = runner.invoke(app, ["score", str(out), "--update", "--recompute", "--quiet"])
    assert again.exit_code == 0, again.output
    assert loads["xcomet"] == [str(tiny_xcomet)] and loads["bleurt"] == [str(tiny_bleurt)] * 2
    assert _figures(out) == figures and (out / ERROR_SPANS_FILE).read_bytes() == spans


def test_another_model_or_batch_size_is_computed_again(
    added: Added,
    tiny_comet: Path,
    tiny_xcomet: Path,
    tiny_bleurt: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "run"
    shutil.copytree(added(KINDS), out)
    figures = _figures(out)
    bleurt, xcomet = tmp_path / "bleurt-elsewhere", tmp_path / "xcomet-elsewhere"  # the same models, renamed
    bleurt.symlink_to(tiny_bleurt, target_is_directory=True)
    xcomet.symlink_to(tiny_xcomet, target_is_directory=True)
    loads = _count_loads(monkeypatch)

    changed = runner.invoke(app, ["score", str(out), "--bleurt-model", str(bleurt), "--update", "--quiet"])
    assert changed.exit_code == 0, changed.output
    assert loads == {"comet": [], "xcomet": [], "bleurt": [str(bleurt)]}
    assert _run(out)["signatures"]["bleurt"].startswith(f"model:{bleurt}|batch:16|")

    changed = runner.invoke(app, ["score", str(out), "--comet-model", str(xcomet), "--update", "--quiet"])
    assert changed.exit_code == 0, changed.output
    assert loads == {"comet": [], "xcomet": [str(xcomet)], "bleurt": [str(bleurt)]}
    run = _run(out)
    assert run["signatures"]["xcomet"].startswith(f"model:{xcomet}|batch:16|")
    assert run_models(run) == {"comet": str(tiny_comet), "xcomet": str(xcomet), "bleurt": str(bleurt)}
    assert _figures(out) == figures  # the same weights give the same figures

    # another batch size (one for every learned metric): computed again (shown on a run with BLEURT alone)
    alone = tmp_path / "bleurt"
    shutil.copytree(added(("bleurt",)), alone)
    batch = runner.invoke(app, ["score", str(alone), "--comet-batch-size", "4", "--update", "--quiet"])
    assert batch.exit_code == 0, batch.output
    assert loads == {"comet": [], "xcomet": [str(xcomet)], "bleurt": [str(bleurt), str(tiny_bleurt)]}
    assert _run(alone)["signatures"]["bleurt"].startswith(f"model:{tiny_bleurt}|batch:4|")


def _edit_one_output(path: Path) -> str:
    """Replace the final output of the last method on the first stream with that stream's reference, as an
    edit of the run's steps would; returns the method's key."""
    streams = [json.loads(x) for x in (path / "streams.jsonl").read_text(encoding="utf-8").splitlines()]
    key = str(_run(path)["methods"][-1]["key"])
    lines, edited = [], False
    for line in (path / "steps.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if (
            not edited
            and record["final"]
            and record["method"] == key
            and record["stream"] == streams[0]["id"]
        ):
            assert record["output"] != streams[0]["reference"]
            record["output"] = record["display"] = streams[0]["reference"]
            edited = True
        lines.append(json.dumps(record, ensure_ascii=False, sort_keys=True))
    assert edited
    (path / "steps.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return key


def test_changed_inputs_and_runs_without_their_record_are_computed_again(
    added: Added, tiny_xcomet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scored = added(("xcomet",))
    before = _run(scored)
    assert len(before["methods"]) >= 2
    loads = _count_loads(monkeypatch)

    # a run scored before learned_inputs were recorded: computed again, the same figures, inputs recorded
    older = tmp_path / "older"
    shutil.copytree(scored, older)
    run = _run(older)
    del run["learned_inputs"]
    (older / RUN_FILE).write_text(dump_json(run), encoding="utf-8")
    again = runner.invoke(app, ["score", str(older), "--update", "--quiet"])
    assert again.exit_code == 0, again.output
    assert loads["xcomet"] == [str(tiny_xcomet)]
    assert _run(older) == before and _rows(older) == _rows(scored)
    assert (older / ERROR_SPANS_FILE).read_bytes() == (scored / ERROR_SPANS_FILE).read_bytes()

    # one method's output edited: XCOMET scores that method again; the others keep their figures
    edited = tmp_path / "edited"
    shutil.copytree(scored, edited)
    key = _edit_one_output(edited)
    again = runner.invoke(app, ["score", str(edited), "--update"])
    assert again.exit_code == 0, again.output
    assert loads["xcomet"] == [str(tiny_xcomet)] * 2
    assert "XCOMET: computed again" in again.output
    after = _run(edited)
    inputs, old_inputs = after["learned_inputs"]["xcomet"], before["learned_inputs"]["xcomet"]
    assert {k for k in inputs if inputs[k] != old_inputs[k]} == {key}
    spans = [json.loads(x) for x in (edited / ERROR_SPANS_FILE).read_text(encoding="utf-8").splitlines()]
    old_spans = [json.loads(x) for x in (scored / ERROR_SPANS_FILE).read_text(encoding="utf-8").splitlines()]
    assert [x for x in spans if x["method"] != key] == [x for x in old_spans if x["method"] != key]
    for old, new in zip(before["methods"], after["methods"], strict=True):
        if old["key"] != key:
            assert new["metrics"]["xcomet"] == old["metrics"]["xcomet"]

    # an error-span file that cannot be read back: XCOMET computed again, and the file written anew
    damaged = tmp_path / "damaged"
    shutil.copytree(scored, damaged)
    (damaged / ERROR_SPANS_FILE).write_text("{not json\n", encoding="utf-8")
    again = runner.invoke(app, ["score", str(damaged), "--update", "--quiet"])
    assert again.exit_code == 0, again.output
    assert loads["xcomet"] == [str(tiny_xcomet)] * 3
    assert _run(damaged) == before and _rows(damaged) == _rows(scored)
    assert (damaged / ERROR_SPANS_FILE).read_bytes() == (scored / ERROR_SPANS_FILE).read_bytes()


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

"""Several methods in one run, each with its own options (issue 33, part 4): `simul bench --method SPEC` and
`simul sweep --method SPEC`, parsed by `simul eval`'s own options (simul.cli.method_specs), and bench's bound
for every method that verifies drafts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.cli.draft_options import DraftOptions
from simul.cli.eval_cmd import eval_methods
from simul.cli.method_specs import spec_methods
from simul.cli.request_options import RequestOptions
from simul.common.errors import UsageError
from simul.machine.calibration import PassCosts
from simul.metrics.speed import modelled_speedup_with_draft
from simul.reports.bench import draft_cost, speed_bounds
from simul.streams.format import write_streams
from tests.helpers import make_streams

runner = CliRunner()


def test_a_spec_is_the_method_eval_builds_from_the_same_options() -> None:
    request = RequestOptions()
    spec = spec_methods(
        ["ssbd --beta 0.3 --tail-draft lookup --draft-max 3", "cd --mask-k 2 --mask output", "rt"],
        request,
        DraftOptions(),
    )
    expected = [
        *eval_methods(request, DraftOptions(draft_max=3), False, beta=0.3, tail_draft="lookup"),
        *eval_methods(request, DraftOptions(), False, method="cd", mask_k=2, mask="output"),
        *eval_methods(request, DraftOptions(), False, method="rt"),
    ]
    assert spec == expected
    assert [m.key for m in spec] == ["ssbd-b0.3-tail-lookup-dmax3", "cd-output2", "rt"]


def test_the_run_s_n_gram_options_serve_n_gram_specs_and_a_spec_s_own_win() -> None:
    shared = DraftOptions(draft_max=3)
    keys = [
        m.key
        for m in spec_methods(
            ["lookup", "ngram-cache --draft-max 5", "ssbd --beta 0.1"], RequestOptions(), shared
        )
    ]
    # SSBD without a tail drafter takes none of them (they would be refused as ignored)
    assert keys == ["lookup-dmax3", "ngram-cache-dmax5", "ssbd-b0.1"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("--beta 0.2", "starts with the method's name"),
        ("ssbd --threads 2", "--threads belongs to the whole run"),
        ("ssbd --model x.gguf --limit 3", "--limit, --model belong to the whole run"),
        ("ssbd --bogus 1", "No such option"),
        ("ssbd --beta x", "--beta"),
        ("ssbd 'unclosed", "No closing quotation"),
        ("rt --beta 0.3", "--beta"),
        ("lookup --resync 2", "--resync"),
    ],
)
def test_bad_specs_are_refused_naming_the_spec(spec: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        spec_methods([spec], RequestOptions(), DraftOptions())
    text = str(caught.value)
    assert message in text and f"--method {spec!r}" in text, text


@pytest.mark.parametrize("spec", ["bogus", "mypkg.methods:"])
def test_a_spec_with_a_bad_method_name_names_the_option_once(spec: str) -> None:
    with pytest.raises(UsageError) as caught:
        spec_methods([spec], RequestOptions(), DraftOptions())
    text = str(caught.value)
    assert text.startswith(f"--method {spec!r}: ") and text.count("--method") == 1, text


def test_bench_and_sweep_run_several_specs_in_one_run(tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams())
    common = ["--model", str(tiny_model), "--streams", str(streams), "--threads", "2", "--json"]
    result = runner.invoke(
        app,
        [
            "bench",
            *common,
            "--no-cd",
            "--method",
            "ssbd --beta 0.5 --tail-draft lookup --draft-max 3",
            "--method",
            "lookup",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    rows = {m["key"]: m for m in doc["methods"]}
    assert list(rows) == ["rt", "ssbd-b0.2", "ssbd-b0.5-tail-lookup-dmax3", "lookup"]
    assert rows["rt"]["bound"] is None
    for key in ("ssbd-b0.2", "ssbd-b0.5-tail-lookup-dmax3", "lookup"):
        row = rows[key]
        if row["metrics"]["ad"]:  # a method that kept draft tokens has its own bound
            assert isinstance(row["bound"], float) and row["d_draft"] == 0.0, row
        assert row["metrics"]["speedup"] is not None
    sweep = runner.invoke(
        app,
        ["sweep", *common, "--beta", "0.2", "--mask-k", "0", "--no-cd", "--method", "lookup --draft-max 2"],
    )
    assert sweep.exit_code == 0, sweep.output
    others = json.loads(sweep.stdout)["others"]
    assert [r["key"] for r in others] == ["rt", "lookup-dmax2"]
    assert "Other methods (--method)" in sweep.stderr


def test_bench_refuses_a_spec_that_sets_a_run_option(tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams())
    result = runner.invoke(
        app,
        ["bench", "--model", str(tiny_model), "--streams", str(streams), "--method", "lookup --parallel 2"],
    )
    assert result.exit_code == 2, result.output
    assert "--parallel belongs to the whole run" in " ".join(result.output.split())


def test_the_bound_of_a_drafter_with_a_cost_of_its_own() -> None:
    costs = PassCosts(threads=2, one_token_ms=10.0, row_ms=2.0, draft=16, one_token_single_ms=None)
    metrics = {"ad": 80.0, "ao": 60.0}
    free = speed_bounds(costs, metrics, [16])
    assert free[1] is not None and free[2] is not None
    assert free[1] == pytest.approx(modelled_speedup_with_draft(0.8, 0.6, free[2], 0.0), abs=1e-3)
    # 5 ms of drafting per drafted token against a 10 ms one-token pass of the target: d = 0.5
    d = draft_cost({"model_drafted": 100, "draft_seconds": 0.5}, costs)
    assert d == pytest.approx(0.5)
    dear = speed_bounds(costs, metrics, [16], d)
    assert dear[1] is not None
    assert dear[1] == pytest.approx(modelled_speedup_with_draft(0.8, 0.6, free[2], 0.5), abs=1e-3)
    assert dear[1] < free[1]
    assert draft_cost({"steps": 3}, costs) == 0.0  # no draft model

"""OmniSTEval's short-form degeneracy diagnostics (SWF, EFSW, DSPTV, degenerate policy) in simul.

The golden test exports real runs with `simul export --format omnisteval` and runs `omnisteval shortform`
(OmniSTEval 0.1.10, its own command line, in a subprocess) on the export: its figures must be simul's.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.metrics.degeneracy import degeneracy
from simul.metrics.delays import StreamDelays
from simul.reports.tables import degeneracy_note, methods_table
from tests.helpers import eval_args
from tests.ingested import DATA, ingest, ingest_fixture, write_zh_fixture

runner = CliRunner()


def _delays(delays: list[float], source_length: float, reference_length: int | None) -> StreamDelays:
    return StreamDelays(
        unit="word",
        final_units=["w"] * len(delays),
        finalised_at=list(range(len(delays))),
        delays=delays,
        elapsed=delays,
        source_length=source_length,
        elapsed_source_length=source_length,
        reference_length=reference_length,
        timed=False,
    )


def test_formulas_on_a_hand_computed_corpus() -> None:
    # stream A: 2 of 4 units before the end (d < 5); YAAL = ((1 - 0) + (2 - 1.25)) / 2 = 0.875
    # stream B: nothing before the end, no YAAL (first unit at the end): counts in SWF only
    got = degeneracy([_delays([1, 2, 5, 5], 5, 4), _delays([3, 3], 3, 2)])
    assert got.swf == pytest.approx(100 * 2 / 6)
    assert got.efsw == pytest.approx(100 * (5 - 0.875) / 5)
    assert got.dsptv == pytest.approx(got.efsw - got.swf)  # type: ignore[operator]
    assert got.degenerate_policy == 1.0  # |82.5 - 33.3| > 20


def test_a_steady_policy_is_not_flagged_and_empty_outputs_give_nothing() -> None:
    steady = degeneracy([_delays([1, 2, 3, 4], 5, 4)])
    assert steady.swf == 100.0 and steady.degenerate_policy == 0.0
    assert steady.dsptv is not None and abs(steady.dsptv) <= 20
    assert degeneracy([_delays([], 5, 4)]).metrics() == {
        "swf": None,
        "efsw": None,
        "dsptv": None,
        "degenerate_policy": None,
    }
    # units only at the end: SWF 0, no YAAL anywhere, so no EFSW/DSPTV and (as in OmniSTEval) flag 0
    late = degeneracy([_delays([4, 4], 4, 2)])
    assert (late.swf, late.efsw, late.dsptv, late.degenerate_policy) == (0.0, None, None, 0.0)


def test_the_same_as_omnistevals_scorer_on_the_same_instances() -> None:
    pytest.importorskip("omnisteval", reason="omnisteval is not installed (pip install 'simul[dev]')")
    from omnisteval.data import Instance
    from omnisteval.scoring import ShortformDegeneracyScorer

    corpus = [([1, 2, 5, 5], 5.0, "a b c d"), ([3, 3], 3.0, "a b"), ([0, 1, 1, 2, 7], 6.0, "a b c")]
    instances = [
        Instance(
            index=i, prediction="x", reference=ref, source_length=src, emission_cu=[float(d) for d in ds]
        )
        for i, (ds, src, ref) in enumerate(corpus)
    ]
    theirs = ShortformDegeneracyScorer()(instances)
    ours = degeneracy([_delays([float(d) for d in ds], src, len(ref.split(" "))) for ds, src, ref in corpus])
    assert ours.swf == pytest.approx(theirs["swf"])
    assert ours.efsw == pytest.approx(theirs["efsw"])
    assert ours.dsptv == pytest.approx(theirs["dsptv"])
    assert ours.degenerate_policy == theirs["degenerate_policy"]


# ---- the export, scored by `omnisteval shortform` itself ------------------------------------------------

TSV_NAMES = {
    "Simultaneous Words Fraction (%)": "swf",
    "Expected Simul. Words Fraction (%)": "efsw",
    "Degeneracy Test Value": "dsptv",
    "Likely Degenerate Simultaneous Policy": "degenerate_policy",
    "YAAL (CU)": "yaal",
}


def _omnisteval_shortform(folder: Path, unit: str, out: Path) -> dict[str, float]:
    """Run `omnisteval shortform` on an export folder and read its scores.tsv."""
    command = [
        sys.executable,
        "-m",
        "omnisteval.cli",
        "shortform",
        "--hypothesis_file",
        str(folder / "instances.jsonl"),
        "--ref_sentences_file",
        str(folder / "references.txt"),
        "--char_level" if unit == "char" else "--word_level",
        "--no_quality",
        "--output_folder",
        str(out),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    scores: dict[str, float] = {}
    for line in (out / "scores.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        name, value = line.split("\t")
        if name in TSV_NAMES:
            flags = {"YES": 1.0, "NO": 0.0, "N/A": math.nan}
            scores[TSV_NAMES[name]] = flags[value] if value in flags else float(value)
    return scores


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> dict[str, tuple[Path, str]]:
    """name -> (run directory, target unit): a tiny-model run (RT and SSBD) and three ingested runs."""
    root = tmp_path_factory.mktemp("degeneracy")
    model_run = root / "tiny"
    done = runner.invoke(
        app, eval_args(tiny_model, DATA / "streams.jsonl", "--ne-tokenizer", "word", "--out", str(model_run))
    )
    assert done.exit_code == 0, done.output
    zh_outputs, zh_streams = write_zh_fixture(root)
    return {
        "tiny-model": (model_run, "word"),
        "text-de": (ingest_fixture("ssbd-ref", root / "de"), "word"),
        "timed-de": (ingest_fixture("simulstream", root / "timed"), "word"),
        "text-zh": (ingest("simul", zh_outputs, zh_streams, root / "zh"), "char"),
    }


@pytest.mark.parametrize("name", ["tiny-model", "text-de", "timed-de", "text-zh"])
def test_omnisteval_shortform_on_the_export_gives_simuls_figures(
    name: str, runs: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    pytest.importorskip("omnisteval", reason="omnisteval is not installed (pip install 'simul[dev]')")
    run_dir, unit = runs[name]
    run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    for method in run["methods"]:
        folder = tmp_path / method["key"]
        done = runner.invoke(
            app,
            [
                "export",
                str(run_dir),
                "--format",
                "omnisteval",
                "--method",
                method["key"],
                "--out",
                str(folder),
            ],
        )
        assert done.exit_code == 0, done.output
        assert "omnisteval shortform" in done.output
        theirs = _omnisteval_shortform(folder, unit, tmp_path / f"{method['key']}-scores")
        ours = method["metrics"]
        assert ours["swf"] is not None, method["key"]
        for metric in ("swf", "efsw", "dsptv", "yaal"):
            if ours[metric] is None:
                assert math.isnan(theirs[metric]), (name, method["key"], metric)
            else:
                assert ours[metric] == pytest.approx(theirs[metric], abs=1.5e-4), (
                    name,
                    method["key"],
                    metric,
                )
        assert ours["degenerate_policy"] == theirs["degenerate_policy"], (name, method["key"])


def test_the_export_writes_what_omnisteval_reads(runs: dict[str, tuple[Path, str]], tmp_path: Path) -> None:
    run_dir, _ = runs["text-de"]
    folder = tmp_path / "export"
    done = runner.invoke(app, ["export", str(run_dir), "--format", "omnisteval", "-o", str(folder)])
    assert done.exit_code == 0, done.output
    rows = [
        json.loads(line) for line in (folder / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    references = (folder / "references.txt").read_text(encoding="utf-8").splitlines()
    assert len(rows) == len(references) == 2
    assert {"prediction", "delays", "source_length"} <= rows[0].keys()
    assert "elapsed" not in rows[0]  # text streams: ms against words would mix units in OmniSTEval's CA
    timed_dir, _ = runs["timed-de"]
    done = runner.invoke(app, ["export", str(timed_dir), "--format", "omnisteval", "-o", str(tmp_path / "t")])
    assert done.exit_code == 0, done.output
    assert "elapsed" in json.loads((tmp_path / "t" / "instances.jsonl").read_text(encoding="utf-8"))


def test_the_export_refuses_unit(runs: dict[str, tuple[Path, str]]) -> None:
    run_dir, _ = runs["text-de"]
    done = runner.invoke(app, ["export", str(run_dir), "--format", "omnisteval", "--unit", "char"])
    assert done.exit_code == 2
    assert "--unit applies to --format simulstream" in done.output


def test_the_table_footer_shows_the_diagnostics_and_the_flag(runs: dict[str, tuple[Path, str]]) -> None:
    run_dir, _ = runs["tiny-model"]
    methods = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["methods"]
    note = degeneracy_note(methods)
    assert note is not None
    for method in methods:
        assert f"{method['label']} SWF {method['metrics']['swf']:.1f}%" in note
    flagged = [m for m in methods if m["metrics"]["degenerate_policy"] == 1]
    assert ("LIKELY DEGENERATE POLICY" in note) == bool(flagged)
    table = methods_table(methods, caption="first line")
    assert isinstance(table.caption, str) and table.caption.startswith("first line\ndegeneracy")
    fake = [{"label": "X", "metrics": {"swf": 10.0, "efsw": 90.0, "dsptv": 80.0, "degenerate_policy": 1.0}}]
    assert "X SWF 10.0% EFSW 90.0% DSPTV +80.0 [bold red]LIKELY DEGENERATE POLICY[/]" in (
        degeneracy_note(fake) or ""
    )
    assert degeneracy_note([{"label": "Y", "metrics": {"swf": None}}]) is None
    late = [{"label": "Z", "metrics": {"swf": 0.0, "efsw": None, "dsptv": None, "degenerate_policy": 0.0}}]
    assert (degeneracy_note(late) or "").endswith("Z SWF 0.0% EFSW - DSPTV -")


def test_long_form_runs_get_none() -> None:
    from simul.metrics.families.degeneracy import degeneracy_figures

    # a run with a talk has no sentence delays (simul.metrics.compute.method_report passes None)
    assert degeneracy_figures(None).metrics == dict.fromkeys(("swf", "efsw", "dsptv", "degenerate_policy"))
    assert degeneracy_figures([_delays([1, 2, 5, 5], 5, 4)]).metrics["swf"] == 50.0

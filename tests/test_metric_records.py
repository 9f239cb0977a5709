"""The metric records (simul.metrics.spec.MetricInfo) against everything that reads them: a record and a
family's figures, a table, a list of names or another record that disagree fail here.

Every list of metric names that the commands use is a read of the records (quality, corpus-resampled,
segment means, learned, relative to RT, draft model, what the step records must hold); the tables take their
titles and formats from them. The run's figures themselves are pinned by tests/test_figures_pinned.py."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from simul.cli import app
from simul.cli.scoring_options import learned_options
from simul.cli.sweep_cmd import TABLE3_COLUMNS, TABLE4_COLUMNS
from simul.metrics import compute, learned_models
from simul.metrics.family import Family, FamilyInput, Figures, mean_of
from simul.metrics.learned import LearnedMetric
from simul.metrics.registry import DRAFT_MODEL_METRICS, FAMILIES, LEARNED, METRICS, names, needing
from simul.metrics.scoring import score
from simul.metrics.spec import RECORD_FIELDS, MetricInfo
from simul.reports import bench_tables, compare, engine_notes, rank, tables, timing_notes
from simul.runs import schema
from simul.runs.directory import load_run
from tests.ingested import ingest_fixture

EXPECTED = Path(__file__).resolve().parent / "data" / "figures" / "expected.json"
runner = CliRunner()


def test_each_family_gives_exactly_the_metrics_of_its_records() -> None:
    """Every pinned method's run.json metrics are records' names, and every record has a figure there,
    except the learned metrics the run was not scored with and a draft model's figures."""
    optional = set(names(lambda m: m.learned)) | set(DRAFT_MODEL_METRICS)
    for run_name, run in json.loads(EXPECTED.read_text()).items():
        for method in run["methods"]:
            given = set(method["metrics"])
            assert given <= set(METRICS), (run_name, given - set(METRICS))
            assert set(METRICS) - given <= optional, (run_name, set(METRICS) - given - optional)


def test_the_records_agree_with_each_other() -> None:
    ranked = [info.rank_auto for info in METRICS.values() if info.rank_auto]
    assert len(ranked) == len(set(ranked)), "two metrics at one place of rank's default"
    for name, info in METRICS.items():
        assert set(info.needs) <= set(RECORD_FIELDS), name
        if info.ca is not None:
            aware = METRICS[info.ca]
            assert aware.timing and aware.higher_is_better == info.higher_is_better, name
        if info.replaces is not None:
            assert METRICS[info.replaces].learned == info.learned, name
        if info.learned:
            assert info.segment_mean and info.quality, name
        if info.corpus_resampled or info.rank_auto:
            assert info.quality, name
        if info.relative_to_rt:
            assert info.timing, name
    for family in FAMILIES:
        assert set(family.counts_need) <= set(RECORD_FIELDS), family.name


def test_the_lists_of_metric_names_are_read_from_the_records() -> None:
    quality = names(lambda m: m.quality)
    assert "bleurt" in quality  # the kernel noise of an exact-method control is measured on every one
    assert quality == engine_notes.QUALITY_METRICS
    assert ("auto", *quality) == rank.METRIC_CHOICES
    assert set(rank.AUTO) == set(names(lambda m: m.rank_auto > 0))
    assert (
        *names(lambda m: m.corpus_resampled),
        *names(lambda m: m.segment_mean),
    ) == compare.BOOTSTRAP_METRICS
    assert rank.SEGMENT_MEANS == compare.SEGMENT_MEANS == names(lambda m: m.segment_mean)
    assert names(lambda m: m.learned) == schema.PER_STREAM_LEARNED
    assert names(lambda m: m.relative_to_rt) == timing_notes.RELATIVE_TO_RT
    assert names(lambda m: m.draft_model) == DRAFT_MODEL_METRICS
    for field in RECORD_FIELDS:
        assert {n for n, m in METRICS.items() if field in m.needs} <= set(needing(field))


def test_every_table_column_of_a_metric_is_its_record() -> None:
    columns = [
        *tables.TABLE2_COLUMNS,
        *tables.LONGFORM_COLUMNS,
        *TABLE3_COLUMNS,
        *TABLE4_COLUMNS,
        *bench_tables.BENCH_COLUMNS,
    ]
    for name, header, spec in columns:
        if name in METRICS:
            assert (header, spec) == (METRICS[name].title, METRICS[name].fmt), name
        else:
            assert name in ("regime", bench_tables.BOUND[0]), name
    for name, title in bench_tables.AGREEMENT_NAMES.items():
        assert title == METRICS[name].title


def test_a_new_family_is_one_module_and_its_registry_line(tmp_path: Path, monkeypatch: Any) -> None:
    """A toy family (what its module would hold) plugged in as its line of ``FAMILIES`` would: its metric is
    in run.json and per_stream.jsonl, `simul score --metric` shows it and `simul diff` compares it, with no
    other file changed."""
    record = MetricInfo("final_chars", False, "Chars", "mean characters of the final outputs", fmt=".1f")

    def figures(given: FamilyInput) -> Figures:
        lengths = [float(len(r.final_output)) for r in given.results]
        return Figures(metrics={record.name: mean_of(lengths)}, rows=[{record.name: n} for n in lengths])

    toy = Family(name="toy", specs=(record,), figures=figures)
    monkeypatch.setattr(compute, "FAMILIES", (*FAMILIES, toy))  # the registry line
    monkeypatch.setitem(METRICS, record.name, record)  # what the registry builds from it
    run = ingest_fixture("simuleval", tmp_path / "run")
    doc = json.loads((run / "run.json").read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in (run / "per_stream.jsonl").read_text(encoding="utf-8").splitlines()]
    assert doc["methods"][0]["metrics"][record.name] == mean_of([row[record.name] for row in rows])
    shown = runner.invoke(app, ["score", str(run), "--metric", record.name, "--json", "--quiet"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["methods"][0]["metrics"] == {
        record.name: doc["methods"][0]["metrics"][record.name]
    }
    compared = runner.invoke(app, ["diff", str(run), str(run), "--json", "--bootstrap", "0"])
    assert compared.exit_code == 0, compared.output
    row = next(r for r in json.loads(compared.stdout)["methods"][0]["metrics"] if r["name"] == record.name)
    assert (row["direction"], row["higher_is_better"]) == ("same", False)


@dataclass(frozen=True)
class _ToyScores:
    system: float
    segments: list[float]
    details: None = None
    signature: str = "toy|model:m|version:1"

    def counts(self) -> dict[str, Any]:
        return {}


class _ToyScorer:
    """A learned scorer whose segment score is the hypothesis's length (no model)."""

    kind = "toy"
    model = "m"
    version = "1"
    batch_size = 1
    needs_source = False

    def score(self, sources: Sequence[str], outputs: Sequence[str], references: Sequence[str]) -> _ToyScores:
        segments = [float(len(o)) for o in outputs]
        return _ToyScores(sum(segments) / len(segments), segments)


def test_a_new_learned_metric_is_its_module_and_its_registry_line(tmp_path: Path, monkeypatch: Any) -> None:
    """A toy learned metric (what its module would hold: record, option, config field, loader) plugged in as
    its line of ``LEARNED`` would: commands get its option, the rule loads its model, the quality family
    scores it and the run's config records its model."""
    toy = LearnedMetric(
        info=MetricInfo(
            "toy", True, "Toy", "hypothesis length", quality=True, segment_mean=True, learned=True
        ),
        config_field="toy_model",
        option="--toy-model",
        help="A toy model.",
        load=lambda model, batch_size: (_ToyScorer(), None),
    )
    monkeypatch.setattr(learned_models, "LEARNED", (*LEARNED, toy))  # the registry line
    monkeypatch.setitem(METRICS, toy.kind, toy.info)

    given: dict[str, str | None] = {}
    command = typer.Typer()

    @command.command()
    @learned_options
    def toy_command(learned: dict[str, str | None] | None = None) -> None:
        given.update(learned or {})

    assert runner.invoke(command, ["--toy-model", "m"]).exit_code == 0
    assert given == {"--bleurt-model": None, "--toy-model": "m"}

    run_dir = ingest_fixture("simuleval", tmp_path / "run")
    loaded = load_run(run_dir)
    scorers = learned_models.load_for_run(loaded.run, given, 16)
    assert learned_models.config_models(scorers.models)["toy_model"] == "m"
    scored = score(
        loaded.methods, loaded.results, loaded.streams, "13a", scorers.scorers, scorers.comet_reason
    )
    finals = [r.final_output for r in next(iter(loaded.results.values()))]
    assert scored.reports[0].metrics["toy"] == round(sum(map(len, finals)) / len(finals), 4)
    assert [row["toy"] for row in scored.reports[0].per_stream] == [float(len(f)) for f in finals]
    assert scored.signatures["toy"] == "toy|model:m|version:1"

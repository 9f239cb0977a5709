"""The metric records (simul.metrics.spec.MetricInfo) against everything that reads them: a record and a
family's figures, a table, a list of names or another record that disagree fail here.

Every list of metric names that the commands use is a read of the records (quality, corpus-resampled,
segment means, learned, relative to RT, draft model, what the step records must hold); the tables take their
titles and formats from them. The run's figures themselves are pinned by tests/test_figures_pinned.py."""

from __future__ import annotations

import json
from pathlib import Path

from simul.cli.sweep_cmd import TABLE3_COLUMNS, TABLE4_COLUMNS
from simul.metrics.registry import DRAFT_MODEL_METRICS, FAMILIES, METRICS, names, needing
from simul.metrics.spec import RECORD_FIELDS
from simul.reports import bench_tables, compare, engine_notes, rank, tables, timing_notes
from simul.runs import schema

EXPECTED = Path(__file__).resolve().parent / "data" / "figures" / "expected.json"


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

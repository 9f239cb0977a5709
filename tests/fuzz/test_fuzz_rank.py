"""`simul rank` under fire: a sentence-level run of the tiny model and two ingested systems of whole talks,
one file of one of them damaged (run.json, steps, timings, streams, per-stream rows), ranked together.

Reader: every run.json rank reads (status, config.streams, the scored methods' metrics, counts and labels,
the signatures, the hardware of config.ingest and environment), and, for the bootstrap between neighbours,
the per-stream rows (a talk's segments) and the steps and streams (a sentence run's final outputs).

Properties (tests/fuzz/cli.py): exit 0, 1 or 2 and no traceback; an error names one of the run directories;
nothing printed drives the terminal (the markdown on stdout neither); rank writes nothing, in the run
directories or elsewhere; and a ranking lists every scored method of every run, in a band or as unranked,
in JSON that parses.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simul.common.safe_text import has_unsafe
from simul.reports.rank import METRIC_CHOICES
from simul.runs.directory import PER_STREAM_FILE, RUN_FILE
from tests.fuzz.budget import examples, scratch, tried
from tests.fuzz.cli import check, invoke, leftovers, strict_json
from tests.fuzz.runs import (
    TALK_SYSTEMS,
    JsonPath,
    Seeds,
    damaged_runs,
    files_of,
    materialize,
    sentence_run,
    snapshot,
    talk_run,
)

# What rank reads of run.json beyond what every reader checks (simul.runs.schema.check_run_json).
RANK_FIELDS: tuple[JsonPath, ...] = (
    ("status",),
    ("config", "threads"),
    ("config", "ingest"),
    ("config", "ingest", "hardware"),
    ("config", "streams", "evaluated_sha256"),
    ("config", "streams", "sha256"),
    ("config", "streams", "src"),
    ("config", "streams", "tgt"),
    ("environment", "cpu"),
    ("environment", "hardware"),
    ("environment", "hardware", "devices"),
    ("environment", "hardware", "devices", 0),
    ("environment", "hardware", "devices", 0, "type"),
    ("environment", "hardware", "devices", 0, "description"),
    ("environment", "hardware", "offloaded_layers"),
    ("signatures", "chrf"),
    ("signatures", "longform_chrf"),
    ("signatures", "xcomet"),
    ("methods", 0, "label"),
    ("methods", 0, "counts"),
    ("methods", 0, "counts", "latency_unit"),
    ("methods", 0, "counts", "longform"),
    ("methods", 0, "counts", "longform", "latency_unit"),
    ("methods", 0, "metrics", "chrf"),
    ("methods", 0, "metrics", "bleu"),
    ("methods", 0, "metrics", "xcomet"),
    ("methods", 0, "metrics", "yaal"),
    ("methods", 0, "metrics", "long_yaal"),
    ("methods", 0, "metrics", "long_laal"),
    ("methods", -1, "metrics", "chrf"),
)
# ... and of a per-stream row (a talk's segments: what the bootstrap resamples)
ROW_FIELDS: tuple[JsonPath, ...] = (
    ("method",),
    ("stream",),
    ("xcomet",),
    ("segments",),
    ("segments", 0),
    ("segments", 0, "index"),
    ("segments", 0, "hypothesis"),
    ("segments", 0, "references"),
    ("segments", 0, "xcomet"),
)

FIELDS = {RUN_FILE: RANK_FIELDS, PER_STREAM_FILE: ROW_FIELDS}


@pytest.fixture(scope="module")
def base_runs(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Seeds:
    """The files of each run, by the run's folder name (the sentence run first)."""
    root = tmp_path_factory.mktemp("fuzz-rank")
    runs = [sentence_run(tiny_model, root), *(talk_run(root, fmt) for fmt in TALK_SYSTEMS)]
    return Seeds({run.name: files_of(run) for run in runs})


def _methods(run: Path) -> int | None:
    """How many scored methods the run's run.json lists (None when it cannot say)."""
    try:
        methods = json.loads((run / RUN_FILE).read_text(encoding="utf-8")).get("methods")
    except (OSError, ValueError, AttributeError):
        return None
    return len(methods) if isinstance(methods, list) else None


@settings(max_examples=examples(60))
@given(data=st.data())
def test_rank(base_runs: Seeds, data: st.DataObject) -> None:
    # run.json most often: rank reads more of it than of any other file
    damage = data.draw(damaged_runs(base_runs, FIELDS, {RUN_FILE: 3}))
    runs = damage.runs
    form = data.draw(st.sampled_from([[], ["--markdown"], ["--json"]]))
    metric = data.draw(st.sampled_from(METRIC_CHOICES))
    bootstrap = data.draw(st.sampled_from(["0", "5"]))
    tried("rank: run dirs")
    with scratch() as tmp:
        folder = Path(tmp)
        dirs = [materialize(folder / name, files) for name, files in runs.items()]
        before = {run: snapshot(run) for run in dirs}
        outcome = invoke(["rank", *map(str, dirs), "--metric", metric, "--bootstrap", bootstrap, *form])
        check(outcome, dirs)
        for run in dirs:
            assert snapshot(run) == before[run], f"rank changed {run}:\n{outcome.describe()}"
        written = [
            folder / run / name for run, files in runs.items() for name, c in files.items() if c is not None
        ]
        assert leftovers(folder, written) == [], f"rank wrote a file:\n{outcome.describe()}"
        if form == ["--markdown"]:
            assert not has_unsafe(outcome.stdout), outcome.describe()
        if outcome.code == 0 and form == ["--json"]:
            ranking = strict_json(outcome.stdout)
            groups = ranking["groups"]
            listed = sum(len(b["systems"]) for g in groups for b in g["bands"]) + sum(
                len(g["unranked"]) for g in groups
            )
            counts = [_methods(run) for run in dirs]
            if all(count is not None for count in counts):
                assert listed == sum(c for c in counts if c is not None), outcome.describe()


def test_the_intact_runs_are_ranked_in_every_form(base_runs: Seeds, tmp_path: Path) -> None:
    """The property above is about damage: the intact runs are ranked, the talks bootstrapped together."""
    dirs = [materialize(tmp_path / name, dict(files)) for name, files in base_runs.items()]
    for form in ([], ["--markdown"], ["--json"]):
        outcome = invoke(["rank", *map(str, dirs), "--bootstrap", "5", *form])
        check(outcome, dirs, codes=(0,))
    ranking = json.loads(invoke(["rank", *map(str, dirs), "--bootstrap", "5", "--json"]).stdout)
    talks = next(g for g in ranking["groups"] if g["form"] == "talks")
    assert any("delta" in n for b in talks["bands"] for n in b["neighbours"]), talks

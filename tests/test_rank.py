"""`simul rank` (simul.reports.rank): IWSLT 2026's bands from LongYAAL (YAAL for sentences), the metric it
ranks by, the order within a band, sacrebleu's paired bootstrap between neighbours (checked against
``sacrebleu.significance.PairedTest``), its outputs, and `simul diff --keep-band`.

The band tests copy one run of the tiny model and write hand-chosen YAAL and chrF figures into each copy's
run.json, so that every band boundary is met: the bands and the order below are computed by hand."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sacrebleu.metrics.bleu import BLEU
from sacrebleu.metrics.chrf import CHRF
from sacrebleu.significance import PairedTest
from typer.testing import CliRunner

from simul.cli import app
from simul.metrics.bands import band_of
from simul.reports.rank import rank
from simul.reports.significance import corpus_scores, rank_bootstrap, segment_mean_scores
from simul.runs.directory import load_run
from tests.helpers import eval_args
from tests.ingested import ingest

runner = CliRunner()
LONGFORM_DATA = Path(__file__).parent / "data" / "longform"


@pytest.fixture(scope="module")
def base_run(tiny_model: Path, streams_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rank") / "base"
    result = runner.invoke(app, eval_args(tiny_model, streams_file, "--threads", "2", "--out", str(out)))
    assert result.exit_code == 0, result.output
    return out


def _edit(run_dir: Path, change: Any) -> None:
    path = run_dir / "run.json"
    run = json.loads(path.read_text(encoding="utf-8"))
    change(run)
    path.write_text(json.dumps(run, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def system(base: Path, folder: Path, name: str, yaal: float, chrf: float, unit: str = "ms") -> Path:
    """A copy of ``base`` holding its first method only, with the given YAAL (in ``unit``) and chrF."""
    out = folder / name
    shutil.copytree(base, out)

    def change(run: dict[str, Any]) -> None:
        method = run["methods"][0]
        run["methods"] = [method]
        method["metrics"].update(yaal=yaal, chrf=chrf, latency=yaal + 100, yaal_ca=yaal + 500)
        method["counts"]["latency_unit"] = unit

    _edit(out, change)
    return out


def test_bands_and_order_by_hand(base_run: Path, tmp_path: Path) -> None:
    runs = [
        system(base_run, tmp_path, "a", 1500.0, 40.0),  # low
        system(base_run, tmp_path, "b", 2000.0, 50.0),  # low: 2 s is in (upper bound inclusive)
        system(base_run, tmp_path, "c", 2000.5, 30.0),  # high
        system(base_run, tmp_path, "d", 4000.0, 35.0),  # high: 4 s is in
        system(base_run, tmp_path, "e", 4000.1, 60.0),  # over 4 s: no band
        system(base_run, tmp_path, "f", 3.0, 70.0, unit="words"),  # untimed: no band
    ]
    ranking = rank(runs, "auto", samples=200)
    [group] = ranking.groups
    assert (group.pair, group.form, group.metric) == ("en-de", "sentences", "chrf")
    got = [(b.band, [s.name for s in b.systems]) for b in group.bands]
    assert got == [
        ("low", ["b/RT", "a/RT"]),  # 50 before 40
        ("high", ["d/RT", "c/RT"]),  # 35 before 30
        ("over", ["e/RT"]),
        (None, ["f/RT"]),
    ]
    f = group.bands[-1].systems[0]
    assert f.band.why_none == "yaal is in source words, not time: bands need timed streams"
    low = group.bands[0]
    assert len(low.neighbours) == 1 and low.neighbours[0] is not None  # one pair of neighbours
    b = low.systems[0]
    assert (b.stream_laal, b.ca_yaal, b.band.value) == (2100.0, 2500.0, 2000.0)
    assert b.hardware.endswith("2 threads")
    as_json = ranking.to_json()["groups"][0]
    assert [s["rank"] for s in as_json["bands"][0]["systems"]] == [1, 2]
    assert as_json["bands"][0]["neighbours"][0]["better"] == "b/RT"


def test_the_default_metric_is_xcomet_else_comet_from_one_model_else_chrf(
    base_run: Path, tmp_path: Path
) -> None:
    runs = [system(base_run, tmp_path, name, 1000.0, 40.0 + i) for i, name in enumerate("xyz")]

    def learned(name: str, model: str, value: float) -> Any:
        def change(run: dict[str, Any]) -> None:
            run["methods"][0]["metrics"][name] = value
            run["signatures"][name] = f"model:{model}|batch:16|version:2.2.7"

        return change

    for i, run_dir in enumerate(runs):
        _edit(run_dir, learned("comet", "Unbabel/wmt22-comet-da", 0.5 + i / 10))
    assert rank(runs, samples=0).groups[0].metric == "comet"
    for i, run_dir in enumerate(runs):
        _edit(run_dir, learned("xcomet", "Unbabel/XCOMET-XL", 0.9 - i / 10))
    group = rank(runs, samples=0).groups[0]
    assert group.metric == "xcomet" and group.signature == "model:Unbabel/XCOMET-XL|batch:16|version:2.2.7"
    assert [s.name for s in group.bands[0].systems] == ["x/RT", "y/RT", "z/RT"]
    _edit(runs[2], learned("xcomet", "Unbabel/XCOMET-XXL", 0.95))  # another model: not comparable
    assert rank(runs, samples=0).groups[0].metric == "comet"
    group = rank(runs, "xcomet", samples=0).groups[0]  # asked for: ranked all the same, by the figure
    assert group.metric == "xcomet"


def _finals(run_dir: Path, key: str) -> tuple[list[str], list[list[str]]]:
    loaded = load_run(run_dir)
    results = loaded.results[key]
    hyps = [r.final_output for r in results]
    refs = [list(loaded.streams[r.stream_id].references) for r in results]
    return hyps, refs


@pytest.mark.parametrize("metric", ["chrf", "bleu"])
def test_neighbours_get_sacrebleus_paired_bootstrap(base_run: Path, tmp_path: Path, metric: str) -> None:
    run_dir = tmp_path / "both"
    shutil.copytree(base_run, run_dir)

    def timed(run: dict[str, Any]) -> None:
        for method in run["methods"]:
            method["metrics"]["yaal"] = 1000.0
            method["counts"]["latency_unit"] = "ms"

    _edit(run_dir, timed)
    [group] = rank([run_dir], metric, samples=1000).groups
    [band] = group.bands
    better, worse = band.systems
    pair = band.neighbours[0]
    assert pair is not None
    hyp_a, refs = _finals(run_dir, better.key)
    hyp_b, _ = _finals(run_dir, worse.key)
    scorer = CHRF() if metric == "chrf" else BLEU(tokenize="13a")
    _, results = PairedTest(
        [("a", hyp_a), ("b", hyp_b)], {metric: scorer}, [list(r) for r in zip(*refs, strict=True)], "bs", 1000
    )()
    name = next(k for k in results if k != "System")
    a, b = (r for r in results[name] if not isinstance(r, str))
    assert pair.a_score == pytest.approx(a.score, abs=1e-9) and pair.b_score == pytest.approx(
        b.score, abs=1e-9
    )
    assert pair.a_score >= pair.b_score  # ranked best first
    assert (pair.a_mean, pair.a_ci) == pytest.approx((a.mean, a.ci), abs=1e-5)
    assert (pair.b_mean, pair.b_ci) == pytest.approx((b.mean, b.ci), abs=1e-5)
    if pair.delta == 0.0:  # the tiny model's outputs can score alike (BLEU 0): simul says p = 1 there
        assert pair.p == 1.0
    else:
        assert pair.p == pytest.approx(b.p_value, abs=1e-12)
    assert pair.delta_low <= pair.delta <= pair.delta_high or pair.delta_low <= pair.delta_high


@pytest.mark.parametrize("metric", ["chrf", "bleu"])
def test_the_corpus_bootstrap_equals_sacrebleus_on_systems_that_differ(metric: str) -> None:
    rng = random.Random(1)
    words = ["the", "cat", "dog", "sat", "on", "a", "mat", "house", "big", "small", "red", "blue"]
    refs = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(40)]
    hyp_a = [" ".join(w if rng.random() < 0.7 else rng.choice(words) for w in r.split()) for r in refs]
    hyp_b = [" ".join(w if rng.random() < 0.5 else rng.choice(words) for w in r.split()) for r in refs]
    score_a = corpus_scores(metric, hyp_a, [(r,) for r in refs], "de")
    score_b = corpus_scores(metric, hyp_b, [(r,) for r in refs], "de")
    mine = rank_bootstrap(score_a, score_b)
    scorer = CHRF() if metric == "chrf" else BLEU(tokenize="13a")
    _, results = PairedTest([("a", hyp_a), ("b", hyp_b)], {metric: scorer}, [refs], "bs", 1000)()
    name = next(k for k in results if k != "System")
    a, b = (r for r in results[name] if not isinstance(r, str))
    assert (mine.a_score, mine.b_score) == pytest.approx((a.score, b.score), abs=1e-9)
    assert (mine.a_mean, mine.a_ci, mine.b_mean, mine.b_ci) == pytest.approx(
        (a.mean, a.ci, b.mean, b.ci), abs=1e-5
    )
    assert mine.p == pytest.approx(b.p_value, abs=1e-12) and 0.001 < mine.p < 0.2
    assert mine.delta_low < mine.delta < mine.delta_high


def test_the_segment_bootstrap_of_comet_by_hand() -> None:
    a, b = [0.9, 0.5, 0.7], [0.6, 0.5, 0.4]
    result = rank_bootstrap(segment_mean_scores(a), segment_mean_scores(b), samples=40, seed=7)
    picks = np.random.default_rng(7).choice(3, size=(40, 3), replace=True)
    ma = [sum(a[i] for i in row) / 3 for row in picks]
    mb = [sum(b[i] for i in row) / 3 for row in picks]
    ordered = sorted(x - y for x, y in zip(ma, mb, strict=True))
    assert (result.delta_low, result.delta_high) == pytest.approx((ordered[1], ordered[38]))  # 40 // 40 = 1
    diffs = [abs(y - x) for x, y in zip(ma, mb, strict=True)]
    centre = sum(diffs) / 40
    assert result.p == pytest.approx((sum(1 for d in diffs if d - centre > 0.2 + 1e-12) + 1) / 41)
    assert result.a_mean == pytest.approx(sum(ma) / 40) and result.delta == pytest.approx(0.2)


def test_talks_of_ingested_systems_are_ranked_on_their_segments(tmp_path: Path) -> None:
    talks = LONGFORM_DATA / "talks.jsonl"
    one = ingest("omnisteval", LONGFORM_DATA / "omnisteval.jsonl", talks, tmp_path / "one", "--name", "one")
    two = ingest(
        "simulstream", LONGFORM_DATA / "simulstream_talks.jsonl", talks, tmp_path / "two", "--name", "two"
    )
    [group] = rank([one, two], samples=500).groups
    assert group.form == "talks" and group.metric == "chrf"
    for band in group.bands:
        for system in band.systems:
            assert band.band == band_of(system.metrics["long_yaal"]) and system.name in (
                "EXT(one)",
                "EXT(two)",
            )
            assert system.hardware == "not given (simul ingest --hardware)"
    ranked = [s for band in group.bands for s in band.systems]
    assert len(ranked) == 2

    # a run of talks keeps its XCOMET signature as longform_xcomet: one model for both, then XCOMET ranks
    def scored(model: str, value: float) -> Any:
        def change(run: dict[str, Any]) -> None:
            run["methods"][0]["metrics"]["xcomet"] = value
            run["signatures"]["longform_xcomet"] = f"model:{model}|batch:16|version:2.2.7"

        return change

    _edit(one, scored("Unbabel/XCOMET-XL", 0.8))
    _edit(two, scored("Unbabel/XCOMET-XL", 0.7))
    group = rank([one, two], samples=0).groups[0]
    assert group.metric == "xcomet" and group.signature == "model:Unbabel/XCOMET-XL|batch:16|version:2.2.7"
    _edit(two, scored("Unbabel/XCOMET-XXL", 0.7))
    assert rank([one, two], samples=0).groups[0].metric == "chrf"


def test_the_command_prints_table_markdown_and_json(base_run: Path, tmp_path: Path) -> None:
    runs = [system(base_run, tmp_path, "p", 1200.0, 45.0), system(base_run, tmp_path, "q", 3000.0, 44.0)]
    table = runner.invoke(app, ["rank", *map(str, runs), "--bootstrap", "100"], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "Low (<= 2 s)" in table.output and "High (2-4 s)" in table.output and "p/RT" in table.output
    md = runner.invoke(app, ["rank", *map(str, runs), "--markdown", "--bootstrap", "100"])
    assert (
        md.exit_code == 0
        and "### en-de, sentences" in md.stdout
        and "| Low (<= 2 s) | 1 | p/RT |" in md.stdout
    )
    js = runner.invoke(app, ["rank", *map(str, runs), "--json", "--bootstrap", "100"])
    data = json.loads(js.stdout)
    bands = data["groups"][0]["bands"]
    assert [(b["band"], [s["name"] for s in b["systems"]]) for b in bands] == [
        ("low", ["p/RT"]),
        ("high", ["q/RT"]),
    ]
    twice = runner.invoke(app, ["rank", str(runs[0]), str(runs[0])])
    assert twice.exit_code == 2 and "given twice" in twice.output


def test_diff_keep_band_fails_a_run_that_leaves_its_band(base_run: Path, tmp_path: Path) -> None:
    base = system(base_run, tmp_path, "base", 1900.0, 40.0)
    same = system(base_run, tmp_path, "same", 1950.0, 40.0)
    left = system(base_run, tmp_path, "left", 2100.0, 40.0)
    assert runner.invoke(app, ["diff", str(base), str(same), "--keep-band"]).exit_code == 0
    noted = runner.invoke(app, ["diff", str(base), str(left)])
    assert noted.exit_code == 0 and "left its latency band" in " ".join(noted.output.split())
    failed = runner.invoke(app, ["diff", str(base), str(left), "--keep-band", "--json"])
    assert failed.exit_code == 3
    data = json.loads(failed.stdout)
    assert data["band_regressions"] == [{"method": "RT", "base": "low", "new": "high"}]
    assert data["exit_code"] == 3


def test_two_systems_with_the_same_score_are_not_called_different() -> None:
    same = [0.4, 0.6, 0.8]
    result = rank_bootstrap(segment_mean_scores(same), segment_mean_scores(same), samples=100)
    assert result.p == 1.0 and result.delta == 0.0 and result.delta_low == result.delta_high == 0.0


def test_a_run_json_with_devices_that_are_not_a_list_is_ranked_on_its_cpu(
    base_run: Path, tmp_path: Path
) -> None:
    """The hardware beside a system comes from run.json's environment, which a hand edit or another tool may
    have filled with anything: a device list that is not a list was a TypeError (a traceback)."""
    run_dir = system(base_run, tmp_path, "devices", 1500.0, 40.0)
    on_cpu = rank([run_dir], samples=0).groups[0].bands[0].systems[0].hardware
    assert on_cpu.endswith("2 threads")
    for devices in (5, "GPU", {"type": "GPU"}, None, [3, "x"]):

        def change(run: dict[str, Any], devices: Any = devices) -> None:
            run["environment"]["hardware"]["devices"] = devices

        _edit(run_dir, change)
        [group] = rank([run_dir], samples=0).groups
        assert group.bands[0].systems[0].hardware == on_cpu, devices


def test_a_nan_or_infinite_figure_is_no_figure(base_run: Path, tmp_path: Path) -> None:
    """run.json is read with its NaN and Infinity: such a figure ranks nowhere (it was sorted as a number, put
    in the band over 4 s, and printed as NaN, which is not JSON)."""
    good = system(base_run, tmp_path, "good", 1500.0, 40.0)
    nan = system(base_run, tmp_path, "nan", 1500.0, 45.0)
    slow = system(base_run, tmp_path, "slow", 1500.0, 30.0)

    def no_chrf(run: dict[str, Any]) -> None:
        run["methods"][0]["metrics"]["chrf"] = float("nan")

    def no_yaal(run: dict[str, Any]) -> None:
        run["methods"][0]["metrics"]["yaal"] = float("inf")

    _edit(nan, no_chrf)
    _edit(slow, no_yaal)
    [group] = rank([good, nan, slow], samples=0).groups
    assert [(s.name, why) for s, why in group.unranked] == [("nan/RT", "no chrf figure")]
    bands = {b.band: [s.name for s in b.systems] for b in group.bands}
    assert bands == {"low": ["good/RT"], None: ["slow/RT"]}
    assert group.bands[-1].systems[0].band.why_none == "no yaal (no displayed unit could be timed)"
    result = runner.invoke(app, ["rank", str(good), str(nan), str(slow), "--json", "--bootstrap", "0"])
    assert result.exit_code == 0, result.output

    def refuse(name: str) -> None:
        raise AssertionError(f"{name} printed")

    data = json.loads(result.stdout, parse_constant=refuse)
    assert data["groups"][0]["unranked"][0]["metrics"]["chrf"] is None


def test_a_malformed_run_json_is_an_error_naming_its_line(base_run: Path, tmp_path: Path) -> None:
    """run.json is written indented, over many lines: the error says which line, not only the column."""
    run_dir = tmp_path / "broken"
    shutil.copytree(base_run, run_dir)
    path = run_dir / "run.json"
    lines = path.read_text(encoding="utf-8").splitlines()
    k = next(k for k, line in enumerate(lines) if k > 1 and line.endswith(","))
    lines[k] = lines[k].removesuffix(",")  # a comma lost: json notices on the next line
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["rank", str(run_dir)])
    assert result.exit_code == 1
    message = " ".join(result.output.split())
    assert f"{path} is not readable JSON" in message and f"at line {k + 2}, column" in message, message


@pytest.mark.parametrize("tgt", [None, "0", 7])
def test_a_run_without_its_target_language_is_refused_by_name(
    base_run: Path, tmp_path: Path, tgt: object
) -> None:
    damaged = tmp_path / "damaged"
    shutil.copytree(base_run, damaged)
    _edit(damaged, lambda run: run["config"]["streams"].update(tgt=tgt))
    result = runner.invoke(app, ["rank", str(base_run), str(damaged), "--metric", "bleu", "--bootstrap", "5"])
    assert result.exit_code == 1
    message = " ".join(result.stderr.split())
    assert str(damaged) in message and "config.streams.tgt" in message

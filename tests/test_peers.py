"""Golden tests: the field's own scorers, run on simul's exports, give simul's figures.

SimulEval 1.1.4, OmniSTEval 0.1.10 and simulstream 1.0.0 are optional (the ``dev`` extra has OmniSTEval and
simulstream; SimulEval is its own extra because it pins pytest-flake8, see pyproject.toml); each test skips
with the reason when its peer is absent. The runs come from `simul ingest` of the hand-written fixtures (no
model needed): a text en-de run, a timed (speech) run with update times, and an en-zh run whose outputs keep
spaces inside Chinese text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.testing import peers
from tests.ingested import ingest, ingest_fixture, metrics, write_zh_fixture

runner = CliRunner()


def _needs(module: str) -> None:
    pytest.importorskip(
        module, reason=f"{module} is not installed (pip install 'simul[dev]' / simul[simuleval])"
    )


def _export(run_dir: Path, fmt: str, *extra: str) -> Path:
    key = str(json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["methods"][-1]["key"])
    folder = run_dir / fmt / (key + "".join(extra))
    target = folder / "instances.log" if fmt == "simuleval" else folder
    result = runner.invoke(app, ["export", str(run_dir), "--format", fmt, "-o", str(target), *extra])
    assert result.exit_code == 0, result.output
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str, str]]:
    """name -> (run directory, target unit, BLEU tokenizer)"""
    root = tmp_path_factory.mktemp("peers")
    zh_outputs, zh_streams = write_zh_fixture(root)
    return {
        "text-de": (ingest_fixture("ssbd-ref", root / "de", "--ne-tokenizer", "word"), "word", "13a"),
        "timed-de": (ingest_fixture("simulstream", root / "timed", "--ne-tokenizer", "word"), "word", "13a"),
        "text-zh": (
            ingest("simul", zh_outputs, zh_streams, root / "zh", "--ne-tokenizer", "word"),
            "char",
            "zh",
        ),
    }


@pytest.mark.parametrize("name", ["text-de", "timed-de", "text-zh"])
def test_simuleval_scores_the_export_as_simul_does(name: str, runs: dict[str, tuple[Path, str, str]]) -> None:
    _needs("simuleval")
    run_dir, unit, tok = runs[name]
    ours = metrics(run_dir)
    theirs = peers.simuleval_scores(_export(run_dir, "simuleval") / "instances.log", unit, tok)
    for metric in ("latency", "al", "dal", "bleu"):
        assert ours[metric] == round(theirs[metric], 4), metric
    if name == "timed-de":  # SimulEval's computation-aware figures need the source in time
        for metric in ("latency_ca", "al_ca", "dal_ca"):
            assert ours[metric] == round(theirs[metric], 4), metric


def test_the_export_keeps_prediction_text_as_displayed(runs: dict[str, tuple[Path, str, str]]) -> None:
    run_dir, _, _ = runs["text-zh"]
    lines = (_export(run_dir, "simuleval") / "instances.log").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    assert first["prediction"] == "布里斯班 Open 将于周一开始。"
    assert first["latency_unit"] == "char"
    assert len(first["delays"]) == len("布里斯班 Open 将于周一开始。")  # characters, interior spaces included


@pytest.mark.parametrize("name", ["text-de", "timed-de", "text-zh"])
def test_omnisteval_shortform_yaal(name: str, runs: dict[str, tuple[Path, str, str]]) -> None:
    _needs("omnisteval")
    run_dir, unit, _ = runs[name]
    ours = metrics(run_dir)
    theirs = peers.omnisteval_shortform(_export(run_dir, "simuleval") / "instances.log", unit)
    assert ours["yaal"] == round(theirs["yaal"], 4)
    assert ours["latency"] == round(theirs["laal"], 4)
    if name == "timed-de":
        assert ours["yaal_ca"] == round(theirs["ca_yaal"], 4)


@pytest.mark.parametrize("name", ["text-de", "timed-de"])
def test_omnisteval_reads_the_simulstream_export(name: str, runs: dict[str, tuple[Path, str, str]]) -> None:
    _needs("omnisteval")
    _needs("simulstream")
    run_dir, unit, tok = runs[name]
    ours = metrics(run_dir)
    theirs = peers.omnisteval_longform(_export(run_dir, "simulstream"), unit, tok)
    # text streams: one source word is written as one millisecond, so the figures read as words
    assert ours["latency"] == round(theirs["long_laal"], 4)
    assert ours["yaal"] == round(theirs["long_yaal"], 4)
    assert ours["bleu"] == round(theirs["bleu"], 4)


@pytest.mark.parametrize("name", ["text-de", "timed-de", "text-zh"])
def test_simulstream_normalized_erasure_is_simul_ne_in_words(
    name: str, runs: dict[str, tuple[Path, str, str]]
) -> None:
    _needs("simulstream")
    run_dir, _, _ = runs[name]
    ours = metrics(run_dir)
    theirs = peers.simulstream_normalized_erasure(_export(run_dir, "simulstream", "--unit", "word"), "word")
    assert ours["ne_display"] == round(theirs, 4)


def test_simulstream_counts_characters_with_spaces(runs: dict[str, tuple[Path, str, str]]) -> None:
    """On the default (character) log of a zh run, simulstream's character NE is simul's NE in the latency
    unit, spaces included (simul's --ne-tokenizer char leaves spaces out)."""
    _needs("simulstream")
    from simul.metrics.erasure import normalized_erasure
    from simul.metrics.units import units
    from simul.runs.directory import load_run

    run_dir, _, _ = runs["text-zh"]
    loaded = load_run(run_dir)
    (results,) = loaded.results.values()
    ours = normalized_erasure([[units(s.display, "char") for s in r.steps] for r in results]).value
    theirs = peers.simulstream_normalized_erasure(_export(run_dir, "simulstream"), "char")
    assert ours == pytest.approx(theirs)


def test_bleu_and_chrf_are_sacrebleus(runs: dict[str, tuple[Path, str, str]]) -> None:
    import sacrebleu

    for run_dir, _, tok in runs.values():
        run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        hyps, refs = [], []
        streams = {
            json.loads(line)["id"]: json.loads(line)
            for line in (run_dir / "streams.jsonl").read_text(encoding="utf-8").splitlines()
        }
        for line in (run_dir / "steps.jsonl").read_text(encoding="utf-8").splitlines():
            step = json.loads(line)
            if step["final"]:
                hyps.append(step["output"])
                refs.append(streams[step["stream"]]["reference"])
        ours = run["methods"][-1]["metrics"]
        assert ours["bleu"] == round(sacrebleu.corpus_bleu(hyps, [refs], tokenize=tok).score, 4)
        assert ours["chrf"] == round(sacrebleu.corpus_chrf(hyps, [refs]).score, 4)

"""`simul diff` refuses what changes a score (signature parameters, a missing metric) and notes who computed
it (library versions, COMET batch size, the CPU), on copies of the committed CI baseline with edited
run.json files: a sacrebleu or COMET upgrade must not turn a committed baseline into a failed CI job."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.machine.environment import PACKAGES, environment
from simul.metrics.signatures import Signature, compare_signatures
from tests.helpers import isa_flag_this_cpu_lacks

runner = CliRunner()
BASELINE = Path(__file__).resolve().parent.parent / ".ci" / "baseline-tiny"
COMET_SIG = "model:Unbabel/wmt22-comet-da|batch:16|version:2.2.7"
# run.json environment keys that simul did not record before it recorded every score-moving package
NEW_KEYS = (*(k for k in PACKAGES if k not in ("llama_cpp_python", "sacrebleu", "unbabel_comet")), "cpu_isa")

Edit = Callable[[dict[str, Any]], None]


def copy_run(target: Path, edit: Edit | None = None, comet: dict[str, float] | None = None) -> Path:
    """A copy of the CI baseline with ``edit`` applied to its run.json; with ``comet`` (stream -> segment
    score), a COMET score in every method, its per-stream rows and its signature."""
    shutil.copytree(BASELINE, target, ignore=shutil.ignore_patterns(".lock"))
    run = json.loads((target / "run.json").read_text(encoding="utf-8"))
    if comet is not None:
        mean = round(sum(comet.values()) / len(comet), 4)
        for method in run["methods"]:
            method["metrics"]["comet"] = mean
        run["signatures"]["comet"] = COMET_SIG
        rows = [json.loads(line) for line in (target / "per_stream.jsonl").read_text().splitlines()]
        for row in rows:
            row["comet"] = comet[row["stream"]]
        (target / "per_stream.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    if edit is not None:
        edit(run)
    (target / "run.json").write_text(json.dumps(run, indent=1, sort_keys=True), encoding="utf-8")
    return target


def as_new(run: dict[str, Any]) -> None:
    """A run.json as this simul writes it: every package version and the CPU's instruction sets."""
    run["environment"].update({k: v for k, v in environment(2).items() if k in NEW_KEYS})
    for key in ("sacrebleu", "unbabel_comet"):
        run["environment"][key] = {"sacrebleu": "2.6.0", "unbabel_comet": "2.2.7"}[key]


def as_old(sacrebleu: str = "2.5.1", comet: str | None = None) -> Edit:
    """A run.json written before this simul (no torch, numpy, ... or cpu_isa), by another sacrebleu."""

    def edit(run: dict[str, Any]) -> None:
        for key in NEW_KEYS:
            run["environment"].pop(key, None)
        run["environment"]["sacrebleu"] = sacrebleu
        for key in ("bleu", "chrf"):
            run["signatures"][key] = run["signatures"][key].replace("version:2.6.0", f"version:{sacrebleu}")
        if comet is not None:
            run["signatures"]["comet"] = COMET_SIG.replace("version:2.2.7", f"version:{comet}")
            run["environment"]["unbabel_comet"] = comet

    return edit


def signature(key: str, old: str, new: str) -> Edit:
    def edit(run: dict[str, Any]) -> None:
        assert old in run["signatures"][key]
        run["signatures"][key] = run["signatures"][key].replace(old, new)

    return edit


def diff(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, ["diff", *map(str, args), "--bootstrap", "100"])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def comet_scores() -> dict[str, float]:
    ids = [json.loads(line)["id"] for line in (BASELINE / "streams.jsonl").read_text().splitlines()]
    return {sid: round(0.5 + 0.01 * i, 4) for i, sid in enumerate(ids)}


@pytest.fixture(scope="module")
def new_run(tmp_path_factory: pytest.TempPathFactory, comet_scores: dict[str, float]) -> Path:
    return copy_run(tmp_path_factory.mktemp("new") / "run", as_new, comet=comet_scores)


def test_signatures_split_into_parameters_and_provenance() -> None:
    bleu = Signature.parse("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0")
    assert bleu.parameters == ("nrefs:1", "case:mixed", "eff:no", "tok:13a", "smooth:exp")
    assert bleu.provenance == (("version", "2.6.0"),)
    comet = Signature.parse("model:/models/wmt22:v1/model.ckpt|batch:16|version:2.2.7")
    assert comet.parameters == ("model:/models/wmt22:v1/model.ckpt",)
    assert dict(comet.provenance) == {"batch": "16", "version": "2.2.7"}
    reseg = Signature.parse("reseg:softsegmenter|omnisteval:0.1.10|lang:de|unit:word")
    assert reseg.parameters == ("reseg:softsegmenter", "lang:de", "unit:word")
    assert Signature.parse("13a").parameters == ("13a",)
    reasons, changes = compare_signatures(
        {"bleu": "tok:13a|version:2.5.1", "chrf": "nc:6|version:2.5.1", "ne_tokenizer": "13a"},
        {"bleu": "tok:13a|version:2.6.0", "chrf": "nc:4|version:2.6.0", "ne_tokenizer": "13a"},
    )
    assert reasons == ["different chrf signature parameters (nc:6 vs nc:4)"]
    assert [(c.what, c.base, c.new) for c in changes] == [("bleu signature version", "2.5.1", "2.6.0")]


def test_a_baseline_from_before_a_sacrebleu_upgrade_diffs_with_a_note(new_run: Path, tmp_path: Path) -> None:
    old = copy_run(tmp_path / "old", as_old(sacrebleu="2.5.1"), comet=None)
    code, out, err = diff(old, new_run, "--json", "--allow-missing", "comet")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["comparable"] and doc["regressions"] == []
    changes = {(c["what"], c["base"], c["new"]) for c in doc["provenance"]}
    assert ("bleu signature version", "2.5.1", "2.6.0") in changes
    assert ("chrf signature version", "2.5.1", "2.6.0") in changes
    assert ("sacrebleu", "2.5.1", "2.6.0") in changes
    # packages the old file does not record are not compared
    assert not any(c["what"] in ("torch", "numpy", "CPU instruction sets") for c in doc["provenance"])
    note = next(n for n in doc["notes"] if n.startswith("provenance differs"))
    assert "sacrebleu 2.5.1 (base) vs 2.6.0 (new)" in note and "--strict-versions" in note
    # the table names both sides too
    code, _, err = diff(old, new_run, "--allow-missing", "comet")
    assert code == 0 and "bleu signature version 2.5.1 (base) vs 2.6.0 (new)" in " ".join(err.split())


def test_strict_versions_refuses_the_upgrade(new_run: Path, tmp_path: Path) -> None:
    old = copy_run(tmp_path / "old", as_old(sacrebleu="2.5.1"), comet=None)
    code, _, err = diff(old, new_run, "--allow-missing", "comet", "--strict-versions")
    text = " ".join(err.split())
    assert code == 2
    assert "refused" in text and "different sacrebleu 2.5.1 (base) vs 2.6.0 (new) (--strict-versions)" in text
    # the same files, same versions: strict has nothing to refuse
    code, _, err = diff(new_run, new_run, "--strict-versions")
    assert code == 0, err


def test_a_comet_upgrade_and_batch_size_are_provenance(
    new_run: Path, tmp_path: Path, comet_scores: dict[str, float]
) -> None:
    def older_comet(run: dict[str, Any]) -> None:
        as_old(sacrebleu="2.6.0", comet="2.1.0")(run)
        run["signatures"]["comet"] = run["signatures"]["comet"].replace("batch:16", "batch:8")

    old = copy_run(tmp_path / "old", older_comet, comet=comet_scores)
    code, out, err = diff(old, new_run, "--json")
    assert code == 0, err
    changes = {(c["what"], c["base"], c["new"]) for c in json.loads(out)["provenance"]}
    assert {("comet signature version", "2.1.0", "2.2.7"), ("comet signature batch", "8", "16")} <= changes
    assert ("unbabel-comet", "2.1.0", "2.2.7") in changes
    code, _, err = diff(old, new_run, "--strict-versions")
    assert code == 2 and "different comet signature batch 8 (base) vs 16 (new)" in " ".join(err.split())


@pytest.mark.parametrize(
    ("edit", "shown"),
    [
        (signature("bleu", "tok:13a", "tok:intl"), "tok:intl"),  # tokenizer
        (signature("bleu", "nrefs:1", "nrefs:2"), "nrefs:2"),  # references
        (signature("chrf", "nc:6", "nc:4"), "nc:4"),  # n-gram order
        (signature("comet", "Unbabel/wmt22-comet-da", "Unbabel/wmt20-comet-da"), "wmt20-comet-da"),  # model
        (signature("ne_tokenizer", "13a", "flores101"), "flores101"),  # NE unit
    ],
    ids=["tokenizer", "references", "ngram-order", "comet-model", "ne-tokenizer"],
)
def test_a_parameter_change_is_refused(
    edit: Edit, shown: str, new_run: Path, tmp_path: Path, comet_scores: dict[str, float]
) -> None:
    other = copy_run(tmp_path / "other", edit, comet=comet_scores)
    code, _, err = diff(other, new_run)
    text = " ".join(err.split())
    assert code == 2 and "refused" in text and shown in text, text
    # even with versions that match and --allow-missing: only --force compares them
    code, _, _ = diff(other, new_run, "--force")
    assert code == 0


def test_an_ne_unit_that_differs_is_refused(
    new_run: Path, tmp_path: Path, comet_scores: dict[str, float]
) -> None:
    def word_units(run: dict[str, Any]) -> None:
        for method in run["methods"]:
            method["counts"]["ne_unit"] = "word"

    other = copy_run(tmp_path / "other", word_units, comet=comet_scores)
    code, _, err = diff(other, new_run)
    assert code == 2 and "NE in different units (word vs 13a)" in " ".join(err.split())


def test_a_metric_the_new_run_lacks_is_refused_unless_allowed(new_run: Path, tmp_path: Path) -> None:
    def no_comet(run: dict[str, Any]) -> None:
        run["comet"] = {"available": False, "reason": "model Unbabel/wmt22-comet-da is not in the cache"}

    lacking = copy_run(tmp_path / "lacking", no_comet, comet=None)
    code, _, err = diff(new_run, lacking)
    text = " ".join(err.split())
    assert code == 2
    assert "the new run has no COMET for RT, SSBD" in text and "not in the cache" in text
    assert "--allow-missing comet" in text
    code, out, _ = diff(new_run, lacking, "--allow-missing", "comet", "--json")
    assert code == 0 and json.loads(out)["allow_missing"] == ["comet"]
    # a metric without a threshold decides nothing: switching COMET's off also lets the run through
    assert diff(new_run, lacking, "--max-drop", "comet=none")[0] == 0
    # the other way round (a metric the new run adds) is not a failure
    assert diff(lacking, new_run)[0] == 0
    assert diff(new_run, lacking, "--allow-missing", "bleurt")[0] == 2


def test_other_cpu_instruction_sets_are_noted_never_refused(new_run: Path, tmp_path: Path) -> None:
    flag = isa_flag_this_cpu_lacks()

    def other_cpu(run: dict[str, Any]) -> None:
        as_new(run)
        run["environment"]["cpu_isa"] = ["avx", "avx2", "fma", flag]

    other = copy_run(tmp_path / "other", other_cpu)
    code, out, err = diff(new_run, other, "--json", "--strict-versions", "--allow-missing", "comet")
    assert code == 0, err
    doc = json.loads(out)
    change = next(c for c in doc["provenance"] if c["what"] == "CPU instruction sets")
    assert change["new"] == f"+{flag}" and not change["strict"]
    assert any(n.startswith("decoded on CPUs with other instruction sets") for n in doc["notes"])


def test_hostile_provenance_is_printed_escaped(new_run: Path, tmp_path: Path) -> None:
    def hostile(run: dict[str, Any]) -> None:
        as_new(run)
        run["environment"]["torch"] = "[bold]\x1b]0;x\x07"

    other = copy_run(tmp_path / "other", hostile)
    code, _, err = diff(other, new_run, "--allow-missing", "comet")
    assert code == 0, err
    assert "\x1b" not in err and "\\x1b" in err and "[bold]" in err


def as_recognized(target: Path, cpu_isa: list[str], ctranslate2: str, words: bool = False) -> Path:
    """A run whose streams were made from audio: every stream gets a recognizer record in its provenance
    (``provenance.asr``, as `simul streams asr` writes it), and with ``words`` the last stream's first step
    other words; run.json's stream digest follows the file, as simul writes it."""
    path = target / "streams.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        line["provenance"]["asr"] = {
            "recognizer": "faster-whisper",
            "model": "whisper-base",
            "versions": {"faster_whisper": "1.1.1", "ctranslate2": ctranslate2},
            "cpu_isa": cpu_isa,
            "compute_ms": 812.4 if words else 790.1,
        }
    if words:
        lines[-1]["steps"][0]["source"] = "Other words"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    run = json.loads((target / "run.json").read_text(encoding="utf-8"))
    run["config"]["streams"]["evaluated_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (target / "run.json").write_text(json.dumps(run, indent=1, sort_keys=True), encoding="utf-8")
    return target


def test_streams_recognized_differently_are_refused_naming_what_differs(
    new_run: Path, tmp_path: Path
) -> None:
    base = as_recognized(copy_run(tmp_path / "base", as_new), ["avx", "avx2"], "4.5.0")
    # the same words and times, recognized on another CPU by another CTranslate2
    same_words = as_recognized(copy_run(tmp_path / "cpu", as_new), ["avx", "avx512f"], "4.6.0")
    code, _, err = diff(base, same_words, "--allow-missing", "comet")
    message = " ".join(err.split())
    assert code == 2 and "different streams" in message, err
    assert "the steps are the same" in message
    assert "cpu_isa -'avx2' +'avx512f'" in message
    assert "versions.ctranslate2 '4.5.0' vs '4.6.0'" in message
    # other words, and a measured figure apart from how the audio was recognized
    other_words = as_recognized(copy_run(tmp_path / "words", as_new), ["avx", "avx2"], "4.5.0", words=True)
    code, _, err = diff(base, other_words, "--allow-missing", "comet")
    message = " ".join(err.split())
    assert code == 2 and "1 of 8 shared streams have other steps" in message, err
    assert "recognized differently" not in message and "measured figures differ (compute_ms)" in message
    # streams not made from audio: only the steps are named
    code, _, err = diff(new_run, other_words, "--allow-missing", "comet")
    assert code == 2 and "1 of 8 shared streams have other steps" in " ".join(err.split()), err


def test_every_figure_a_long_form_recognition_measures_is_named_apart() -> None:
    """Two recognitions of one recording on machines of other speeds differ only in what the long-form
    recognizer measures (how long its updates took, how late they were): each such field is listed with
    the measured figures, none as a difference in how the audio was recognized."""
    from simul.reports.stream_origin import explain
    from simul.streams.asr.measured import TALK_MEASURED
    from simul.streams.format import Step, Stream

    def talk(scale: float) -> Stream:
        record: dict[str, Any] = {"recognizer": "faster-whisper", "model": "whisper-base"}
        record.update({name: [scale, 2 * scale] for name in TALK_MEASURED})
        steps = (Step(source="Hello", time_ms=1000.0), Step(source="Hello world", time_ms=2000.0))
        return Stream(id="t", src="en", tgt="de", steps=steps, provenance={"asr": record})

    message = explain({"t": talk(1.0)}, {"t": talk(1.5)})
    assert "recognized differently" not in message, message
    listed = message.split("measured figures differ (")[1].split(")")[0].split(", ")
    assert sorted(listed) == sorted(TALK_MEASURED)


def test_a_recognition_on_another_matrix_library_is_named() -> None:
    """CTranslate2 on MKL (an Intel CPU where the user set CT2_USE_MKL=1) against oneDNN: the same words
    may come out or not, and when the streams differ the refusal names the library as a difference in how
    the audio was recognized, not as a measured figure."""
    from simul.reports.stream_origin import explain
    from simul.streams.format import Step, Stream

    def talk(mkl: bool, source: str) -> Stream:
        record: dict[str, Any] = {
            "recognizer": "faster-whisper",
            "model": "whisper-base",
            "ctranslate2_mkl": mkl,
        }
        steps = (Step(source="Hello", time_ms=1000.0), Step(source=source, time_ms=2000.0))
        return Stream(id="t", src="en", tgt="de", steps=steps, provenance={"asr": record})

    message = " ".join(explain({"t": talk(False, "Hello world")}, {"t": talk(True, "Hello word")}).split())
    assert "recognized differently" in message and "ctranslate2_mkl" in message, message
    assert "measured figures differ" not in message, message

"""Several references per stream: the format, BLEU/chrF equal to the sacrebleu CLI, run files, show, diff."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import SimulError
from simul.metrics.quality import corpus_bleu, corpus_chrf, sentence_chrf
from simul.runs.directory import load_run
from simul.streams.format import Step, Stream, read_streams, stream_from_json, write_streams
from tests.helpers import SENTENCES, eval_args, lag_stream

runner = CliRunner()

HYPS = ["Die Katze sitzt auf der Matte.", "Es regnet heute sehr stark.", "Wir haben vier Züge."]
REF_A = ["Die Katze saß auf der Matte.", "Es regnet heute stark.", "Wir haben jetzt vier Züge."]
REF_B = ["Eine Katze sitzt auf der Matte.", "Heute regnet es sehr.", "Nun gibt es vier neue Züge."]


def sacrebleu_cli(hyps: list[str], refs: list[list[str]], folder: Path, *options: str) -> dict[str, float]:
    """Scores from ``sacrebleu REF_A REF_B ... -i HYP -m bleu chrf`` (the command line, a child process)."""
    folder.mkdir(parents=True, exist_ok=True)
    hyp_file = folder / "hyp.txt"
    hyp_file.write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
    ref_files = []
    for number, column in enumerate(refs):
        path = folder / f"ref{number}.txt"
        path.write_text("".join(r + "\n" for r in column), encoding="utf-8")
        ref_files.append(str(path))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sacrebleu",
            *ref_files,
            "-i",
            str(hyp_file),
            "-m",
            "bleu",
            "chrf",
            "-w",
            "4",
            *options,
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    scores = json.loads(done.stdout)
    return {"bleu": scores[0]["score"], "chrf": scores[1]["score"], "nrefs": int(scores[0]["nrefs"])}


def test_stream_format_with_several_references(tmp_path: Path) -> None:
    stream = Stream("s", "en", "de", (Step("a b", final=True),), "A ref", {"line": 1}, ("B ref", "C ref"))
    path = tmp_path / "s.jsonl"
    write_streams(path, [stream])
    record = json.loads(path.read_text(encoding="utf-8"))
    assert record["version"] == 2 and record["references"] == ["A ref", "B ref", "C ref"]
    assert "reference" not in record
    back = read_streams(path)[0]
    assert back == stream and back.references == ("A ref", "B ref", "C ref") and back.reference == "A ref"
    # an old (version 1) record with one reference, and a list with one reference, read alike
    old = {**record, "version": 1, "reference": "A ref"}
    del old["references"]
    assert stream_from_json(old).references == ("A ref",)
    assert stream_from_json({**record, "references": ["A ref"]}).references == ("A ref",)
    assert stream_from_json({**record, "references": []}).reference is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"reference": "x"}, "either 'reference' or 'references'"),
        ({"references": "A ref"}, "'references' must be a list of strings"),
        ({"references": ["A ref", 3]}, "'references' must be a list of strings"),
        ({"references": ["A ref", " "]}, "reference 2 is empty"),
    ],
)
def test_bad_reference_fields(change: dict[str, object], message: str) -> None:
    record = Stream("s", "en", "de", (Step("a", final=True),), "A ref", {}, ("B ref",)).to_json()
    with pytest.raises(SimulError, match=f"f.jsonl:3: .*{message}"):
        stream_from_json({**record, **change}, "f.jsonl:3")


def test_more_references_need_a_first_one() -> None:
    stream = Stream("s", "en", "de", (Step("a", final=True),), None, {}, ("B ref",))
    with pytest.raises(ValueError, match="more references but no first reference"):
        stream.validate()


def test_scores_equal_the_sacrebleu_command_line(tmp_path: Path) -> None:
    refs = [(a, b) for a, b in zip(REF_A, REF_B, strict=True)]
    cli = sacrebleu_cli(HYPS, [REF_A, REF_B], tmp_path / "de")
    bleu, chrf = corpus_bleu(HYPS, refs, "de"), corpus_chrf(HYPS, refs)
    assert cli["nrefs"] == 2 and bleu.signature.startswith("nrefs:2") and chrf.signature.startswith("nrefs:2")
    assert round(bleu.score, 4) == cli["bleu"] and round(chrf.score, 4) == cli["chrf"]
    one = sacrebleu_cli(HYPS, [REF_A], tmp_path / "de1")
    assert round(corpus_bleu(HYPS, [(a,) for a in REF_A], "de").score, 4) == one["bleu"]
    assert one["bleu"] < cli["bleu"]  # the second reference matters
    zh_hyps, zh_a, zh_b = (
        ["我们有四列新火车。", "猫坐在垫子上"],
        ["我们有四列新的火车。", "猫在垫子上。"],
        ["现在有四列新火车。", "一只猫坐在垫子上。"],
    )
    zh = sacrebleu_cli(zh_hyps, [zh_a, zh_b], tmp_path / "zh", "--tokenize", "zh")
    zh_refs = list(zip(zh_a, zh_b, strict=True))
    assert round(corpus_bleu(zh_hyps, zh_refs, "zh").score, 4) == zh["bleu"]
    assert round(corpus_chrf(zh_hyps, zh_refs).score, 4) == zh["chrf"]
    # sentence chrF keeps the best reference
    assert sentence_chrf(HYPS[0], (REF_A[0], REF_B[0])) == max(
        sentence_chrf(HYPS[0], (REF_A[0],)), sentence_chrf(HYPS[0], (REF_B[0],))
    )
    with pytest.raises(TypeError):
        corpus_bleu(HYPS, REF_A, "de")  # type: ignore[arg-type]


def two_reference_streams() -> list[Stream]:
    second = [
        "Die Katze saß auf der Matte und schaute zum Fenster hinaus.",
        "Nun gibt es vier neue Züge in der Stadt.",
    ]
    second += [
        "Hallo Welt, dies ist ein Test des Systems.",
        "Heute ist das Wetter gut und die Sonne scheint.",
    ]
    streams = []
    for index, ((src, ref), other) in enumerate(zip(SENTENCES, second, strict=True)):
        one = lag_stream(f"s{index}", src, ref)
        streams.append(Stream(one.id, one.src, one.tgt, one.steps, one.reference, one.provenance, (other,)))
    return streams


@pytest.fixture(scope="module")
def runs(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("multiref")
    out: dict[str, Path] = {}
    for name, streams in (
        ("two", two_reference_streams()),
        ("one", [lag_stream(f"s{i}", s, r) for i, (s, r) in enumerate(SENTENCES)]),
    ):
        path = root / f"{name}.jsonl"
        write_streams(path, streams)
        run_dir = root / name
        result = runner.invoke(app, eval_args(tiny_model, path, "--beta", "0.2", "--out", str(run_dir)))
        assert result.exit_code == 0, result.output
        out[name] = run_dir
    return out


def test_run_scores_equal_sacrebleu_with_all_references(runs: dict[str, Path], tmp_path: Path) -> None:
    loaded = load_run(runs["two"])
    run = loaded.run
    assert run["config"]["streams"]["references"]["max_per_stream"] == 2
    assert run["config"]["streams"]["references"]["use"] == {
        "bleu": "all",
        "chrf": "all",
        "comet": "first",
        "latency": "first",
    }
    assert run["signatures"]["bleu"].startswith("nrefs:2")
    streams = [loaded.streams[sid] for sid in sorted(loaded.streams)]
    for method in run["methods"]:
        finals = {r.stream_id: r.final_output for r in loaded.results[method["key"]]}
        hyps = [finals[s.id].replace("\n", " ") for s in streams]
        assert all("\n" not in finals[s.id] for s in streams)
        cli = sacrebleu_cli(
            hyps, [[s.references[k] for s in streams] for k in range(2)], tmp_path / method["key"]
        )
        assert method["metrics"]["bleu"] == cli["bleu"] and method["metrics"]["chrf"] == cli["chrf"], method[
            "key"
        ]


def test_diff_refuses_different_reference_sets(runs: dict[str, Path]) -> None:
    result = runner.invoke(app, ["diff", str(runs["one"]), str(runs["two"])])
    assert result.exit_code == 2
    assert "different reference sets (1 per stream vs 2 per stream" in result.stderr
    assert runner.invoke(app, ["diff", str(runs["two"]), str(runs["two"])]).exit_code == 0


def test_show_prints_every_reference(runs: dict[str, Path]) -> None:
    shown = runner.invoke(app, ["show", str(runs["two"]), "--stream", "s1"], terminal_width=400)
    assert shown.exit_code == 0, shown.output
    assert "reference 1: Wir haben jetzt vier neue Züge in der Stadt." in shown.stderr
    assert "reference 2: Nun gibt es vier neue Züge in der Stadt." in shown.stderr
    listed = runner.invoke(
        app, ["streams", "show", str(runs["two"] / "streams.jsonl"), "--id", "s1"], terminal_width=400
    )
    assert listed.exit_code == 0, listed.output
    assert "reference 2: Nun gibt es vier neue Züge in der Stadt." in listed.stderr
    page = runs["two"].parent / "s1.html"
    html = runner.invoke(app, ["show", str(runs["two"]), "--stream", "s1", "--html", str(page)])
    assert html.exit_code == 0, html.output
    text = page.read_text(encoding="utf-8")
    assert "references: 1. " in text and "Nun gibt es vier neue Züge in der Stadt." in text


def test_streams_without_references_say_what_is_not_computed(tiny_model: Path, tmp_path: Path) -> None:
    path = tmp_path / "none.jsonl"
    write_streams(path, [lag_stream(f"s{i}", src, None) for i, (src, _) in enumerate(SENTENCES[:2])])
    args = eval_args(tiny_model, path, "--json")
    args.remove("--quiet")
    result = runner.invoke(app, args, terminal_width=300)
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)["methods"][0]["metrics"]
    assert metrics["bleu"] is None and metrics["chrf"] is None and metrics["comet"] is None
    assert "chrF, BLEU and COMET blank: none of the 2 streams has a reference" in result.stderr


def test_streams_stats_counts_references_per_stream(tmp_path: Path) -> None:
    steps = (Step("a b", final=True),)
    streams = [
        Stream("two", "en", "de", steps, "A ref", {}, ("B ref",)),
        Stream("one", "en", "de", steps, "A ref", {}),
        Stream("none", "en", "de", steps, None, {}),
    ]
    path = tmp_path / "s.jsonl"
    write_streams(path, streams)
    result = runner.invoke(app, ["streams", "stats", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["references_per_stream"] == {"0": 1, "1": 1, "2": 1}
    table = runner.invoke(app, ["streams", "stats", str(path)])
    assert "1 with 0, 1 with 1, 1 with 2" in " ".join(table.output.split())

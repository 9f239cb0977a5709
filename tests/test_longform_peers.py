"""Peer equality of ingested long-form runs (issue 26): a talk-level file of another system, read by
`simul ingest`, scores in run.json to the figures the field's own scorer gives on that same file.

* OmniSTEval 0.1.10: `omnisteval longform --hypothesis_format jsonl` on the JSONL that `simul ingest --format
  omnisteval` read (BLEU and chrF to 0.01, every long-form latency OmniSTEval prints to 1 ms), German (words)
  and Chinese (characters, with spaces inside the output).
* simulstream 1.0.0: `simulstream_score_latency --scorer stream_laal` (StreamLAAL, mWER re-segmentation, in
  seconds) on the metrics log that `simul ingest --format simulstream` read, against `simul score RUN
  --resegment mwer` (LongLAAL CU and CA, to 1 ms).
* SimulStreaming's output records no computation time: computation-aware figures are not available (None),
  the computation-unaware ones are OmniSTEval's on the delays the output implies.
* `simul diff SIMUL_RUN INGESTED_RUN --pair rt=ext-NAME` compares a tiny-model long-form run with an
  ingested one.

Peers run as their command lines do, in a subprocess; a test skips when its peer is not installed.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from simul.cli import app
from simul.streams.format import Segment, Step, Stream, read_streams, write_streams
from tests.helpers import eval_args
from tests.ingested import ingest

runner = CliRunner()
DATA = Path(__file__).resolve().parent / "data" / "longform"
TALKS = DATA / "talks.jsonl"  # talk1, talk2: en->de, timed, with reference segments
OMNI_JSONL = DATA / "omnisteval.jsonl"
SIMULSTREAM_LOG = DATA / "simulstream_talks.jsonl"
SIMULSTREAMING = DATA / "simulstreaming"

# run.json metric -> OmniSTEval 0.1.10's name in scores.tsv
OMNI_NAMES = {
    "long_yaal": "LongYAAL (CU)",
    "long_laal": "LongLAAL (CU)",
    "long_al": "LongAL (CU)",
    "long_dal": "LongDAL (CU)",
    "ca_long_yaal": "LongYAAL (CA)",
    "ca_long_laal": "LongLAAL (CA)",
    "ca_long_al": "LongAL (CA)",
    "ca_long_dal": "LongDAL (CA)",
}
CU = ("long_yaal", "long_laal", "long_al", "long_dal")
CA = ("ca_long_yaal", "ca_long_laal", "ca_long_al", "ca_long_dal")

# An en->zh talk whose Chinese output has spaces around "AI" (character units, spaces counted).
ZH_OUTPUT = "大家好。我们用 AI 翻译。谢谢。"
ZH_TALK = Stream.talk(
    "zh1",
    "en",
    "zh",
    (
        Step("Hello everyone.", False, 1000.0),
        Step("Hello everyone. We translate", False, 3000.0),
        Step("Hello everyone. We translate with AI.", False, 5000.0),
        Step("Hello everyone. We translate with AI. Thank you.", True, 6500.0),
    ),
    (
        Segment(("大家好。",), "Hello everyone.", 0.0, 2000.0),
        Segment(("我们用AI翻译。",), "We translate with AI.", 2200.0, 3000.0),
        Segment(("谢谢。",), "Thank you.", 5400.0, 1500.0),
    ),
    duration_ms=7000.0,
    provenance={"dataset": "test"},
)
# one CU delay (ms) per character of ZH_OUTPUT; each space arrives with the character after it
ZH_DELAYS = [1000] * 2 + [2000] * 2 + [3000] * 3 + [4000] * 3 + [5000] * 4 + [6500] * 3  # " AI", " 翻译。"


def _need(module: str, install: str) -> None:
    pytest.importorskip(module, reason=f"{module} is not installed ({install})")


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUTF8": "1"}  # the peers open their text files with the locale's encoding
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, timeout=300)
    assert done.returncode == 0, (cmd, done.stdout[-2000:], done.stderr[-2000:])
    return done


def _segmentation(streams_path: Path, folder: Path) -> tuple[Path, Path]:
    """The reference side both peers read, from the stream file's segments: a YAML list of {wav, offset,
    duration} in seconds and the first references, one line per segment, talks in file order."""
    entries: list[dict[str, Any]] = []
    refs: list[str] = []
    for stream in read_streams(streams_path):
        for seg in stream.segments:
            assert seg.offset_ms is not None and seg.duration_ms is not None
            entries.append(
                {
                    "wav": f"{stream.id}.wav",
                    "offset": seg.offset_ms / 1000,
                    "duration": seg.duration_ms / 1000,
                }
            )
            refs.append(seg.references[0])
    folder.mkdir(parents=True, exist_ok=True)
    segmentation = folder / "segmentation.yaml"
    references = folder / "references.txt"
    segmentation.write_text(yaml.safe_dump(entries, allow_unicode=True), encoding="utf-8")
    references.write_text("".join(r + "\n" for r in refs), encoding="utf-8")
    return segmentation, references


def _omnisteval_longform(streams_path: Path, hypotheses: Path, tgt: str, folder: Path) -> dict[str, float]:
    """`omnisteval longform` on ``hypotheses`` (OmniSTEval's JSONL): its scores.tsv as {name: value}."""
    segmentation, references = _segmentation(streams_path, folder)
    out = folder / "omnisteval-out"
    zh = tgt == "zh"
    cmd = [
        sys.executable, "-m", "omnisteval.cli", "longform",
        "--speech_segmentation", str(segmentation), "--ref_sentences_file", str(references),
        "--hypothesis_file", str(hypotheses), "--hypothesis_format", "jsonl",
        "--char_level" if zh else "--word_level", "--bleu_tokenizer", "zh" if zh else "13a",
        "--output_folder", str(out),
    ]  # fmt: skip
    if not zh:
        cmd += ["--lang", tgt]  # Moses tokenization before alignment, as OmniSTEval's README does
    _run(cmd)
    rows = (out / "scores.tsv").read_text(encoding="utf-8").splitlines()[1:]
    return {name: float(value) for name, value in (row.split("\t") for row in rows)}


def _metrics(run_dir: Path) -> dict[str, Any]:
    run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    assert run["status"] == "complete" and len(run["methods"]) == 1
    return dict(run["methods"][0]["metrics"])


def _assert_as_omnisteval(ours: dict[str, Any], theirs: dict[str, float], with_ca: bool) -> None:
    assert ours["bleu"] == pytest.approx(theirs["BLEU"], abs=0.01), (ours["bleu"], theirs["BLEU"])
    assert ours["chrf"] == pytest.approx(theirs["chrF"], abs=0.01), (ours["chrf"], theirs["chrF"])
    compared = []
    for key, name in OMNI_NAMES.items():
        if name not in theirs:
            continue
        mine = ours[key]
        assert mine is not None and math.isclose(mine, theirs[name], abs_tol=1.0), (key, mine, theirs[name])
        compared.append(key)
    # LongYAAL and LongLAAL at least (OmniSTEval prints them always), CA when the file has elapsed times
    assert {"long_yaal", "long_laal"} <= set(compared)
    assert ({"ca_long_yaal", "ca_long_laal"} <= set(compared)) == with_ca


def _zh_files(folder: Path, delays: list[int]) -> tuple[Path, Path]:
    """(stream file with ZH_TALK, OmniSTEval JSONL of ZH_OUTPUT with ``delays``; elapsed = delay + 350 ms)."""
    folder.mkdir(parents=True, exist_ok=True)
    streams = folder / "zh_talks.jsonl"
    write_streams(streams, [ZH_TALK])
    assert len(delays) == len(ZH_OUTPUT)
    line = {
        "source": "zh1.wav",
        "prediction": ZH_OUTPUT,
        "delays": delays,
        "elapsed": [d + 350 for d in delays],
        "source_length": 7000,
    }
    hypotheses = folder / "zh_hypotheses.jsonl"
    hypotheses.write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    return streams, hypotheses


# -- 1. OmniSTEval's long-form JSONL -----------------------------------------------------------------------


def test_ingested_omnisteval_jsonl_scores_as_omnisteval_longform(tmp_path: Path) -> None:
    _need("omnisteval", "pip install omnisteval==0.1.10")
    ours = _metrics(ingest("omnisteval", OMNI_JSONL, TALKS, tmp_path / "run"))
    theirs = _omnisteval_longform(TALKS, OMNI_JSONL, "de", tmp_path / "peer")
    _assert_as_omnisteval(ours, theirs, with_ca=True)
    assert all(ours[key] is not None for key in CU + CA)


def test_ingested_chinese_omnisteval_jsonl_scores_as_omnisteval_longform(tmp_path: Path) -> None:
    _need("omnisteval", "pip install omnisteval==0.1.10")
    streams, hypotheses = _zh_files(tmp_path, ZH_DELAYS)
    run = ingest("omnisteval", hypotheses, streams, tmp_path / "run")
    ours = _metrics(run)
    theirs = _omnisteval_longform(streams, hypotheses, "zh", tmp_path / "peer")
    _assert_as_omnisteval(ours, theirs, with_ca=True)
    last = (run / "steps.jsonl").read_text(encoding="utf-8").splitlines()[-1]
    assert json.loads(last)["display"] == ZH_OUTPUT  # the spaces inside the Chinese output are kept


def test_a_space_emitted_before_the_next_character_keeps_its_delay(tmp_path: Path) -> None:
    """OmniSTEval counts every character of the prediction, spaces included, each with its own delay. Here
    each space is emitted with the characters before it (one update shows "...我们用 " at 3000 ms)."""
    _need("omnisteval", "pip install omnisteval==0.1.10")
    delays = [1000] * 2 + [2000] * 2 + [3000] * 4 + [4000] * 3 + [5000] * 3 + [6500] * 3  # "我们用 ", "AI "
    streams, hypotheses = _zh_files(tmp_path, delays)
    ours = _metrics(ingest("omnisteval", hypotheses, streams, tmp_path / "run"))
    theirs = _omnisteval_longform(streams, hypotheses, "zh", tmp_path / "peer")
    _assert_as_omnisteval(ours, theirs, with_ca=True)


# -- 2. simulstream's metrics log, StreamLAAL ---------------------------------------------------------------


def _stream_laal(streams_path: Path, log: Path, unit: str, folder: Path) -> tuple[float, float]:
    """simulstream's StreamLAAL (ideal, computation-aware) on ``log``, converted from seconds to ms."""
    segmentation, references = _segmentation(streams_path, folder)
    config = folder / "eval.yaml"
    config.write_text(f"detokenizer_type: simuleval\nlatency_unit: {unit}\n", encoding="utf-8")
    cmd = [
        sys.executable, "-m", "simulstream.metrics.score_latency",
        "--eval-config", str(config), "--log-file", str(log), "--audio-definition", str(segmentation),
        "--reference", str(references), "--latency-unit", unit, "--scorer", "stream_laal",
    ]  # fmt: skip
    done = _run(cmd)
    found = re.search(r"ideal_latency=([-\d.e]+), computational_aware_latency=([-\d.e]+)", done.stdout)
    assert found, done.stdout
    return float(found.group(1)) * 1000.0, float(found.group(2)) * 1000.0


def _rescored_with_mwer(run_dir: Path) -> dict[str, Any]:
    result = runner.invoke(
        app, ["score", str(run_dir), "--resegment", "mwer", "--comet-model", "none", "--json", "--quiet"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["signatures"]["longform_resegmentation"].startswith("reseg:mwer|mweralign:")
    return dict(report["methods"][0]["metrics"])


def _need_simulstream() -> None:
    _need("simulstream", "pip install simulstream==1.0.0")
    _need("mweralign", "pip install mweralign")


def _assert_stream_laal(ours: dict[str, Any], ideal_ms: float, aware_ms: float) -> None:
    assert ours["long_laal"] is not None and ours["ca_long_laal"] is not None
    assert math.isclose(ours["long_laal"], ideal_ms, abs_tol=1.0), (ours["long_laal"], ideal_ms)
    assert math.isclose(ours["ca_long_laal"], aware_ms, abs_tol=1.0), (ours["ca_long_laal"], aware_ms)


def test_ingested_simulstream_log_long_laal_is_simulstreams_stream_laal(tmp_path: Path) -> None:
    _need_simulstream()
    run = ingest("simulstream", SIMULSTREAM_LOG, TALKS, tmp_path / "run")
    ideal, aware = _stream_laal(TALKS, SIMULSTREAM_LOG, "word", tmp_path / "peer")
    _assert_stream_laal(_rescored_with_mwer(run), ideal, aware)


def _log(lines: list[tuple[float, float, list[str], list[str]]], wav: str) -> str:
    """A simulstream metrics log of one client: (audio seconds, computation seconds, generated, deleted)."""
    out = [json.dumps({"model_loading_time": 1.0}), json.dumps({"id": 0, "metadata": {"wav_name": wav}})]
    for audio, compute, generated, deleted in lines:
        entry = {
            "id": 0,
            "total_audio_processed": audio,
            "computation_time": compute,
            "generated_tokens": generated,
            "deleted_tokens": deleted,
        }
        out.append(json.dumps(entry, ensure_ascii=False))
    return "\n".join(out) + "\n"


def test_ingested_chinese_simulstream_log_with_a_revision_is_stream_laal(tmp_path: Path) -> None:
    _need_simulstream()
    streams = tmp_path / "zh_talks.jsonl"
    write_streams(streams, [ZH_TALK])
    log = tmp_path / "log.jsonl"
    # character tokens: simulstream's simuleval detokenizer (latency_unit char) joins them as they are
    log.write_text(
        _log(
            [
                (1.0, 0.2, list("大家"), []),
                (2.0, 0.2, list("好。"), []),
                (3.0, 0.3, list("我们用"), []),
                (4.0, 0.3, list(" AI"), []),
                (5.0, 0.4, list(" 翻泽"), []),
                (5.5, 0.2, list("译。"), ["泽"]),  # a revision: the wrong character is taken back
                (6.5, 0.2, list("谢谢。"), []),
            ],
            "audio/zh1.wav",
        ),
        encoding="utf-8",
    )
    run = ingest("simulstream", log, streams, tmp_path / "run", "--unit", "char")
    last = (run / "steps.jsonl").read_text(encoding="utf-8").splitlines()[-1]
    assert json.loads(last)["display"] == ZH_OUTPUT
    ideal, aware = _stream_laal(streams, log, "char", tmp_path / "peer")
    _assert_stream_laal(_rescored_with_mwer(run), ideal, aware)


def test_computation_aware_stream_laal_when_an_update_outlasts_the_next_audio(tmp_path: Path) -> None:
    """simulstream's computation-aware delay of an update is total_audio_processed + computation_time
    (``LogReader.final_outputs_and_latencies``). Here the first update of talk1 computes for 1.5 s, past the
    next update's audio time (1.9 s)."""
    _need_simulstream()
    lines = SIMULSTREAM_LOG.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[2])
    assert first["id"] == 0 and first["total_audio_processed"] == 0.8
    first["computation_time"] = 1.5
    lines[2] = json.dumps(first, ensure_ascii=False)
    log = tmp_path / "slow.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = ingest("simulstream", log, TALKS, tmp_path / "run")
    ideal, aware = _stream_laal(TALKS, log, "word", tmp_path / "peer")
    _assert_stream_laal(_rescored_with_mwer(run), ideal, aware)


# -- 3. SimulStreaming's output: no computation time --------------------------------------------------------


def test_ingested_simulstreaming_has_cu_figures_and_no_ca_figures(tmp_path: Path) -> None:
    run = ingest("simulstreaming", SIMULSTREAMING, TALKS, tmp_path / "run")
    ours = _metrics(run)
    assert all(ours[key] is not None for key in CU), ours
    assert all(ours[key] is None for key in CA), ours  # not available, never 0
    rescored = runner.invoke(app, ["score", str(run), "--comet-model", "none", "--json", "--quiet"])
    assert rescored.exit_code == 0, rescored.output
    again = json.loads(rescored.stdout)["methods"][0]["metrics"]
    assert [again[k] for k in CU + CA] == [ours[k] for k in CU + CA]
    table = runner.invoke(
        app, ["score", str(run), "--comet-model", "none", "-m", "long_yaal", "-m", "ca_long_yaal"]
    )
    assert table.exit_code == 0, table.output
    row = next(line for line in table.output.splitlines() if "EXT(simulstreaming)" in line)
    cells = [c.strip() for c in re.split(r"[│|]", row) if c.strip()]
    assert cells[-2] == f"{ours['long_yaal']:.4g}" and cells[-1] == "-", row


def test_ingested_simulstreaming_cu_figures_are_omnistevals_on_the_implied_delays(tmp_path: Path) -> None:
    _need("omnisteval", "pip install omnisteval==0.1.10")
    ours = _metrics(ingest("simulstreaming", SIMULSTREAMING, TALKS, tmp_path / "run"))
    # the CU figures are OmniSTEval's on the delays SimulStreaming's lines imply: each word counts from the
    # update from which it is shown unchanged to the end (talk1: "ich" shown at 1.9 s after "Heute", moved
    # behind "spreche" at 2.6 s; "alle." at 0.8 s replaced by "zusammen." at 1.9 s)
    implied = [
        {
            "source": "talk1.wav",
            "prediction": "Hallo zusammen. Heute spreche ich über Streams. Sie sind lang.",
            "delays": [800, 1900, 1900, 2600, 2600, 3700, 3700, 5200, 5200, 5200],
            "source_length": 5600,
        },
        {
            "source": "talk2.wav",
            "prediction": "Vielen Dank. Auf Wiedersehen.",
            "delays": [1500, 1500, 2600, 2600],
            "source_length": 2800,
        },
    ]
    hypotheses = tmp_path / "implied.jsonl"
    hypotheses.write_text(
        "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in implied), encoding="utf-8"
    )
    theirs = _omnisteval_longform(TALKS, hypotheses, "de", tmp_path / "peer")
    _assert_as_omnisteval(ours, theirs, with_ca=False)


# -- 4. simul diff of a simul run and an ingested run -------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a tiny-model RT run over talks.jsonl, the OmniSTEval JSONL ingested over the same talks)"""
    root = tmp_path_factory.mktemp("diff")
    mine = root / "mine"
    args = ("--method", "rt", "--no-baseline", "--n-ctx", "1024", "--out", str(mine))
    done = runner.invoke(app, eval_args(tiny_model, TALKS, *args))
    assert done.exit_code == 0, done.output
    keys = [m["key"] for m in json.loads((mine / "run.json").read_text(encoding="utf-8"))["methods"]]
    assert keys == ["rt"]
    return mine, ingest("omnisteval", OMNI_JSONL, TALKS, root / "theirs")


def _diff(mine: Path, theirs: Path, *extra: str) -> Any:
    return runner.invoke(
        app, ["diff", str(mine), str(theirs), "--pair", "rt=ext-omnisteval", "--bootstrap", "0", *extra]
    )


def test_diff_pairs_a_simul_long_form_run_with_an_ingested_one(runs: tuple[Path, Path]) -> None:
    mine, theirs = runs
    result = _diff(mine, theirs)
    assert result.exit_code == 0, result.output
    assert "RT -> EXT(omnisteval)" in result.output
    for title in ("chrF", "BLEU", "LongYAAL", "LongLAAL CA"):
        assert re.search(rf"│ {re.escape(title)}\s+│", result.output), (title, result.output)
    report = _diff(mine, theirs, "--json")
    assert report.exit_code == 0, report.output
    rows = {r["name"]: r for r in json.loads(report.stdout)["methods"][0]["metrics"]}
    ingested = _metrics(theirs)
    for name in ("chrf", "bleu", *CU, *CA):
        assert rows[name]["new"] == ingested[name], name
    assert rows["chrf"]["verdict"] == "better"  # the reference-like system beats the random tiny model


def test_diff_of_the_same_talks_needs_no_force(runs: tuple[Path, Path]) -> None:
    mine, theirs = runs
    result = _diff(mine, theirs)
    assert result.exit_code == 0, result.output

"""Long-form scoring (simul.metrics.longform): delays, OmniSTEval's files, latency, and agreement with the
field's own scorers (OmniSTEval 0.1.10 ``omnisteval longform``; simulstream 1.0.0
``simulstream_score_latency --scorer stream_laal``) on hand-written talks (tests/data/longform/talks.json).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from simul.common.errors import SimulError
from simul.decoding.records import StepRecord
from simul.metrics.longform.delays import TalkUpdate, final_units, talk_from_records
from simul.metrics.longform.latency import long_laal, long_yaal, regime
from simul.metrics.longform.omnisteval_files import (
    HYPOTHESES,
    REFERENCES,
    SEGMENTATION,
    read_omnisteval_inputs,
    write_omnisteval_inputs,
)
from simul.metrics.longform.resegment import resegment_talks
from simul.metrics.longform.scoring import score_talks
from simul.metrics.longform.talk import LongformTalk, TalkSegment, text_segments
from simul.streams.format import Segment, Step, Stream

FIXTURE = Path(__file__).parent / "data" / "longform" / "talks.json"


def _fixture() -> dict[str, dict[str, Any]]:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return {t["id"]: t for t in data["talks"]}


def _talk(raw: dict[str, Any]) -> LongformTalk:
    updates = [TalkUpdate(u["text"], u["emitted"], u.get("elapsed")) for u in raw["updates"]]
    units = final_units(updates, raw["tgt"])
    timed = raw["segments"][0]["offset_ms"] is not None
    if timed:
        segments = tuple(
            TalkSegment(tuple(s["references"]), s["source"], s["offset_ms"], s["duration_ms"])
            for s in raw["segments"]
        )
    else:
        segments = text_segments(
            [tuple(s["references"]) for s in raw["segments"]],
            [s["source"] for s in raw["segments"]],
            raw["src"],
        )
    return LongformTalk(
        id=raw["id"],
        src=raw["src"],
        tgt=raw["tgt"],
        words=units.words,
        delays=units.delays,
        elapsed=units.elapsed,
        segments=segments,
        duration=raw["duration_ms"] if timed else segments[-1].end,
        timed=timed,
    )


@pytest.fixture(scope="module")
def talks() -> dict[str, LongformTalk]:
    return {name: _talk(raw) for name, raw in _fixture().items()}


# -- delays ------------------------------------------------------------------------------------------------


def test_a_word_counts_from_when_its_final_form_appeared(talks: dict[str, LongformTalk]) -> None:
    talk = talks["talk-a"]
    delays = dict(zip(talk.words, talk.delays, strict=True))
    assert talk.words[:3] == ("Guten", "Morgen,", "meine")
    assert delays["Guten"] == 1000 and delays["Morgen,"] == 2000 and delays["Herren."] == 3600
    assert delays["Heute"] == 4500  # unchanged when "rede" was revised
    assert delays["spreche"] == 5500  # "rede" at 4500 was taken back
    assert delays["denken."] == 12000
    assert talk.elapsed is not None and talk.elapsed[talk.words.index("spreche")] == 5950
    assert list(talk.delays) == sorted(talk.delays)


def test_characters_for_chinese(talks: dict[str, LongformTalk]) -> None:
    talk = talks["talk-c"]
    assert talk.unit == "char" and talk.prediction == "大家好。今天我们谈谈翻译。谢谢大家。"
    got = dict(zip(range(len(talk.words)), talk.delays, strict=True))
    assert got[0] == 1000 and got[2] == 2000  # 大 家 at 1000, 好 at 2000
    assert got[8] == 5600  # 谈 replaced 讨 at 5600
    assert got[6] == 3800  # 我 unchanged since 3800


def test_a_retracted_then_restored_word_counts_from_its_return() -> None:
    updates = [TalkUpdate("a b", 1), TalkUpdate("a", 2), TalkUpdate("a b c", 3)]
    assert final_units(updates, "de").delays == (1.0, 3.0, 3.0)


def _records(raw: dict[str, Any], timed: bool) -> list[StepRecord]:
    out = []
    for i, u in enumerate(raw["updates"]):
        talk = {
            "source_words": u["emitted"] if not timed else i + 1,
            "emitted_ms": u["emitted"] if timed else None,
            "elapsed_ms": u.get("elapsed", 0.0) if timed else 5.0 * (i + 1),
        }
        last = i == len(raw["updates"]) - 1
        out.append(
            StepRecord(
                step=i, source="x", final=last, time_ms=u["emitted"] if timed else None, prompt_tokens=0,
                reused_tokens=0, processed_tokens=0, draft_tokens=0, accepted=0, output_ids=[],
                output=u["text"], display=u["text"], accepted_chars=0, stop="eog", t_prompt=0.0, t_gen=0.0,
                talk=talk,
            )
        )  # fmt: skip
    return out


def test_talk_from_a_runs_records(talks: dict[str, LongformTalk]) -> None:
    raw = _fixture()["talk-b"]
    segments = tuple(
        Segment(tuple(s["references"]), s["source"], s["offset_ms"], s["duration_ms"])
        for s in raw["segments"]
    )
    stream = Stream.talk("talk-b", "en", "de", (Step("x", True, 0.0),), segments, duration_ms=8000.0)
    talk = talk_from_records(stream, _records(raw, timed=True))
    assert talk == talks["talk-b"]

    raw = _fixture()["doc-d"]
    segments = tuple(Segment(tuple(s["references"]), s["source"]) for s in raw["segments"])
    doc = Stream.talk("doc-d", "en", "de", (Step("x", True),), segments)
    records = _records(raw, timed=False)
    talk = talk_from_records(doc, records)
    # untimed: positions are source words read (talk.source_words), segments placed by their word counts
    assert not talk.timed and talk.elapsed is None
    assert [(s.offset, s.duration) for s in talk.segments] == [(0.0, 4.0), (4.0, 5.0)]
    assert talk.delays == (2.0, 2.0, 4.0, 4.0, 7.0, 9.0, 9.0, 9.0)

    records[1] = StepRecord(**{**vars(records[1]), "talk": None})
    with pytest.raises(SimulError, match="step 1: the record has no 'talk' facts"):
        talk_from_records(doc, records)


# -- OmniSTEval's files -----------------------------------------------------------------------------------


def test_the_files_read_back_into_the_same_talks(talks: dict[str, LongformTalk], tmp_path: Path) -> None:
    chosen = [talks["talk-a"], talks["talk-b"]]
    files = write_omnisteval_inputs(chosen, tmp_path)
    assert read_omnisteval_inputs(tmp_path) == chosen
    lines = (tmp_path / HYPOTHESES).read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    assert first["source"] == "talk-a.wav" and first["source_length"] == 12500
    assert len(first["delays"]) == len(first["prediction"].split()) == len(first["elapsed"])
    assert (tmp_path / REFERENCES).read_text(encoding="utf-8").count("\n") == 6
    assert "--word_level" in files.command and files.command[files.command.index("--lang") + 1] == "de"
    assert (tmp_path / "command.txt").read_text(encoding="utf-8").startswith("omnisteval longform")


def test_a_bad_hypothesis_line_names_file_and_line(talks: dict[str, LongformTalk], tmp_path: Path) -> None:
    write_omnisteval_inputs([talks["talk-a"], talks["talk-b"]], tmp_path)
    path = tmp_path / HYPOTHESES
    lines = path.read_text(encoding="utf-8").splitlines()
    obj = json.loads(lines[1])
    obj["delays"] = obj["delays"][:-1]
    path.write_text(lines[0] + "\n" + json.dumps(obj) + "\n", encoding="utf-8")
    with pytest.raises(SimulError, match=rf"{re.escape(str(path))}:2: 9 delays for 10 words"):
        read_omnisteval_inputs(tmp_path)
    path.write_text(lines[0] + "\n{not json\n", encoding="utf-8")
    with pytest.raises(SimulError, match=rf"{re.escape(str(path))}:2: not JSON"):
        read_omnisteval_inputs(tmp_path)


def test_refused_inputs_write_nothing(talks: dict[str, LongformTalk], tmp_path: Path) -> None:
    with pytest.raises(SimulError, match="one folder per target language"):
        write_omnisteval_inputs([talks["talk-a"], talks["talk-c"]], tmp_path / "out")
    assert not (tmp_path / "out").exists()
    bad = LongformTalk(**{**vars(talks["talk-b"]), "segments": (TalkSegment(("two\nlines",)),)})
    with pytest.raises(SimulError, match="line break"):
        write_omnisteval_inputs([bad], tmp_path / "out")
    assert not (tmp_path / "out").exists()


# -- latency and scores -----------------------------------------------------------------------------------


def test_latency_formulas_by_hand() -> None:
    # |X| = 1000, |Y*| = 4, delays 200, 600, 1500 (the last after the segment, before the recording end)
    assert long_laal([200, 600, 1500], 1000, 4) == pytest.approx((200 + (600 - 250) + (1500 - 500)) / 3)
    assert long_yaal([200, 600, 1500], 1000, 4, to_end=5000) == pytest.approx(
        long_laal([200, 600, 1500], 1000, 4)
    )
    assert long_yaal([200, 600, 1500], 1000, 4, to_end=1200) == pytest.approx((200 + 350) / 2)
    assert long_yaal([1300], 1000, 4, to_end=1200) is None
    assert long_laal([1300], 1000, 4) == 1300


def test_regimes() -> None:
    assert [regime(v, True) for v in (-10.0, 1999.0, 2000.0, 3999.0, 4000.5)] == [
        "low",
        "low",
        "low",
        "high",
        "over",
    ]
    assert regime(1000.0, False) == "n/a" and regime(None, True) == "n/a"


def test_scores_are_json_and_skip_the_empty_segment(talks: dict[str, LongformTalk]) -> None:
    scores = score_talks([talks["talk-a"], talks["talk-b"]], "de")
    out = json.loads(json.dumps(scores.to_json()))
    assert out["segments"] == 6 and out["empty_segments"] == 1 and out["latency_unit"] == "ms"
    applause = out["per_segment"][2]
    assert applause["hypothesis"] == "" and applause["units"] == 0
    assert all(v is None for v in applause["latency"].values())
    assert out["signatures"]["resegmentation"].startswith("reseg:softsegmenter|omnisteval:0.1.10")
    assert out["regime"] == "low" and 0 < out["latency"]["long_yaal"] < out["latency"]["ca_long_yaal"]


def test_every_reference_counts_for_bleu(talks: dict[str, LongformTalk]) -> None:
    talk = talks["talk-b"]
    one = score_talks([talk])
    second = ("Das ist ein kurzer Vortrag.", "Vielen Dank für das Zuhören.")
    two_refs = tuple(
        TalkSegment((seg.references[0], extra), seg.source, seg.offset, seg.duration)
        for seg, extra in zip(talk.segments, second, strict=True)
    )
    two = score_talks([LongformTalk(**{**vars(talk), "segments": two_refs})])
    assert two.bleu > one.bleu and two.signatures["bleu"].startswith("nrefs:2")
    assert two.latency == one.latency  # latency uses the first reference only


def test_mwer_without_mweralign_says_what_to_install(
    talks: dict[str, LongformTalk], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mweralign", None)
    with pytest.raises(SimulError, match="pip install mweralign"):
        resegment_talks([talks["talk-b"]], "mwer")


# -- agreement with OmniSTEval ----------------------------------------------------------------------------

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


def _omnisteval(folder: Path, command: tuple[str, ...]) -> tuple[dict[str, float], list[dict[str, Any]]]:
    out = folder / "omnisteval"
    cmd = [sys.executable, "-m", "omnisteval.cli", *command[1:], "--output_folder", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = (out / "scores.tsv").read_text(encoding="utf-8").splitlines()[1:]
    scores = {name: float(value) for name, value in (row.split("\t") for row in rows)}
    lines = (out / "instances.resegmented.jsonl").read_text(encoding="utf-8").splitlines()
    return scores, [json.loads(line) for line in lines]


@pytest.mark.parametrize("group", [("talk-a", "talk-b"), ("talk-c",), ("doc-d",)], ids=["de", "zh", "text"])
def test_agrees_with_omnisteval_longform(
    group: tuple[str, ...], talks: dict[str, LongformTalk], tmp_path: Path
) -> None:
    pytest.importorskip("omnisteval", reason="OmniSTEval is not installed (pip install omnisteval==0.1.10)")
    chosen = [talks[name] for name in group]
    files = write_omnisteval_inputs(chosen, tmp_path)
    theirs, instances = _omnisteval(tmp_path, files.command)
    ours = score_talks(chosen)
    assert ours.bleu == pytest.approx(theirs["BLEU"], abs=0.01)
    assert ours.chrf == pytest.approx(theirs["chrF"], abs=0.01)
    assert [s.hypothesis for s in ours.per_segment] == [i["prediction"] for i in instances]
    for key, name in OMNI_NAMES.items():
        mine = ours.latency[key]
        if name not in theirs:  # untimed documents: no CA times
            assert mine is None and key.startswith("ca_"), key
            continue
        # 1 ms for talks; documents are in source words, where OmniSTEval's 4 decimals are the limit
        tolerance = 1.0 if chosen[0].timed else 1e-3
        assert mine is not None and math.isclose(mine, theirs[name], abs_tol=tolerance), (
            key,
            mine,
            theirs[name],
        )


# -- agreement with simulstream's StreamLAAL ----------------------------------------------------------------


def _simulstream_log(chosen: list[LongformTalk], raw: dict[str, dict[str, Any]], folder: Path) -> None:
    """A simulstream 1.0.0 metrics log of the talks' updates (tokens = units, simuleval detokenizer)."""
    lines: list[str] = []
    for number, talk in enumerate(chosen):
        lines.append(json.dumps({"id": number, "metadata": {"wav_name": f"{talk.id}.wav"}}))
        previous: list[str] = []
        for u in raw[talk.id]["updates"]:
            current = list(u["text"]) if talk.unit == "char" else u["text"].split()
            keep = 0
            while keep < min(len(previous), len(current)) and previous[keep] == current[keep]:
                keep += 1
            entry = {
                "id": number,
                "total_audio_processed": u["emitted"] / 1000.0,
                "computation_time": (u["elapsed"] - u["emitted"]) / 1000.0,
                "generated_tokens": current[keep:],
                "deleted_tokens": previous[keep:],
            }
            lines.append(json.dumps(entry, ensure_ascii=False))
            previous = current
    (folder / "log.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    unit = chosen[0].unit
    (folder / "eval.yaml").write_text(
        f"detokenizer_type: simuleval\nlatency_unit: {unit}\n", encoding="utf-8"
    )


@pytest.mark.parametrize("group", [("talk-a", "talk-b"), ("talk-c",)], ids=["de", "zh"])
def test_long_laal_with_mwer_is_simulstreams_stream_laal(
    group: tuple[str, ...], talks: dict[str, LongformTalk], tmp_path: Path
) -> None:
    pytest.importorskip("simulstream", reason="simulstream is not installed (pip install simulstream==1.0.0)")
    pytest.importorskip("mweralign", reason="mweralign is not installed (pip install mweralign)")
    chosen = [talks[name] for name in group]
    write_omnisteval_inputs(chosen, tmp_path)  # segmentation.yaml and references.txt, which simulstream reads
    _simulstream_log(chosen, _fixture(), tmp_path)
    cmd = [
        sys.executable, "-m", "simulstream.metrics.score_latency",
        "--eval-config", str(tmp_path / "eval.yaml"), "--log-file", str(tmp_path / "log.jsonl"),
        "--audio-definition", str(tmp_path / SEGMENTATION), "--reference", str(tmp_path / REFERENCES),
        "--latency-unit", chosen[0].unit, "--scorer", "stream_laal",
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r"ideal_latency=([-\d.e]+), computational_aware_latency=([-\d.e]+)", done.stdout)
    assert found, done.stdout
    ours = score_talks(chosen, resegment="mwer")
    assert ours.signatures["resegmentation"].startswith("reseg:mwer|mweralign:")
    assert ours.latency["long_laal"] == pytest.approx(float(found.group(1)) * 1000, abs=1.0)
    assert ours.latency["ca_long_laal"] == pytest.approx(float(found.group(2)) * 1000, abs=1.0)


def test_mwer_keeps_spaces_inside_chinese_output() -> None:
    pytest.importorskip("mweralign", reason="mweralign is not installed (pip install mweralign)")
    text = "大家好 AI。谢谢大家。"
    talk = LongformTalk(
        id="x",
        src="en",
        tgt="zh",
        words=tuple(text),
        delays=tuple(float(i) for i in range(len(text))),
        elapsed=None,
        segments=(TalkSegment(("大家好AI。",), "", 0, 5), TalkSegment(("谢谢大家。",), "", 5, 5)),
    )
    ((first, second),) = resegment_talks([talk], "mwer").talks
    assert first.hypothesis == "大家好 AI。" and first.delays == (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    assert second.hypothesis == "谢谢大家。" and second.delays[0] == 7.0

"""Display policies: display-only mask-k and LocalAgreement-n (functions, methods, the decoder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import UsageError
from simul.decoding.backend import LlamaBackend
from simul.decoding.display.local_agreement import local_agreement
from simul.decoding.display.mask import hide_last
from simul.decoding.stream import StreamDecoder
from simul.reports.sweep_tables import table4_rows
from simul.request.methods import Method
from simul.request.sweep import sweep_methods
from simul.request.templates import PRESETS
from simul.streams.format import write_streams
from tests.helpers import eval_args, make_streams

runner = CliRunner()


def test_mask_hides_the_last_k_tokens() -> None:
    assert hide_last([1, 2, 3, 4], 3) == [1]
    assert hide_last([1, 2], 3) == []
    assert hide_last([1, 2], 0) == [1, 2]


def test_local_agreement_in_words_and_characters() -> None:
    outputs = ["Die Katze sitzt", "Die Katze saß auf", "Die Katze saß auf der"]
    assert local_agreement(outputs, 2, unspaced=False) == "Die Katze saß auf"
    assert local_agreement(outputs, 3, unspaced=False) == "Die Katze"
    # a word agreed only in part is not shown
    assert local_agreement(["Die Katzen", "Die Katze"], 2, unspaced=False) == "Die"
    assert local_agreement(["猫が座っ", "猫が座る"], 2, unspaced=True) == "猫が座"
    assert local_agreement(["Die"], 2, unspaced=False) == ""  # fewer than n outputs: nothing yet
    assert local_agreement(["Die Katze"], 1, unspaced=False) == "Die Katze"
    with pytest.raises(ValueError):
        local_agreement(["x"], 0, unspaced=False)


def test_methods_record_the_display_policy() -> None:
    la = Method("ssbd", beta=0.2, display="local-agreement", agreement=3)
    assert la.key == "ssbd-b0.2-la3" and la.label == "SSBD(b=0.2)+LA3"
    assert Method.from_json(la.to_json()) == la
    plain = Method("ssbd", beta=0.2)
    assert "display" not in plain.to_json() and Method.from_json(plain.to_json()) == plain
    assert Method("ssbd", beta=0.2, mask_k=3, mask="output", display="local-agreement").key == (
        "ssbd-b0.2-output3-la2"
    )
    with pytest.raises(UsageError, match="replaces display-only mask-k"):
        Method("ssbd", beta=0.2, mask_k=3, display="local-agreement")
    with pytest.raises(UsageError, match="the display must be mask or local-agreement"):
        Method("ssbd", beta=0.2, display="bogus")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="--local-agreement must be 1 or more"):
        Method("ssbd", beta=0.2, display="local-agreement", agreement=0)


def test_sweep_adds_local_agreement_rows() -> None:
    methods = sweep_methods([0.2], [0, 3], ["display"], cd=False, mask_beta=0.2, agreements=[2])
    keys = [m.key for m in methods]
    assert keys == ["rt", "ssbd-b0.2", "ssbd-b0.2-display3", "ssbd-b0.2-la2"]
    rows = [{**m.to_json(), "key": m.key} for m in methods]
    labels = [r["label"] for r in table4_rows(rows, 0.2)]
    assert labels == ["-", "+display-only mask-k 3", "+LocalAgreement-2"]


def test_local_agreement_changes_only_the_display(tiny_backend: LlamaBackend) -> None:
    stream = make_streams()[0]
    plain = StreamDecoder(tiny_backend, PRESETS["fewshot"], Method("ssbd", beta=0.2)).decode(stream)
    la = StreamDecoder(
        tiny_backend, PRESETS["fewshot"], Method("ssbd", beta=0.2, display="local-agreement")
    ).decode(stream)
    assert [s.output_ids for s in la.steps] == [s.output_ids for s in plain.steps]
    outputs = [s.output for s in la.steps]
    for t, step in enumerate(la.steps):
        if step.final:
            assert step.display == step.output
        else:
            assert step.display == local_agreement(outputs[: t + 1], 2, unspaced=False)
    assert la.steps[0].display == ""


def test_eval_accepts_the_display_policy(tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams()[:1])
    result = runner.invoke(app, eval_args(tiny_model, streams, "--local-agreement", "3", "--json"))
    assert result.exit_code == 0, result.output
    keys = [m["key"] for m in json.loads(result.stdout)["methods"]]
    assert keys == ["rt", "ssbd-b0.2-la3"]
    bad = runner.invoke(app, eval_args(tiny_model, streams, "--local-agreement", "2", "--mask-k", "3"))
    assert bad.exit_code == 2 and "--local-agreement replaces display-only mask-k" in bad.output

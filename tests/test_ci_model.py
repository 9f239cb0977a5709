"""The tiny model's wide logit margins (simul.testing.code_machine), and the CI baseline that relies on them.

`make ci-regression` diffs a fresh run of the tiny model against `.ci/baseline-tiny`; that holds on any CPU
family and thread count only because no choice of the model sits near a tie. These tests check the design
(margins, the attention offset), that llama.cpp decodes what the design says, and that the committed baseline
is what the model decodes today, on 1 and 2 threads.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from simul.cli import app
from simul.common.hashing import sha256_file
from simul.decoding import trace
from simul.decoding.backend import LlamaBackend
from simul.testing.code_machine import OFFSET, ROPE_GAP, rope_gap, rule_slack, smallest_margin
from simul.testing.tiny_gguf import code_machine
from tests.helpers import eval_args

REPO = Path(__file__).resolve().parent.parent
BASELINE = REPO / ".ci" / "baseline-tiny"
CI_STREAMS = REPO / "fixtures" / "streams" / "flores200-devtest-en-de-lag3.jsonl"  # the Makefile's CI_STREAMS
runner = CliRunner()


def test_every_choice_of_the_design_has_a_wide_margin() -> None:
    machine = code_machine(0)
    assert smallest_margin(machine) > 1.0  # logits; llama.cpp's kernels move them by about 1e-3
    assert rule_slack(machine) >= 0.03  # SSBD's biased rule at beta 0.2, in probability
    assert rope_gap(OFFSET, positions=4096) >= ROPE_GAP  # the attention is one-hot to within e^-16


def test_llama_cpp_decodes_what_the_design_says(tiny_backend: LlamaBackend) -> None:
    """Greedy decoding through llama.cpp (batched prompt, then one token a pass) picks exactly the token the
    design's formula picks from the current token and the one OFFSET back, at every position."""
    machine = code_machine(0)
    tiny_backend.reset()
    checked = 0
    for text in (
        "English: The cat sat on the mat and looked out of the window.\nGerman:",
        "Hello world, this is a test of the system. " * 3,
    ):
        tokens = tiny_backend.tokenize(text, add_special=True)
        tiny_backend.reset()
        rows = tiny_backend.eval(tokens, logits_from=0)
        assert rows is not None
        for position in range(OFFSET, len(tokens)):  # the prompt's own rows, computed in one batch
            assert int(np.argmax(rows[position])) == machine.next_token(tokens[: position + 1])
            checked += 1
        for _ in range(40):
            token = int(np.argmax(rows[-1]))
            assert token == machine.next_token(tokens)
            tokens.append(token)
            rows = tiny_backend.eval([token], logits_from=0)
            assert rows is not None
            checked += 1
    assert checked > 100


def test_the_ci_baseline_holds_on_one_and_two_threads(tiny_model: Path, tmp_path: Path) -> None:
    """`make ci-regression`'s evaluation reproduces the committed baseline's outputs on 1 and 2 threads, and
    every choice it takes has a margin of more than one logit. When the tiny model changes on purpose,
    regenerate the baseline with `make ci-baseline`."""
    baseline = json.loads((BASELINE / "run.json").read_text())
    assert baseline["config"]["model"]["sha256"] == sha256_file(tiny_model), "run `make ci-baseline`"

    def outputs(path: Path) -> list[tuple[str, str, int, list[int]]]:
        lines = path.read_text().splitlines()
        return [(d["stream"], d["method"], d["step"], d["output_ids"]) for d in map(json.loads, lines)]

    expected = outputs(BASELINE / "steps.jsonl")
    for threads in (1, 2):
        out = tmp_path / f"t{threads}"
        args = eval_args(tiny_model, CI_STREAMS, "--limit", "8", "--threads", str(threads), "--out", str(out))
        with trace.recording() as recorded:
            result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert outputs(out / "steps.jsonl") == expected
        margins = [d.row.margin for d in recorded.decisions if d.row is not None and d.kind == trace.GREEDY]
        assert len(margins) > 1000 and min(margins) > 1.0

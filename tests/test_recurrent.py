"""Models whose memory is a recurrent state (a tiny Mamba GGUF built by simul.testing.tiny_recurrent): the
methods that roll back to a draft's first divergence are refused before decoding, naming the architecture;
re-translation decodes them correctly, each update equal to greedy decoding from an empty state."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import UsageError
from simul.decoding.backend import LlamaBackend
from simul.decoding.rollback import check_rollback, needs_rollback
from simul.decoding.stream import StreamDecoder
from simul.request.methods import Method
from simul.request.templates import PRESETS
from simul.testing.tiny_recurrent import build_tiny_recurrent
from tests.helpers import eval_args, make_streams

runner = CliRunner()


@pytest.fixture(scope="module")
def mamba_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_recurrent(tmp_path_factory.mktemp("mamba") / "mamba.gguf", seed=0)


@pytest.fixture(scope="module")
def mamba_backend(mamba_model: Path) -> Iterator[LlamaBackend]:
    backend = LlamaBackend(mamba_model, n_ctx=1024, n_threads=1)
    yield backend
    backend.close()


def test_the_tiny_recurrent_model_is_what_llama_cpp_calls_recurrent(mamba_backend: LlamaBackend) -> None:
    assert mamba_backend.info.architecture == "mamba"
    assert mamba_backend.info.memory == "recurrent"


def test_a_transformer_is_attention(tiny_backend: LlamaBackend) -> None:
    assert tiny_backend.info.memory == "attention"


def test_llama_cpp_refuses_to_drop_part_of_a_recurrent_state(mamba_backend: LlamaBackend) -> None:
    """The reason for the refusal: a truncation inside the sequence fails, and the sequence is cleared."""
    b = mamba_backend
    b.reset()
    tokens = b.tokenize("English: The cat sat on the mat.\nGerman:", add_special=True)
    b.eval(tokens, logits_from=len(tokens) - 1)
    assert not b.truncate(len(tokens) - 3)
    assert b.cache == []


@pytest.mark.parametrize(
    ("options", "label"),
    [
        (["--beta", "0.2"], "SSBD(b=0.2)"),
        (["--beta", "0"], "SSBD(b=0)"),
        (["--method", "cd"], "CD"),
        (["--method", "lookup"], "LOOKUP"),
        (["--beta", "0.2", "--tail-draft", "ngram-cache"], "SSBD(b=0.2)"),
    ],
)
def test_methods_that_roll_back_are_refused_naming_the_architecture(
    mamba_model: Path, tmp_path: Path, options: list[str], label: str
) -> None:
    from simul.streams.format import write_streams

    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams()[:1])
    result = runner.invoke(app, eval_args(mamba_model, streams, *options, "--out", str(tmp_path / "run")))
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "is a mamba model: its memory is a recurrent state" in text
    assert "cannot roll back to the first divergence" in text
    assert label in text and "--method rt --no-baseline" in text
    assert not (tmp_path / "run" / "run.json").exists()  # refused before anything was decoded or written


def test_which_methods_need_a_rollback() -> None:
    assert not needs_rollback(Method("rt"))
    assert not needs_rollback(Method("rt", mask_k=3))
    for method in (Method("ssbd", beta=0.2), Method("ssbd", beta=0.0), Method("cd")):
        assert needs_rollback(method)
    check_rollback([Method("ssbd", beta=0.2)], "attention", "llama")  # a KV cache: nothing refused
    with pytest.raises(UsageError, match="hybrid: attention layers beside recurrent layers"):
        check_rollback([Method("rt"), Method("cd")], "hybrid", "qwen35")
    check_rollback([Method("rt")], "hybrid", "qwen35")


def _greedy(backend: LlamaBackend, tokens: list[int], n: int) -> list[int]:
    backend.reset()
    rows = backend.eval(tokens, logits_from=len(tokens) - 1)
    out: list[int] = []
    while rows is not None and len(out) < n:
        out.append(int(np.argmax(rows[0])))
        if len(out) < n:
            rows = backend.eval([out[-1]], logits_from=0)
    return out


def test_re_translation_on_a_recurrent_model_equals_greedy_decoding_from_an_empty_state(
    mamba_backend: LlamaBackend,
) -> None:
    decoder = StreamDecoder(mamba_backend, PRESETS["fewshot"], Method("rt"))
    streams = make_streams()[:2]
    mamba_backend.reset()
    results = [decoder.decode(s) for s in streams]
    checked = 0
    for stream, result in zip(streams, results, strict=True):
        for step, record in zip(stream.steps, result.steps, strict=True):
            prompt = decoder.tokenize_prompt(decoder.prompt_for(stream, step.source))
            assert record.output_ids == _greedy(mamba_backend, prompt, len(record.output_ids))
            checked += len(record.output_ids)
    assert checked > 20


def test_a_recurrent_draft_model_is_refused_too(mamba_model: Path, tiny_model: Path, tmp_path: Path) -> None:
    from simul.streams.format import write_streams

    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams()[:1])
    args = eval_args(tiny_model, streams, "--method", "spec", "--draft-model", str(mamba_model))
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "the draft model mamba.gguf is a mamba model: its memory is a recurrent state" in text

"""Exact mode (simul.decoding.backend.exactness): every forward pass gives each row the logits a one-token
pass gives it, so greedy-exact methods reproduce re-translation token for token and batching keeps outputs.

Most tests run on the tiny model's ``random`` design, whose greedy choices have near-ties (the ``codes``
design has a logit margin of more than one at every choice, so batching cannot move its outputs whatever the
kernels): in fast mode its rows differ with the width of their pass (tested), so the equalities below would
fail without exact mode. The gemma-3-270m tests (slow) check the same on the embedded model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import UsageError
from simul.decoding.backend import LlamaBackend, exactness
from simul.decoding.backend.invariance import (
    _decode_in_passes,
    _greedy_reference,
    long_prompts,
    probe,
)
from simul.decoding.engine import Engine, EngineSettings
from simul.decoding.records import StreamResult
from simul.decoding.stream import StreamDecoder
from simul.request.methods import Method
from simul.request.ngram_settings import NgramDraft
from simul.request.templates import PRESETS
from simul.streams.format import Stream, write_streams
from tests.helpers import eval_args, make_streams

if TYPE_CHECKING:
    from tests.conftest import ExactDecodes

runner = CliRunner()
WIDTHS = list(range(1, 33))
TEMPLATE = PRESETS["fewshot"]
GREEDY_EXACT = [
    Method("ssbd", beta=0.0),
    Method("lookup", ngram=NgramDraft.of("lookup", tail=False)),
    Method("ngram-cache", ngram=NgramDraft.of("ngram-cache", tail=False)),
]


@pytest.fixture(scope="module", autouse=True)
def patched_llama() -> None:
    """Skip where llama-cpp-python lacks simul's exact-mode patch (`make setup` builds it)."""
    from simul.decoding.backend import _llama

    support = exactness.exact_support(_llama(), 0)
    if support.patch != exactness.PATCH:
        pytest.skip(f"no exact mode here: {support.reason}")


@pytest.fixture(scope="module")
def near_ties(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model whose choices have near-ties (rows in fast mode differ with the pass width)."""
    from simul.testing.tiny_gguf import build_tiny_gguf

    return build_tiny_gguf(tmp_path_factory.mktemp("ties") / "ties.gguf", seed=0, design="random")


@pytest.fixture(scope="module")
def exact_backend(near_ties: Path) -> Iterator[LlamaBackend]:
    backend = LlamaBackend(near_ties, n_ctx=2048, n_threads=2, exact=True)
    yield backend
    backend.close()


def test_fast_mode_rows_depend_on_the_width_of_their_pass(near_ties: Path) -> None:
    """The control: without exact mode this model's rows differ between one-token and wider passes, so the
    tests below could fail."""
    with LlamaBackend(near_ties, n_ctx=1024, n_threads=2) as backend:
        report = probe(backend, widths=[1, 2, 4, 16], rows=40)
    assert not report.exact and report.max_abs_diff > 0
    assert report.widths[0].bit_equal == report.widths[0].rows  # one token at a time is the reference


def test_every_row_is_bit_equal_at_every_width_in_exact_mode(exact_backend: LlamaBackend) -> None:
    report = probe(exact_backend, widths=WIDTHS, rows=40)
    assert [w.bit_equal for w in report.widths] == [80] * len(WIDTHS), report.lines()
    assert report.exact and report.max_abs_diff == 0.0


def test_long_contexts_and_wide_passes_stay_exact(exact_backend: LlamaBackend) -> None:
    """Past 256 cells (llama.cpp's padded KV length becomes 512 and more: FlashAttention's split-KV path for
    one query row) and at 64 rows (its query-tiled path)."""
    prompts = long_prompts()
    assert all(len(exact_backend.tokenize(p, add_special=True)) > 512 for p in prompts)
    report = probe(exact_backend, prompts=prompts, widths=[1, 2, 8, 64], rows=72)
    assert report.exact, report.lines()


def test_exact_attention_keeps_the_reference_paths_bits(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Exact mode's attention takes several query rows of one key/value head at a time (the patch's
    simul_fa_rows, from simul-exact/7: they share the loading of each key's K and V); every row must keep the
    bits of llama.cpp's reference attention (ggml_compute_forward_flash_attn_ext_f16_one_chunk), row by row.
    Below 64 rows and 512 cells, the attention of a backend with every part of exact mode on but
    ``flash-attn`` is that reference path, and nothing else differs between the two backends, so their logits
    must be bit-equal at every width, and equal to one-token decoding's. The model: heads of 64 (the grouped
    path takes head sizes that are a multiple of the vector step; the default tiny model's 16 keep the
    reference path), 4 query heads on 2 key/value heads."""
    from simul.testing.tiny_gguf import build_tiny_gguf

    path = tmp_path_factory.mktemp("gqa") / "gqa.gguf"
    model = build_tiny_gguf(path, seed=3, design="random", n_embd=256, n_head=4, n_head_kv=2)
    reference_parts = exactness.ALL_PARTS & ~exactness.PARTS["flash-attn"]
    grouped = LlamaBackend(model, n_ctx=512, n_threads=2, exact=True)
    reference = LlamaBackend(model, n_ctx=512, n_threads=2, exact=True)
    reference.exact_parts = reference_parts
    try:
        # a prompt of fewer than 64 tokens: fast mode's attention would take a wider prompt pass in query
        # tiles, and the cache's later layers would differ
        prompt = grouped.tokenize("English: The weather is nice.\nGerman:", add_special=True)
        assert len(prompt) < 64
        tokens, one_by_one = _greedy_reference(grouped, prompt, 40)
        for width in (1, 2, 3, 6, 8, 13, 40):
            got = _decode_in_passes(grouped, prompt, tokens, width, [])
            want = _decode_in_passes(reference, prompt, tokens, width, [])
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), f"width {width}"
            assert np.array_equal(got.view(np.uint32), one_by_one.view(np.uint32)), f"width {width}"
    finally:
        grouped.close()
        reference.close()


def test_exact_rows_do_not_depend_on_the_thread_count(near_ties: Path) -> None:
    rows = []
    for threads in (1, 2):
        with LlamaBackend(near_ties, n_ctx=2048, n_threads=threads, exact=True) as backend:
            prompt = backend.tokenize(long_prompts()[0], add_special=True)
            got = backend.eval(prompt + prompt[1:20], logits_from=len(prompt) - 1)
            assert got is not None
            rows.append(got.copy())
    assert np.array_equal(rows[0], rows[1])


def test_a_pass_shared_with_other_sequences_is_exact(exact_backend: LlamaBackend) -> None:
    """--parallel: the sequences share one cache, each in its own region, so its rows are those of
    --parallel 1."""
    report = probe(exact_backend, widths=[1, 3, 8], rows=24, companions=3)
    assert report.exact, report.lines()
    assert exact_backend.n_seq == 1  # the probe gives the context back as it found it


def rows_after_a_freed_neighbour(
    backend: LlamaBackend, prompt: list[int], tokens: list[int]
) -> np.ndarray[Any, Any]:
    """Sequence 0's rows for ``tokens`` (one per pass, beside a row of sequence 1) after sequence 1, whose
    cells came first in the shared cache, freed most of them: llama.cpp's own placement then puts sequence
    0's next cells before its earlier ones."""
    backend.configure(2, 512)
    backend.reset()
    neighbour, probed = backend.sequence(1), backend.sequence(0)
    neighbour.eval(prompt + prompt, logits_from=None)
    probed.eval(prompt, logits_from=None)
    neighbour.truncate(2)
    rows = []
    for token in tokens:
        got = backend.eval_many([(probed, [token], 0), (neighbour, [token], None)])[0]
        assert got is not None
        rows.append(got[0].copy())
    return np.array(rows)


def test_a_sequence_keeps_its_cells_in_order_when_others_free_theirs(exact_backend: LlamaBackend) -> None:
    """The patch's KV part: each sequence's cells stay in its own region, in the order of its positions,
    whatever the other sequences free; without it (the other parts on) this sequence's rows move."""
    backend = exact_backend
    backend.configure(1, 2048)
    prompt = backend.tokenize(
        "The committee met on Tuesday to discuss the budget for next year.", add_special=True
    )
    backend.reset()
    first = backend.eval(prompt, logits_from=len(prompt) - 1)
    assert first is not None
    tokens, reference = [int(np.argmax(first[-1]))], []
    for _ in range(12):
        row = backend.eval([tokens[-1]], logits_from=0)
        assert row is not None
        reference.append(row[0].copy())
        tokens.append(int(np.argmax(row[0])))
    tokens.pop()
    try:
        assert np.array_equal(rows_after_a_freed_neighbour(backend, prompt, tokens), np.array(reference))
        backend.exact_parts = exactness.ALL_PARTS & ~exactness.PARTS["kv-order"]
        unordered = rows_after_a_freed_neighbour(backend, prompt, tokens)
        assert not np.array_equal(unordered, np.array(reference))
    finally:
        backend.exact_parts = None
        backend.configure(1, 2048)


# -- whole streams -----------------------------------------------------------------------------------------


def steps_of(results: list[StreamResult]) -> list[list[list[int]]]:
    return [[s.output_ids for s in r.steps] for r in results]


def decode_all(backend: LlamaBackend, method: Method, streams: list[Stream]) -> list[StreamResult]:
    backend.reset()
    decoder = StreamDecoder(backend, TEMPLATE, method)
    return [decoder.decode(s) for s in streams]


@pytest.mark.parametrize("method", GREEDY_EXACT, ids=lambda m: m.key)
def test_greedy_exact_methods_give_rts_outputs_token_for_token(
    exact_backend: LlamaBackend, method: Method
) -> None:
    streams = make_streams(lag=2)
    rt = decode_all(exact_backend, Method("rt"), streams)
    other = decode_all(exact_backend, method, streams)
    assert steps_of(other) == steps_of(rt)
    if method.name == "ssbd":  # drafts were verified, not only decoded (this model's gibberish gives the
        # n-gram drafters little to find: the gemma test below checks that they drafted)
        assert sum(s.accepted for r in other for s in r.steps) > 0


def test_ssbd_with_an_exact_tail_drafter_gives_ssbds_outputs(exact_backend: LlamaBackend) -> None:
    streams = make_streams(lag=2)
    plain = decode_all(exact_backend, Method("ssbd", beta=0.2), streams)
    tail = NgramDraft.of("lookup", tail=True, draft_min=1)
    tailed = decode_all(exact_backend, Method("ssbd", beta=0.2, ngram=tail), streams)
    assert steps_of(tailed) == steps_of(plain)


def test_spec_gives_rts_outputs_token_for_token(near_ties: Path, tmp_path: Path) -> None:
    """A draft model's tokens are kept only where they are the target's argmax: in exact mode that is RT."""
    from simul.decoding.draft_model import DraftSettings
    from simul.decoding.early_exit import truncate_model

    first_block = truncate_model(near_ties, 1, tmp_path / "first1.gguf").path
    engine = Engine(
        EngineSettings(model=near_ties, threads=2, exact=True, draft=DraftSettings(model=first_block))
    )
    try:
        streams = make_streams(lag=2)
        rt = [engine.decoder(Method("rt")).decode(s) for s in streams]
        spec = [engine.decoder(Method("spec", draft_max=4)).decode(s) for s in streams]
    finally:
        engine.close()
    assert steps_of(spec) == steps_of(rt)
    assert sum(s.drafted_by.count("model") for r in spec for s in r.steps) > 0  # kept drafts


def run_engine(model: Path, streams: list[Stream], **settings: Any) -> dict[tuple[str, str], list[Any]]:
    engine = Engine(EngineSettings(model=model, n_ctx=1024, **settings))
    out: dict[tuple[str, str], list[Any]] = {}

    def keep(stream: Stream, results: list[StreamResult]) -> None:
        for r in results:
            out[stream.id, r.method.key] = [s.output_ids for s in r.steps]

    try:
        engine.preflight(streams)
        engine.run(streams, [Method("rt"), Method("ssbd", beta=0.2)], keep)
    finally:
        engine.close()
    return out


def test_parallel_gives_the_outputs_of_one_stream_at_a_time(near_ties: Path) -> None:
    streams = make_streams(lag=2)
    single = run_engine(near_ties, streams, threads=2, exact=True)
    for parallel in (2, 4):  # 2: sequences are freed and taken by the next stream
        assert run_engine(near_ties, streams, threads=2, parallel=parallel, exact=True) == single
    assert run_engine(near_ties, streams, threads=1, exact=True) == single


def test_fast_mode_batching_moves_this_models_outputs(near_ties: Path) -> None:
    """The control of the test above: without exact mode, --parallel moves outputs of this model."""
    streams = make_streams(lag=2)
    single = run_engine(near_ties, streams, threads=2, exact=False)
    assert run_engine(near_ties, streams, threads=2, parallel=4, exact=False) != single


# -- the run, the table, and where exactness cannot be had --------------------------------------------------


def test_the_run_records_the_mode_and_its_self_check(near_ties: Path, tmp_path: Path) -> None:
    streams = tmp_path / "s.jsonl"
    write_streams(streams, make_streams()[:2])
    out = tmp_path / "run"
    result = runner.invoke(app, eval_args(near_ties, streams, "--beta", "0", "-o", str(out)))
    assert result.exit_code == 0, result.output
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["exact"] is True
    engine = run["environment"]["engine"]
    assert engine["mode"] == "exact" and engine["exact_patch"] == exactness.PATCH
    assert engine["kv_unified"] is False and engine["flash_attn"] == "on"
    assert engine["self_check"]["exact"] is True and engine["self_check"]["max_abs_diff"] == 0.0
    fast = tmp_path / "fast"
    result = runner.invoke(app, eval_args(near_ties, streams, "--no-exact", "-o", str(fast)))
    assert result.exit_code == 0, result.output
    record = json.loads((fast / "run.json").read_text())["environment"]["engine"]
    assert record["mode"] == "fast" and record["self_check"]["max_abs_diff"] > 0
    # a run cannot be resumed in the other mode
    again = runner.invoke(app, eval_args(near_ties, streams, "--exact", "--resume", "-o", str(fast)))
    assert again.exit_code != 0 and "exact differs" in again.output


def test_the_table_says_exact_or_batch_dependent(near_ties: Path, tmp_path: Path) -> None:
    streams = tmp_path / "s.jsonl"
    write_streams(streams, make_streams()[:1])
    args = eval_args(near_ties, streams)
    args.remove("--quiet")
    exact = runner.invoke(app, args)
    assert exact.exit_code == 0, exact.output
    assert "engine: exact" in " ".join(exact.output.split())
    fast = runner.invoke(app, [*args, "--no-exact"])
    text = " ".join(fast.output.split())
    assert "engine: batch-dependent (max |diff|" in text


@pytest.fixture
def unpatched(monkeypatch: pytest.MonkeyPatch) -> None:
    """llama.cpp as a user's own wheel has it: no exact-mode switch."""
    switch = exactness._Switch()
    switch.searched = True
    monkeypatch.setattr(exactness, "_switch", switch)


@pytest.mark.usefixtures("unpatched")
def test_without_the_patch_exact_is_refused_and_the_default_says_why(near_ties: Path) -> None:
    with pytest.raises(UsageError, match=r"--exact: .*without simul's patch"):
        Engine(EngineSettings(model=near_ties, n_ctx=256, exact=True))
    engine = Engine(EngineSettings(model=near_ties, n_ctx=256))
    try:
        assert engine.exact is False and engine.exact_note and "make setup" in engine.exact_note
    finally:
        engine.close()


def test_gpu_layers_rule_exactness_out() -> None:
    from simul.decoding.backend import _llama

    support = exactness.exact_support(_llama(), -1)
    assert not support.available and "--n-gpu-layers 0" in support.reason


# -- gemma-3-270m (slow) ------------------------------------------------------------------------------------
# Each method's results on the eight short default streams are decoded once for the session (conftest's
# gemma_exact_decodes, which test_gemma shares): RT's, the reference of every test here, once, not per test.


@pytest.mark.slow
def test_gemma_rows_are_bit_equal_at_every_width(gemma_exact: LlamaBackend) -> None:
    report = probe(gemma_exact, widths=WIDTHS, rows=40)
    assert [w.bit_equal for w in report.widths] == [80] * len(WIDTHS), report.lines()
    long = probe(gemma_exact, prompts=long_prompts(), widths=[1, 4, 16, 64], rows=72)
    assert long.exact, long.lines()


@pytest.mark.slow
@pytest.mark.parametrize("method", GREEDY_EXACT, ids=lambda m: m.key)
def test_gemma_greedy_exact_methods_give_rts_outputs(
    gemma_exact_decodes: ExactDecodes, method: Method
) -> None:
    rt = gemma_exact_decodes.of(Method("rt"))
    other = gemma_exact_decodes.of(method)
    assert len(other) == 8 and steps_of(other) == steps_of(rt)
    steps = [s for r in other for s in r.steps]
    if method.name == "ssbd":
        kept = sum(s.accepted for s in steps)
    else:
        kept = sum(s.drafted_by.count(method.drafters[-1]) for s in steps)
    assert kept > 0  # tokens were drafted and kept, not only decoded


@pytest.mark.slow
def test_gemma_parallel_gives_the_outputs_of_one_stream_at_a_time(
    gemma_model: Path, gemma_exact_decodes: ExactDecodes
) -> None:
    """Four streams at once through the engine give each stream's outputs decoded alone (the session's
    results, one stream at a time on a backend of its own)."""
    alone = {
        (r.stream_id, r.method.key): [s.output_ids for s in r.steps]
        for method in (Method("rt"), Method("ssbd", beta=0.2))
        for r in gemma_exact_decodes.of(method)
    }
    streams = gemma_exact_decodes.streams
    assert run_engine(gemma_model, streams, threads=2, parallel=4, exact=True) == alone


def test_bench_compares_the_modes_side_by_side(near_ties: Path, tmp_path: Path) -> None:
    streams = tmp_path / "s.jsonl"
    write_streams(streams, make_streams()[:2])
    exact_dir, fast_dir = tmp_path / "exact", tmp_path / "fast"
    args = [
        "bench", "--model", str(near_ties), "--streams", str(streams), "--no-cd", "--quiet", "--json",
        "--compare-modes", "-o", str(exact_dir), "--compare-out", str(fast_dir),
    ]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    modes = doc["modes"]
    assert [lane["name"] for lane in modes["lanes"]] == ["exact", "fast"]
    assert {m["method"] for m in modes["methods"]} == {"rt", "ssbd-b0.2"}
    assert all(m["tps_ratio"] and m["tps_ratio"] > 0 for m in modes["methods"])
    assert json.loads((exact_dir / "run.json").read_text())["config"]["exact"] is True
    assert json.loads((fast_dir / "run.json").read_text())["config"]["exact"] is False
    for bad, message in (
        (["--compare-out", str(tmp_path / "x")], "--compare-out needs --compare-modes"),
        (["--compare-modes", "--parallel", "2"], "drop --parallel"),
        (["--compare-modes", "--exact"], "drop --exact/--no-exact"),
    ):
        refused = runner.invoke(app, ["bench", "--model", str(near_ties), "--streams", str(streams), *bad])
        assert refused.exit_code == 2 and message in " ".join(refused.output.split()), refused.output

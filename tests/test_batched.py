"""Many streams per forward pass (--parallel) on the tiny model: the same steps, isolated sequences, limits.

Which equality holds exactly, and why: a stream's steps under --parallel N equal its steps in a batched
re-run with the same streams and the same N, because the same forward passes are made with the same rows
(llama.cpp's CPU kernels are deterministic for a given batch, with 1 or 2 threads alike: tested), and
--parallel 8 over 3 streams is --parallel 3. They need not equal the --parallel 1 steps: a batched pass
computes a row's logits with kernels cut for the whole batch, which changes the last bits, and greedy
choices at near-ties flip (measured on this tiny model: 2 of its 28 steps differ between N = 4 and N = 1
over the four test streams).
Per-sequence truncation is exact: the other sequences decode exactly as if it had not happened.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.decoding.backend import ContextOverflowError, LlamaBackend
from simul.decoding.engine import Engine, EngineSettings
from simul.decoding.records import StreamResult
from simul.request.methods import Method
from simul.streams.format import Stream, write_streams
from tests.helpers import eval_args, make_streams

runner = CliRunner()
METHODS = [Method("rt"), Method("ssbd", beta=0.2)]
TIMINGS = {"t_prompt", "t_gen", "t_prompt_eval", "t_verify", "t_decode"}


def decode(
    model: Path, streams: list[Stream], parallel: int, n_ctx: int = 1024, threads: int = 2
) -> dict[Any, Any]:
    engine = Engine(EngineSettings(model=model, n_ctx=n_ctx, threads=threads, parallel=parallel))
    out: dict[Any, Any] = {}
    order: list[str] = []

    def keep(stream: Stream, results: list[StreamResult]) -> None:
        order.append(stream.id)
        for r in results:
            out[stream.id, r.method.key] = [
                {k: v for k, v in s.to_json().items() if k not in TIMINGS} for s in r.steps
            ]

    try:
        engine.preflight(streams)
        assert engine.backend.n_seq == min(parallel, len(streams))
        engine.run(streams, METHODS, keep)
    finally:
        engine.close()
    assert order == [s.id for s in streams]  # handed on in stream order
    return out


def test_batched_steps_equal_a_batched_rerun_and_extra_sequences_change_nothing(tiny_model: Path) -> None:
    streams = make_streams()[:3]
    batched = decode(tiny_model, streams, 3)
    assert set(batched) == {(s.id, m.key) for s in streams for m in METHODS}
    # more sequences asked for than there are streams: one per stream, the same passes, the same steps
    again = decode(tiny_model, streams, 8)
    differing = sum(a != b for key in batched for a, b in zip(batched[key], again[key], strict=True))
    assert differing == 0


def test_a_batched_run_is_repeatable_when_sequences_are_reused(tiny_model: Path) -> None:
    # four streams on two sequences: each sequence is freed and taken by the next stream, so batches mix
    # streams at different steps and the shared cache holds cells of finished streams' successors
    streams = make_streams()
    first = decode(tiny_model, streams, 2)
    again = decode(tiny_model, streams, 2, threads=1)
    assert set(first) == {(s.id, m.key) for s in streams for m in METHODS}
    assert first == again


def test_truncating_one_sequence_leaves_the_others_intact(tiny_model: Path) -> None:
    with LlamaBackend(tiny_model, n_ctx=512, n_threads=2) as backend:
        backend.configure(2, 256)
        seq0, seq1 = backend.sequences
        a = backend.tokenize("English: The cat sat on the mat.\nGerman:", add_special=True)
        b = backend.tokenize("English: Hello world, this is a test.\nGerman:", add_special=True)

        def greedy(n: int) -> list[int]:
            rows = seq1.eval(b, logits_from=len(b) - 1)
            out = []
            for _ in range(n):
                assert rows is not None
                out.append(int(np.argmax(rows[-1])))
                rows = seq1.eval([out[-1]], logits_from=0)
            return out

        seq1.clear()
        alone = greedy(8)
        seq1.clear()
        seq0.eval(a, logits_from=None)
        both = backend.eval_many([(seq0, [5, 6, 7], 2), (seq1, b, len(b) - 1)])
        assert both[0] is not None and both[0].shape[0] == 1 and both[1] is not None
        assert seq0.truncate(4) and seq0.cache == a[:4]
        assert seq1.cache == b
        seq1.clear()
        assert seq0.cache == a[:4]
        assert greedy(8) == alone


def test_a_stream_longer_than_its_share_is_a_clear_error(tiny_model: Path) -> None:
    engine = Engine(EngineSettings(model=tiny_model, n_ctx=96, threads=2, parallel=4))
    try:
        with pytest.raises(ContextOverflowError, match="pass --n-ctx"):
            engine.preflight(make_streams())
    finally:
        engine.close()


def test_eval_parallel_reports_throughput(tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams()[:2])
    result = runner.invoke(app, eval_args(tiny_model, streams, "--parallel", "3", "--json"))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    throughput = doc["throughput"]
    assert throughput["parallel"] == 2 and throughput["streams"] == 2
    n_updates = 2 * sum(len(s.steps) for s in make_streams()[:2])
    assert throughput["updates"] == n_updates and throughput["updates_per_second"] > 0
    bad = runner.invoke(app, eval_args(tiny_model, streams, "--parallel", "0"))
    assert bad.exit_code == 2 and "--parallel" in bad.output

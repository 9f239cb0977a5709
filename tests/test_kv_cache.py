"""The KV cache of simul's context: LlamaBackend.kv_bytes, run.json's environment.kv_cache, the caption."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from simul.cli import app
from simul.decoding.backend.llama import LlamaBackend
from simul.reports.bench_tables import kv_cache_line
from simul.streams.format import write_streams
from tests.helpers import eval_args, make_streams

runner = CliRunner(env={"COLUMNS": "200"})


def test_gemma_heads_are_256_wide_not_its_width_over_its_heads(gemma_model: Path) -> None:
    """gemma-3-270m: 18 layers, 1 KV head of key and value length 256 (640 wide over 4 heads would be 160)."""
    backend = LlamaBackend(gemma_model, n_ctx=1024)
    try:
        assert backend.kv_bytes(1024) == 2 * 18 * 1024 * 1 * (256 + 256)
        record = backend.kv_cache_record()
        assert record == {
            "streams": 1,
            "positions_per_stream": 1024,
            "bytes_per_stream": 18 * 2**20,
            "bytes": 18 * 2**20,
            "type": "f16",
        }
    finally:
        backend.close()


def test_a_parallel_run_records_its_cache_per_stream_and_in_all(tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams())
    out = tmp_path / "run"
    result = runner.invoke(app, eval_args(tiny_model, streams, "--parallel", "2", "--out", str(out)))
    assert result.exit_code == 0, result.output
    record = json.loads((out / "run.json").read_text())["environment"]["kv_cache"]
    assert record["streams"] == 2 and record["bytes"] == 2 * record["bytes_per_stream"] > 0
    line = kv_cache_line(record)
    assert line is not None and "2 streams x" in line and "MiB in all" in line
    assert kv_cache_line({"streams": True, "bytes": 1}) is None  # a hand-edited record is not shown

"""GPU offload settings and the devices a run records (on this machine's llama.cpp build, CPU or GPU)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import UsageError
from simul.decoding.backend import LlamaBackend, _llama
from simul.decoding.backend.devices import ALL_LAYERS, list_devices, resolve_gpu_layers
from simul.reports.run_conditions import hardware_difference
from simul.streams.format import write_streams
from tests.helpers import eval_args, make_streams

runner = CliRunner()


def test_devices_are_read_from_llama_cpp() -> None:
    lib = _llama()
    devices, unknown = list_devices(lib)
    assert unknown is None
    assert any(d.type == "CPU" and d.name for d in devices)
    offload = bool(lib.llama_supports_gpu_offload())  # type: ignore[attr-defined]
    assert resolve_gpu_layers(None, lib) == (ALL_LAYERS if offload else 0)
    assert resolve_gpu_layers(0, lib) == 0 and resolve_gpu_layers(-1, lib) == -1
    with pytest.raises(UsageError, match="--n-gpu-layers"):
        resolve_gpu_layers(-2, lib)


def test_backend_records_layers_and_devices(tiny_model: Path) -> None:
    with LlamaBackend(tiny_model, n_ctx=256, n_threads=1, n_gpu_layers=0) as backend:
        hardware = backend.describe_hardware()
    assert hardware["n_gpu_layers"] == 0 and hardware["offloaded_layers"] == 0
    assert hardware["n_layers"] == 2
    devices = hardware["devices"]
    assert isinstance(devices, list) and any(d["type"] == "CPU" for d in devices)


def test_eval_records_hardware_and_diff_notes_a_change(tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams()[:1])
    out = tmp_path / "cpu"
    result = runner.invoke(app, eval_args(tiny_model, streams, "--n-gpu-layers", "0", "--out", str(out)))
    assert result.exit_code == 0, result.output
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["n_gpu_layers"] == 0
    assert any(d["type"] == "CPU" for d in run["environment"]["hardware"]["devices"])

    same = runner.invoke(app, ["diff", str(out), str(out)])
    assert same.exit_code == 0 and "different hardware" not in same.output
    gpu = tmp_path / "gpu"
    shutil.copytree(out, gpu)
    edited = json.loads((gpu / "run.json").read_text())
    edited["environment"]["hardware"]["devices"].append(
        {"name": "CUDA0", "description": "NVIDIA H100 80GB HBM3", "type": "GPU", "memory_total": 1}
    )
    edited["environment"]["hardware"]["offloaded_layers"] = 2
    (gpu / "run.json").write_text(json.dumps(edited))
    changed = runner.invoke(app, ["diff", str(out), str(gpu)])
    assert changed.exit_code == 0, changed.output
    assert "different hardware" in changed.output and "CUDA0 NVIDIA H100" in changed.output
    assert hardware_difference(run, run) is None


def test_bad_gpu_layers_is_a_usage_error(tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams()[:1])
    result = runner.invoke(app, eval_args(tiny_model, streams, "--n-gpu-layers", "-2"))
    assert result.exit_code == 2 and "--n-gpu-layers" in result.output

"""simul.machine.load_order: a decoding command on a CUDA build of llama.cpp loads it before numpy (the H200
machine's crash, docs/results.md "On a GPU"); other commands and builds import nothing early. The builds are
fake packages named llama_cpp whose import records what was already loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from simul.machine import load_order
from simul.machine.openmp import IDLE_SPIN

REPO = Path(__file__).resolve().parent.parent

FAKE_INIT = """
import json, os, sys
with open(os.environ["FAKE_LLAMA_RECORD"], "w") as f:
    json.dump({"numpy_before": "numpy" in sys.modules,
               "omp": os.environ.get("OMP_WAIT_POLICY"), "spin": os.environ.get("GOMP_SPINCOUNT")}, f)
"""


def fake_llama(root: Path, cuda: bool) -> Path:
    package = root / "llama_cpp"
    (package / "lib").mkdir(parents=True)
    (package / "__init__.py").write_text(FAKE_INIT)
    (package / "lib" / "libggml-base.so").touch()
    if cuda:
        (package / "lib" / "libggml-cuda.so.0").touch()
    return root


def run_simul(fake: Path, record: Path, *args: str, extra: str = "") -> subprocess.CompletedProcess[str]:
    """``python -m simul ARGS`` with the fake llama_cpp first on the path; ``extra`` runs before simul."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env |= {"PYTHONPATH": f"{fake}{os.pathsep}{REPO}", "FAKE_LLAMA_RECORD": str(record)}
    code = f"{extra}\nimport runpy, sys\nsys.argv = ['simul', *{list(args)!r}]\n"
    code += "runpy.run_module('simul', run_name='__main__', alter_sys=True)"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_the_subcommand_is_the_first_argument_that_is_no_option() -> None:
    assert load_order.subcommand(["eval", "--beta", "0.2"]) == "eval"
    assert load_order.subcommand(["--version"]) is None
    assert load_order.subcommand(["--ray", "bench"]) == "bench"
    assert load_order.subcommand([]) is None


def test_a_cuda_build_is_found_by_its_library_without_importing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "imported.json"
    monkeypatch.setenv("FAKE_LLAMA_RECORD", str(record))
    for cuda in (True, False):
        root = fake_llama(tmp_path / f"cuda-{cuda}", cuda)
        monkeypatch.syspath_prepend(str(root))
        sys.modules.pop("llama_cpp", None)
        try:
            assert load_order.cuda_build_installed() is cuda
        finally:
            sys.path.remove(str(root))
            sys.modules.pop("llama_cpp", None)
    assert not record.exists()  # found, never imported


def test_a_decoding_command_on_a_cuda_build_loads_llama_before_numpy(tmp_path: Path) -> None:
    fake = fake_llama(tmp_path / "site", cuda=True)
    record = tmp_path / "imported.json"
    done = run_simul(fake, record, "eval", "--help")
    assert done.returncode == 0, done.stderr
    seen = json.loads(record.read_text())
    assert seen["numpy_before"] is False
    # the wait policy was set before the library loaded (simul's idle default, with no sample)
    assert seen["omp"] == "active" and seen["spin"] == IDLE_SPIN


def test_the_reason_is_recorded_with_the_policy(tmp_path: Path) -> None:
    fake = fake_llama(tmp_path / "site", cuda=True)
    code = (
        "import sys\nfrom simul.machine import load_order, openmp\n"
        "print(load_order.load_llama_first(['bench']))\nprint(openmp.record()['reason'])"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env |= {"PYTHONPATH": f"{fake}{os.pathsep}{REPO}", "FAKE_LLAMA_RECORD": str(tmp_path / "r.json")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    first, reason = done.stdout.splitlines()
    assert first == "True"
    assert "not measured" in reason and load_order.NOTE in reason


@pytest.mark.parametrize(
    ("cuda", "args", "extra"),
    [
        (True, ["diff", "--help"], ""),  # a command that decodes nothing
        (False, ["eval", "--help"], ""),  # a build without CUDA: llama.cpp stays lazy
        (True, ["eval", "--help"], "import numpy"),  # numpy already there: no safe order left
    ],
)
def test_nothing_is_loaded_early_otherwise(tmp_path: Path, cuda: bool, args: list[str], extra: str) -> None:
    fake = fake_llama(tmp_path / "site", cuda=cuda)
    record = tmp_path / "imported.json"
    done = run_simul(fake, record, *args, extra=extra)
    assert done.returncode == 0, done.stderr
    assert not record.exists()


def test_the_console_script_starts_at_the_launcher() -> None:
    import tomllib

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["simul"] == "simul.launch:main"
    assert "simul.launch" in (REPO / "simul" / "__main__.py").read_text(encoding="utf-8")

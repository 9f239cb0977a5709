"""Loading llama.cpp: the shared library, imported lazily (after OpenMP's wait policy is chosen) with its log
kept for error messages, and the check that a model file is GGUF before llama.cpp reads it."""

from __future__ import annotations

import ctypes
import threading
from collections import deque
from pathlib import Path

from simul.common.errors import SimulError
from simul.machine.openmp import choose_wait_policy

GGUF_MAGIC = b"GGUF"
_init_lock = threading.Lock()
_backend_ready = False
# llama.cpp's log lines, kept (not printed) so that a failure can quote them.
LLAMA_LOG: deque[str] = deque(maxlen=400)
_log_callback: object = None


def _llama(taken_cores: int | None = None) -> object:
    """Import llama_cpp lazily (it loads a shared library) and quieten its logging once; ``taken_cores``
    (simul.machine.threads' CPU sample) decides the OpenMP wait policy the first time
    (simul.machine.openmp)."""
    global _backend_ready
    global _log_callback
    choose_wait_policy(taken_cores)  # OpenMP reads its wait policy once, when llama_cpp loads it
    try:
        import llama_cpp
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SimulError(
            f"llama-cpp-python is not importable ({exc}); run `make setup` or `pip install llama-cpp-python`"
        ) from None
    with _init_lock:
        if not _backend_ready:

            def keep(level: int, text: bytes, user_data: object) -> None:
                LLAMA_LOG.append(text.decode("utf-8", errors="replace"))

            _log_callback = llama_cpp.llama_log_callback(keep)
            llama_cpp.llama_log_set(_log_callback, ctypes.c_void_p(0))
            llama_cpp.llama_backend_init()
            _backend_ready = True
    return llama_cpp


def check_gguf(path: Path) -> None:
    """Fail with a clear message unless ``path`` is a readable GGUF file."""
    if not path.exists():
        raise SimulError(
            f"model file {path} does not exist; pass --model PATH.gguf or omit it for the default"
        )
    if not path.is_file():
        raise SimulError(f"model path {path} is not a file; pass --model PATH.gguf")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise SimulError(f"cannot read model file {path}: {exc.strerror}") from None
    if magic != GGUF_MAGIC:
        raise SimulError(
            f"{path} is not a GGUF model (it does not start with 'GGUF'); convert it with llama.cpp's "
            "convert_hf_to_gguf.py or pass a .gguf file"
        )

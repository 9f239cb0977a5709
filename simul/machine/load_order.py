"""Loading a CUDA build of llama.cpp before numpy.

Seen on a lent NVIDIA H200 machine (docs/results.md, "On a GPU"): with numpy 2.5.2 (scipy-openblas64 0.3.34)
imported first, ``llama_model_load_from_file`` of llama-cpp-python 0.3.36 built with ``GGML_CUDA=on`` died
with SIGSEGV inside ``libggml-cuda.so``, with or without GPU layers; loading llama.cpp first, then numpy, ran.
The same builds without CUDA load in either order (every run on the development machine imports numpy first).

simul loads llama.cpp lazily, after it has chosen OpenMP's wait policy (simul.machine.openmp), and imports
numpy long before. So the commands that decode start here: when the installed llama_cpp carries a CUDA
library, they choose the wait policy without the CPU sample and import llama_cpp before anything else is
imported. Nothing is imported for other commands or other builds, and a process that has imported numpy
already (a library user, a Ray worker) is left alone: there is no safe order left to choose.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

from simul.machine.openmp import choose_wait_policy

#: the subcommands that load a model in this process
DECODING_COMMANDS = frozenset({"eval", "sweep", "bench"})
#: llama.cpp's CUDA backend library, as llama-cpp-python installs it (llama_cpp/lib/libggml-cuda.so...)
CUDA_LIBRARY = "libggml-cuda*"
NOTE = "llama.cpp's CUDA build is loaded before numpy (simul.machine.load_order), before the CPU sample"


def subcommand(argv: Sequence[str]) -> str | None:
    """The first argument that is not an option: the subcommand of ``simul ARGS``."""
    return next((a for a in argv if not a.startswith("-")), None)


def cuda_build_installed() -> bool:
    """Whether the llama_cpp package that would be imported ships a CUDA backend (found without importing)."""
    try:
        spec = importlib.util.find_spec("llama_cpp")
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.submodule_search_locations:
        return False
    return any(any((Path(base) / "lib").glob(CUDA_LIBRARY)) for base in spec.submodule_search_locations)


def load_llama_first(argv: Sequence[str]) -> bool:
    """For a decoding command on a CUDA build, choose the wait policy and import llama_cpp now; returns
    whether it did. Call before anything imports numpy."""
    if subcommand(argv) not in DECODING_COMMANDS:
        return False
    if "numpy" in sys.modules or "llama_cpp" in sys.modules:
        return False
    if not cuda_build_installed():
        return False
    choose_wait_policy(None, note=NOTE)
    try:
        import llama_cpp  # noqa: F401  (loading its libraries is the point)
    except ImportError:  # reported where simul imports it for real (simul.decoding.backend.library)
        return False
    return True

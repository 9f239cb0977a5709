"""The llama.cpp backend: one model and context behind the small interface the decoders need (llama.py), one
sequence of such a context (sequence.py), loading the library and checking a model file (library.py), the
compute devices and GPU offload settings it runs with (devices.py), exact mode (exactness.py) and the probe
that measures whether a row's logits depend on the width of its pass (invariance.py)."""

from simul.decoding.backend.library import LLAMA_LOG, _llama, check_gguf
from simul.decoding.backend.llama import ContextOverflowError, LlamaBackend, ModelInfo
from simul.decoding.backend.sequence import Logits

__all__ = [
    "LLAMA_LOG",
    "ContextOverflowError",
    "LlamaBackend",
    "Logits",
    "ModelInfo",
    "_llama",
    "check_gguf",
]

"""The llama.cpp backend: one model and context behind the small interface the decoders need (llama.py), and
the compute devices and GPU offload settings it runs with (devices.py)."""

from simul.decoding.backend.llama import (
    LLAMA_LOG,
    ContextOverflowError,
    LlamaBackend,
    Logits,
    ModelInfo,
    _llama,
    check_gguf,
)

__all__ = [
    "LLAMA_LOG",
    "ContextOverflowError",
    "LlamaBackend",
    "Logits",
    "ModelInfo",
    "_llama",
    "check_gguf",
]

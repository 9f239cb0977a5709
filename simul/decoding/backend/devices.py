"""The compute devices llama.cpp sees, and how many layers go to the GPU.

llama-cpp-python binds ``llama_supports_gpu_offload`` but not ggml's device registry, so the devices are
read through ctypes from the same library (``ggml_backend_dev_count``, ``ggml_backend_dev_get``,
``ggml_backend_dev_name``, ``ggml_backend_dev_description``, ``ggml_backend_dev_type`` and
``ggml_backend_dev_memory`` of ggml-backend.h). A run records them so that timings taken on different
hardware are never compared as if they were the same.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from simul.common.errors import UsageError

# enum ggml_backend_dev_type (ggml-backend.h)
DEVICE_TYPES = {0: "CPU", 1: "GPU", 2: "IGPU", 3: "ACCEL"}
ALL_LAYERS = -1  # llama_model_params.n_gpu_layers: a negative value offloads every layer


@dataclass(frozen=True)
class Device:
    name: str  # the backend's device name: CPU, CUDA0, Metal, Vulkan0, ...
    description: str  # the hardware: "NVIDIA H100 80GB HBM3", the CPU model, ...
    type: str  # CPU, GPU, IGPU or ACCEL
    memory_total: int  # bytes, 0 when the device does not say

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "type": self.type,
            "memory_total": self.memory_total,
        }


def supports_gpu_offload(lib: Any) -> bool:
    return bool(lib.llama_supports_gpu_offload())


def resolve_gpu_layers(requested: int | None, lib: Any) -> int:
    """``--n-gpu-layers``: None means every layer when this llama.cpp build can offload, else 0."""
    if requested is None:
        return ALL_LAYERS if supports_gpu_offload(lib) else 0
    if requested < -1:
        raise UsageError(f"--n-gpu-layers must be -1 (all), 0 (CPU only) or a layer count, got {requested}")
    return requested


def _function(handle: Any, name: str, restype: Any, argtypes: list[Any]) -> Any:
    func = getattr(handle, name, None)
    if func is None:
        return None
    func.restype = restype
    func.argtypes = argtypes
    return func


def list_devices(lib: Any) -> tuple[list[Device], str | None]:
    """The devices ggml has registered, and None, or an empty list and why they could not be read."""
    handle = getattr(getattr(lib, "llama_cpp", None), "_lib", None)
    if handle is None:
        return [], "llama_cpp exposes no library handle"
    count = _function(handle, "ggml_backend_dev_count", ctypes.c_size_t, [])
    get = _function(handle, "ggml_backend_dev_get", ctypes.c_void_p, [ctypes.c_size_t])
    name = _function(handle, "ggml_backend_dev_name", ctypes.c_char_p, [ctypes.c_void_p])
    desc = _function(handle, "ggml_backend_dev_description", ctypes.c_char_p, [ctypes.c_void_p])
    kind = _function(handle, "ggml_backend_dev_type", ctypes.c_int, [ctypes.c_void_p])
    memory = _function(
        handle,
        "ggml_backend_dev_memory",
        None,
        [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)],
    )
    if None in (count, get, name, desc, kind):
        return [], "this llama.cpp build does not export ggml's device registry"
    devices = []
    for index in range(int(count())):
        dev = get(index)
        if not dev:
            continue
        total = ctypes.c_size_t(0)
        if memory is not None:
            free = ctypes.c_size_t(0)
            memory(dev, ctypes.byref(free), ctypes.byref(total))
        devices.append(
            Device(
                name=(name(dev) or b"").decode("utf-8", errors="replace"),
                description=(desc(dev) or b"").decode("utf-8", errors="replace").strip(),
                type=DEVICE_TYPES.get(int(kind(dev)), f"type {int(kind(dev))}"),
                memory_total=int(total.value),
            )
        )
    return devices, None

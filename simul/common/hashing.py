"""SHA-256 of large files (models) with a small cache keyed on path, size and modification time, and the
verified joining of shipped file parts into one cached file."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

from simul.common.errors import SimulError
from simul.common.paths import cache_dir


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def _index_path() -> Path:
    return cache_dir() / "sha256-index.json"


def _index_key(path: Path) -> str:
    stat = path.stat()
    return f"{path}|{stat.st_size}|{stat.st_mtime_ns}"


def _read_index() -> dict[str, str]:
    try:
        index: dict[str, str] = json.loads(_index_path().read_text())
    except (OSError, ValueError):
        index = {}
    return index


def _remember(key: str, value: str, index: dict[str, str]) -> None:
    index[key] = value
    index_path = _index_path()
    try:
        index_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = index_path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(index, indent=0, sort_keys=True))
        os.replace(tmp, index_path)
    except OSError:
        pass  # a read-only cache only costs a re-hash next time


def cached_sha256(path: Path) -> str:
    """The file's SHA-256, computed once per (path, size, mtime) and remembered in the user cache."""
    resolved = path.resolve()
    key = _index_key(resolved)
    index = _read_index()
    if key in index:
        return index[key]
    value = sha256_file(resolved)
    _remember(key, value, index)
    return value


def join_verified(
    parts: Sequence[Path], target: Path, sha256: str, what: str, fix: str, size: int | None = None
) -> None:
    """Concatenate ``parts`` into ``target`` through a temporary file and rename it into place only when its
    SHA-256 (and ``size``, if given) match, so an interrupted or damaged assembly never looks complete.

    Errors name ``what`` is being built and end with ``fix`` (what to reinstall).
    """
    missing = [str(p) for p in parts if not p.is_file()]
    if missing:
        raise SimulError(f"the {what} parts are missing: {', '.join(missing)}; {fix}")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    written = 0
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as handle:
                    for block in iter(lambda: handle.read(1 << 22), b""):
                        digest.update(block)
                        written += len(block)
                        out.write(block)
        if digest.hexdigest() != sha256 or (size is not None and written != size):
            expected = f"{size} bytes and SHA-256 {sha256}" if size is not None else f"SHA-256 {sha256}"
            raise SimulError(
                f"the assembled {what} has {written} bytes and SHA-256 {digest.hexdigest()}, expected "
                f"{expected}; {fix}"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    # remember the hash just verified, so that the next cached_sha256 does not read the file again
    resolved = target.resolve()
    _remember(_index_key(resolved), sha256, _read_index())

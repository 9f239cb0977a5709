"""SHA-256 of large files (models) with a small cache keyed on path, size and modification time."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from simul.paths import cache_dir


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def _index_path() -> Path:
    return cache_dir() / "sha256-index.json"


def cached_sha256(path: Path) -> str:
    """The file's SHA-256, computed once per (path, size, mtime) and remembered in the user cache."""
    resolved = path.resolve()
    stat = resolved.stat()
    key = f"{resolved}|{stat.st_size}|{stat.st_mtime_ns}"
    index_path = _index_path()
    try:
        index: dict[str, str] = json.loads(index_path.read_text())
    except (OSError, ValueError):
        index = {}
    if key in index:
        return index[key]
    value = sha256_file(resolved)
    index[key] = value
    try:
        index_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = index_path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(index, indent=0, sort_keys=True))
        os.replace(tmp, index_path)
    except OSError:
        pass  # a read-only cache only costs a re-hash next time
    return value

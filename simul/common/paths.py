"""Where simul keeps things: the user cache (models, hashes) and the shipped fixtures."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$SIMUL_CACHE_DIR``, else ``$XDG_CACHE_HOME/simul``, else ``~/.cache/simul``."""
    explicit = os.environ.get("SIMUL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "simul"


def fixtures_dir() -> Path:
    """The shipped fixtures: inside the installed package, or ``fixtures/`` of a source checkout."""
    package = Path(__file__).resolve().parent.parent  # simul/ (this file is simul/common/paths.py)
    packaged = package / "fixtures"
    if packaged.is_dir():
        return packaged
    return package.parent / "fixtures"


def default_streams_file() -> Path:
    """The embedded default: a small FLORES-200 devtest en->de sample at lag 3."""
    return fixtures_dir() / "streams" / "flores200-devtest-en-de-lag3.jsonl"

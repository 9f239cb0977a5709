"""Writing result files safely: whole files appear at once or not at all, and write failures read clearly.

Every result file is written to a temporary file next to it and renamed into place, so a reader never sees
half a file; when anything fails (a full disk, a missing or read-only folder, an interruption) the temporary
file is removed and the old file, if any, is left as it was. Operating-system errors become a
:class:`SimulError` that names the file and says what to do, instead of a traceback.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TextIO

from simul.common.errors import SimulError

_ADVICE = {
    errno.ENOSPC: "the disk is full; free some space and try again",
    errno.EDQUOT: "the disk quota is exceeded; free some space and try again",
    errno.EACCES: "permission denied; choose a folder you can write to",
    errno.EPERM: "permission denied; choose a folder you can write to",
    errno.EROFS: "the file system is read-only; choose another place",
    errno.EISDIR: "it is a directory; give a file name",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.ENOENT: "its folder does not exist; create it first or choose another path",
}


def os_error_message(exc: OSError, path: Path, action: str = "write") -> str:
    """``cannot write PATH: <what went wrong, and what to do>`` for an OSError raised while writing."""
    reason = _ADVICE.get(exc.errno or 0) or (exc.strerror or str(exc))
    return f"cannot {action} {path}: {reason}"


def write_error(exc: OSError, path: Path) -> SimulError:
    return SimulError(os_error_message(exc, path))


def check_writable_file(path: Path) -> None:
    """Refuse an output file path that cannot be written, before any work is done."""
    if path.is_dir():
        raise SimulError(f"cannot write {path}: it is a directory; give a file name")
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        raise SimulError(f"cannot write {path}: {parent} is a file, not a folder")


@contextmanager
def atomic_file(path: Path) -> Iterator[TextIO]:
    """A text handle whose content replaces ``path`` when the block ends without an error.

    The temporary file is fsynced before the rename and removed on any failure (including Ctrl-C).
    """
    check_writable_file(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        try:
            with tmp.open("w", encoding="utf-8") as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            raise write_error(exc, path) from None
    except BaseException:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` at once (see :func:`atomic_file`)."""
    with atomic_file(path) as handle:
        handle.write(text)

"""The run-directory lock: one writer at a time, and readers that know when a run is being written.

A process that writes a run directory (``eval``, ``sweep``, ``bench``, ``score --update``) holds an exclusive
``fcntl.flock`` on ``DIR/.lock`` for as long as it writes, ``--resume`` and ``--overwrite`` included. The file
holds who took it (pid, host, command, start time) so that a second writer is refused with a message naming
the holder. The kernel drops the lock when the holder exits, even after ``kill -9``: a stale ``.lock`` file
left behind then locks nothing and is taken over by the next writer. On a clean release the file is removed.

The file is removed while still locked, so a process that opened the old file just before could lock an
unlinked file: :meth:`RunLock.acquire` checks after locking that the path still names the file it locked,
and tries again otherwise.

``flock`` is advisory and local to one machine; on network file systems it may not exclude a writer on
another host (the recorded host name then tells the user who it was).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError
from simul.common.files import os_error_message

LOCK_FILE = ".lock"

# Locks this process holds, by resolved directory: the same process may take the lock again (eval's command
# layer and the evaluation both do), which a second flock on a new file description would refuse.
_held: dict[Path, RunLock] = {}


_BUSY = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)

#: Test-only: called as ``_pause_hook(event, lock_path)`` at named points of :meth:`RunLock.acquire`, so that
#: a test can hold a process exactly there (tests/test_runlock.py) instead of hoping to catch it by timing.
#: "placed": the lock file is at its path and this process holds the lock on it.
_pause_hook: Callable[[str, Path], None] | None = None


def _pause(event: str, path: Path) -> None:
    if _pause_hook is not None:
        _pause_hook(event, path)


def _lock_exclusive(fd: int, attempts: int = 10, pause: float = 0.05) -> None:
    """flock(LOCK_EX) without blocking on a real writer: a reader's probe (a shared lock held for a moment)
    is waited out by a few short retries, a writer's lock is not."""
    for attempt in range(attempts):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in _BUSY or attempt == attempts - 1:
                raise
            time.sleep(pause)


def _describe(info: dict[str, Any]) -> str:
    parts = [f"process {info.get('pid', '?')}"]
    if info.get("host"):
        parts.append(f"on {info['host']}")
    text = " ".join(parts)
    if info.get("command"):
        text += f" (`{info['command']}`"
        text += f", since {info['started']})" if info.get("started") else ")"
    return text


def _read_info(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return obj if isinstance(obj, dict) else {}


def _command_line() -> str:
    program = Path(sys.argv[0]).name if sys.argv else "simul"
    args = ["simul" if program == "__main__.py" else program, *sys.argv[1:]]
    text = " ".join(args)
    return text if len(text) <= 300 else text[:297] + "..."


@dataclass
class RunLock:
    """An exclusive lock on a run directory (use as a context manager, or call :meth:`release`)."""

    directory: Path
    fd: int
    depth: int = 1

    @classmethod
    def acquire(cls, directory: Path) -> RunLock:
        """Lock ``directory`` (created if needed) for writing, or raise a SimulError naming the holder."""
        key = directory.resolve()
        held = _held.get(key)
        if held is not None:
            held.depth += 1
            return held
        lock_path = directory / LOCK_FILE
        while True:
            try:
                fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise SimulError(f"cannot lock the run directory {directory}: {exc.strerror}") from None
            try:
                _lock_exclusive(fd)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in _BUSY:
                    raise SimulError(f"cannot lock the run directory {directory}: {exc.strerror}") from None
                holder = _describe(_read_info(lock_path))
                raise SimulError(
                    f"{directory} is being written by {holder}; wait until it finishes (or stop it), "
                    "then try again"
                ) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(lock_path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the previous holder removed the file between our open and our lock: retry
        _pause("placed", lock_path)
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": _command_line(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(info, sort_keys=True) + "\n").encode("utf-8"), 0)
        except OSError:
            pass  # the lock holds without the note (e.g. on a full disk); refusals then name no process
        lock = cls(directory, fd)
        _held[key] = lock
        return lock

    def release(self) -> None:
        self.depth -= 1
        if self.depth > 0:
            return
        _held.pop(self.directory.resolve(), None)
        with contextlib.suppress(OSError):
            (self.directory / LOCK_FILE).unlink(missing_ok=True)
        os.close(self.fd)

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def writer_of(directory: Path) -> str | None:
    """Who is writing ``directory`` now (a description for messages), or None when nobody is."""
    if directory.resolve() in _held:
        return None  # this process: it reads what it writes
    lock_path = directory / LOCK_FILE
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in _BUSY:
            return _describe(_read_info(lock_path))
        return None
    finally:
        os.close(fd)
    return None


def lock_out_dir(out: Path, option: str = "--out") -> tuple[RunLock, bool]:
    """Create (if needed) and lock the run directory; returns the lock and whether the folder is new."""
    if out.exists() and not out.is_dir():
        raise SimulError(f"{option} {out} exists and is not a directory; choose a directory path")
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SimulError(os_error_message(exc, out, "create the run directory")) from None
    try:
        return RunLock.acquire(out), created
    except BaseException:
        if created:
            _remove_if_empty(out)
        raise


def _remove_if_empty(path: Path) -> None:
    try:
        if not any(p.name != LOCK_FILE for p in path.iterdir()):
            (path / LOCK_FILE).unlink(missing_ok=True)
            path.rmdir()
    except OSError:
        pass


@contextmanager
def locked_run_dir(out: Path | None, option: str = "--out") -> Iterator[None]:
    """Hold the lock of run directory ``out`` (created if needed) for the block; a folder created here and
    left empty by a failure is removed again. Nothing happens for ``None`` (no run directory)."""
    if out is None:
        yield
        return
    lock, created = lock_out_dir(out, option)
    finished = False
    try:
        yield
        finished = True
    finally:
        lock.release()
        if created and not finished:
            _remove_if_empty(out)  # failed before writing anything: leave no empty folder

"""The run-directory lock: one writer at a time, and readers that know when a run is being written.

A process that writes a run directory (``eval``, ``sweep``, ``bench``, ``score --update``) holds an exclusive
``fcntl.flock`` on ``DIR/.lock`` for as long as it writes, ``--resume`` and ``--overwrite`` included. The file
holds who took it (pid, host, command, start time) so that a second writer is refused with a message naming
the holder. The kernel drops the lock when the holder exits, even after ``kill -9``: a stale ``.lock`` file
left behind then locks nothing and is taken over by the next writer. On a clean release the file is removed.

How it is taken, so that the file at ``DIR/.lock`` names its holder from the first moment anyone can open it
(a writer that created the file and then wrote its note could be stopped in between, and a second writer
then said "being written by process ?"):

* The note goes into a new file under a private name (``.lock.<random>.tmp``), the maker locks that file
  (``LOCK_EX``, at once: nobody else knows it) and only then links it to ``DIR/.lock``; ``os.link`` fails when
  a ``.lock`` is already there.
* Only a file's maker ever holds ``LOCK_EX`` on it; everybody else probes a ``.lock`` they found with
  ``LOCK_SH``. A probe that fails means the maker holds the lock, and the file it failed on names the maker.
* A probe that succeeds means the maker is gone (or releasing): the file is stale and will never be locked
  again. The new writer replaces it with its own file (``os.replace``) while holding the directory's
  takeover lock (an flock on the directory itself), after checking that the path still names the stale file:
  two writers cannot both replace it. The takeover lock is held across that check and one rename only.
* Release removes the file, then drops the lock.

``flock`` is advisory and local to one machine; on network file systems it may not exclude a writer on
another host (the recorded host name then tells the user who it was).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
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
#: "placed": the lock file is at its path and this process holds the lock on it (returned next);
#: "takeover-wait": a stale lock file was found, about to wait for the directory's takeover lock;
#: "taking-over": holding the takeover lock, the stale file still in place.
_pause_hook: Callable[[str, Path], None] | None = None


def _pause(event: str, path: Path) -> None:
    if _pause_hook is not None:
        _pause_hook(event, path)


def _describe(info: dict[str, Any]) -> str:
    parts = [f"process {info.get('pid', '?')}"]
    if info.get("host"):
        parts.append(f"on {info['host']}")
    text = " ".join(parts)
    if info.get("command"):
        text += f" (`{info['command']}`"
        text += f", since {info['started']})" if info.get("started") else ")"
    return text


def _read_info(fd: int) -> dict[str, Any]:
    """The holder's note in the open lock file ``fd`` (read from the file the caller probed, not the path,
    which may name another file by now)."""
    try:
        obj = json.loads(os.pread(fd, 64 * 1024, 0).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return obj if isinstance(obj, dict) else {}


def _command_line() -> str:
    program = Path(sys.argv[0]).name if sys.argv else "simul"
    args = ["simul" if program == "__main__.py" else program, *sys.argv[1:]]
    text = " ".join(args)
    return text if len(text) <= 300 else text[:297] + "..."


def _note() -> bytes:
    info = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": _command_line(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return (json.dumps(info, sort_keys=True) + "\n").encode("utf-8")


def _new_lock_file(directory: Path) -> tuple[int, Path]:
    """A new file under a private name in ``directory`` holding this process's note, locked by it."""
    while True:
        temp = directory / f"{LOCK_FILE}.{secrets.token_hex(8)}.tmp"
        try:
            fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            break
        except FileExistsError:
            continue
    try:
        data = _note()
        try:
            while data:
                data = data[os.write(fd, data) :]
        except OSError:
            pass  # the lock holds without the note (e.g. on a full disk); refusals then name no process
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    return fd, temp


def _refusal(directory: Path, holder: str) -> SimulError:
    return SimulError(
        f"{directory} is being written by {holder}; wait until it finishes (or stop it), then try again"
    )


def _place(temp: Path, lock_path: Path) -> None:
    """Put the locked file ``temp`` at ``lock_path``, taking over a stale lock file found there, or raise the
    SimulError that names the process holding it."""
    directory = lock_path.parent
    while True:
        try:
            os.link(temp, lock_path)
            return
        except FileExistsError:
            pass
        try:
            other = os.open(lock_path, os.O_RDONLY)
        except FileNotFoundError:
            continue  # released between our link and our open: try again
        try:
            try:
                fcntl.flock(other, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in _BUSY:
                    raise
                # only its maker locks a lock file exclusively, and the maker wrote its note before linking
                raise _refusal(directory, _describe(_read_info(other))) from None
            if _take_over(other, temp, lock_path):
                return
        finally:
            os.close(other)


def _take_over(stale: int, temp: Path, lock_path: Path) -> bool:
    """Replace the stale lock file open as ``stale`` by ``temp``, unless the path names another file by now
    (released and taken again, or taken over by another writer first): then False, and the caller looks
    again. Serialized by an flock on the directory, which each writer holds across one stat and one rename;
    waiting for it is not waiting for a writer."""
    directory = lock_path.parent
    _pause("takeover-wait", lock_path)
    dir_fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(dir_fd, fcntl.LOCK_EX)
        try:
            try:
                now = os.stat(lock_path)
            except FileNotFoundError:
                return False
            was = os.fstat(stale)
            if (now.st_dev, now.st_ino) != (was.st_dev, was.st_ino):
                return False
            _pause("taking-over", lock_path)
            os.replace(temp, lock_path)
            return True
        finally:
            fcntl.flock(dir_fd, fcntl.LOCK_UN)
    finally:
        os.close(dir_fd)


@dataclass
class RunLock:
    """An exclusive lock on a run directory (use as a context manager, or call :meth:`release`)."""

    directory: Path
    fd: int
    depth: int = 1

    @classmethod
    def acquire(cls, directory: Path) -> RunLock:
        """Lock ``directory`` (which must exist) for writing, or raise a SimulError naming the holder."""
        key = directory.resolve()
        held = _held.get(key)
        if held is not None:
            held.depth += 1
            return held
        lock_path = directory / LOCK_FILE
        try:
            fd, temp = _new_lock_file(directory)
        except OSError as exc:
            raise SimulError(f"cannot lock the run directory {directory}: {exc.strerror}") from None
        try:
            _place(temp, lock_path)
        except OSError as exc:
            os.close(fd)
            raise SimulError(f"cannot lock the run directory {directory}: {exc.strerror}") from None
        except BaseException:
            os.close(fd)
            raise
        finally:
            with contextlib.suppress(OSError):
                temp.unlink()  # the private name (gone already when the file replaced a stale one)
        _pause("placed", lock_path)
        lock = cls(directory, fd)
        _held[key] = lock
        return lock

    def release(self) -> None:
        self.depth -= 1
        if self.depth > 0:
            return
        _held.pop(self.directory.resolve(), None)
        with contextlib.suppress(OSError):
            (self.directory / LOCK_FILE).unlink(missing_ok=True)  # ours: nobody replaces a locked file
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
            return _describe(_read_info(fd))
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
    """Remove the run directory this process created, if nothing is in it. A ``.lock`` found there is not
    ours (released already, or never placed): another writer's, so the folder stays."""
    with contextlib.suppress(OSError):
        path.rmdir()


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

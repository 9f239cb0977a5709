"""One writer per run directory: the lock, a second writer refused, readers told, duplicate records caught."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import SimulError
from simul.runs.lock import LOCK_FILE, RunLock, writer_of
from simul.streams.format import write_streams
from tests.helpers import SENTENCES, eval_args, lag_stream, make_streams

REPO = Path(__file__).resolve().parent.parent
runner = CliRunner()

HOLD = """
import sys, time
from pathlib import Path
from simul.runs.lock import RunLock
lock = RunLock.acquire(Path(sys.argv[1]))
print("locked", flush=True)
time.sleep(600)
"""


# Takes the lock with the test-only pause hook set: stops at the named point of RunLock.acquire, says so on
# stdout and waits for a line on stdin; then says "locked" and holds the lock until the next line.
PAUSED = """
import sys
from pathlib import Path
import simul.runs.lock as runlock

def pause(event, path):
    if event == sys.argv[2]:
        print(event, flush=True)
        sys.stdin.readline()

runlock._pause_hook = pause
lock = runlock.RunLock.acquire(Path(sys.argv[1]))
print("locked", flush=True)
sys.stdin.readline()
lock.release()
"""


# `simul ARGS` with the pause hook set: the first time it has taken a run lock it writes "placed" to the file
# descriptor $PAUSE_OUT and waits for a byte on $PAUSE_IN.
PAUSED_CLI = """
import os, sys
import simul.runs.lock as runlock

said = []

def pause(event, path):
    if event == "placed" and not said:
        said.append(event)
        os.write(int(os.environ["PAUSE_OUT"]), b"placed\\n")
        os.read(int(os.environ["PAUSE_IN"]), 1)

runlock._pause_hook = pause
sys.argv = ["simul", *sys.argv[1:]]
from simul.launch import main
main()
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


Holder = tuple[Path, "subprocess.Popen[str]"]


@pytest.fixture()
def holder(tmp_path: Path) -> Iterator[Holder]:
    """Another process holding the lock of tmp_path/run."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True, env=_env()
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    yield run_dir, proc
    proc.kill()
    proc.wait()


def test_a_second_writer_is_refused_with_the_holder_named(holder: Holder) -> None:
    run_dir, proc = holder
    with pytest.raises(SimulError, match=rf"being written by process {proc.pid} on .*`.*-c"):
        RunLock.acquire(run_dir)
    assert writer_of(run_dir) is not None and str(proc.pid) in (writer_of(run_dir) or "")
    # killed without a chance to clean up (kill -9): the kernel drops the lock, the stale file locks nothing
    proc.kill()
    proc.wait()
    assert (run_dir / LOCK_FILE).exists() and writer_of(run_dir) is None
    with RunLock.acquire(run_dir) as lock:
        info = json.loads((run_dir / LOCK_FILE).read_text())
        assert info["pid"] == os.getpid() and lock.directory == run_dir
        assert RunLock.acquire(run_dir) is lock  # the same process may take it again
        lock.release()
    assert not (run_dir / LOCK_FILE).exists()  # released cleanly: no file left behind


def _paused(run_dir: Path, event: str) -> subprocess.Popen[str]:
    """A process taking the lock of ``run_dir``, held at ``event`` of RunLock.acquire (PAUSED)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSED, str(run_dir), event],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == event, proc.communicate()
    return proc


def _resume(proc: subprocess.Popen[str]) -> str:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("\n")
    proc.stdin.flush()
    return proc.stdout.readline().strip()


def test_the_holder_is_named_as_soon_as_the_lock_file_is_in_place(tmp_path: Path) -> None:
    """The first moment another process can find the lock taken, the file already names who took it: a writer
    stopped right there (the pause hook; under load the scheduler can stop it there too) is named in the
    refusal, never "process ?"."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    first = _paused(run_dir, "placed")
    try:
        assert (run_dir / LOCK_FILE).exists()
        with pytest.raises(SimulError, match=rf"being written by process {first.pid} on .*`.*-c"):
            RunLock.acquire(run_dir)
        assert f"process {first.pid} " in (writer_of(run_dir) or "")
        assert _resume(first) == "locked"  # the refused writer left the lock as it was
        with pytest.raises(SimulError, match=rf"being written by process {first.pid} on "):
            RunLock.acquire(run_dir)
        _resume(first)
        assert first.wait(timeout=60) == 0
    finally:
        first.kill()
        first.wait()
    assert not (run_dir / LOCK_FILE).exists() and writer_of(run_dir) is None
    with RunLock.acquire(run_dir) as lock:
        assert json.loads((run_dir / LOCK_FILE).read_text())["pid"] == os.getpid() and lock.depth == 1


def test_a_stale_lock_is_taken_over_by_one_writer_and_the_other_names_it(tmp_path: Path) -> None:
    """Two writers find the same stale .lock (its maker died): one replaces it with its own, the other is
    refused naming that one, never the dead maker. Both are held by the pause hook at the points that matter:
    the taker with the stale file still in place, the other after it found that file unlocked."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    dead_pid = int(dead.stdout)
    (run_dir / LOCK_FILE).write_text(json.dumps({"pid": dead_pid, "command": "simul eval (killed)"}) + "\n")
    taker = _paused(run_dir, "taking-over")
    late: subprocess.Popen[str] | None = None
    try:
        late = _paused(run_dir, "takeover-wait")
        assert json.loads((run_dir / LOCK_FILE).read_text())["pid"] == dead_pid  # not replaced yet
        assert writer_of(run_dir) is None  # a stale file: nobody is writing
        assert late.stdin is not None
        late.stdin.write("\n")  # on to the takeover lock, which the taker holds
        late.stdin.flush()
        assert _resume(taker) == "locked"
        _, err = late.communicate(timeout=60)
        assert late.returncode == 1, err
        assert f"being written by process {taker.pid} " in err and f"process {dead_pid} " not in err
        assert f"process {taker.pid} " in (writer_of(run_dir) or "")
        _resume(taker)
        assert taker.wait(timeout=60) == 0
    finally:
        for proc in (taker, late):
            if proc is not None:
                proc.kill()
                proc.wait()
    assert list(run_dir.iterdir()) == []  # released, and no private lock file of either left behind


def test_eval_resume_and_overwrite_refused_while_another_process_writes(
    holder: Holder,
    tiny_model: Path,
    tmp_path: Path,
) -> None:
    run_dir, proc = holder
    streams = tmp_path / "s.jsonl"
    write_streams(streams, make_streams())
    for extra in (["--resume"], ["--overwrite"], []):
        refused = runner.invoke(app, eval_args(tiny_model, streams, "--out", str(run_dir), *extra))
        assert refused.exit_code == 1, refused.output
        assert f"being written by process {proc.pid}" in refused.output
        assert sorted(p.name for p in run_dir.iterdir()) == [LOCK_FILE]  # nothing written
    # readers that need a finished run refuse; show warns
    score = runner.invoke(app, ["score", str(run_dir)])
    assert score.exit_code == 1 and f"being written by process {proc.pid}" in score.output


def test_concurrent_resume_of_a_real_run_is_refused(tiny_model: Path, tmp_path: Path) -> None:
    """Two `simul eval` processes on one --out: the second (a --resume) is refused while the first runs,
    and the first finishes a clean run (no duplicated step records, scored like a fresh one). The first is
    held by the pause hook right after it took the lock (PAUSED_CLI), so the test does not depend on catching
    it in time."""
    streams = tmp_path / "s.jsonl"
    write_streams(streams, [lag_stream(f"s{i}", src, ref) for i, (src, ref) in enumerate(_sentences(24))])
    out = tmp_path / "run"
    args = eval_args(tiny_model, streams, "--out", str(out))
    said, say = os.pipe()  # first -> test: "placed"
    told, tell = os.pipe()  # test -> first: go on
    first = subprocess.Popen(
        [sys.executable, "-c", PAUSED_CLI, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**_env(), "PAUSE_OUT": str(say), "PAUSE_IN": str(told)},
        pass_fds=(say, told),
    )
    os.close(say)
    os.close(told)
    try:
        with os.fdopen(said, "rb") as from_first:
            assert from_first.readline() == b"placed\n", first.communicate()  # EOF if it died first
        second = subprocess.run(
            [sys.executable, "-m", "simul", *args, "--resume"],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=300,
        )
        os.write(tell, b"\n")
        assert second.returncode == 1, second.stderr
        assert f"being written by process {first.pid} " in second.stderr
        assert "Traceback" not in second.stderr
        _, err = first.communicate(timeout=300)
    finally:
        os.close(tell)
        first.kill()
        first.wait()
    assert first.returncode == 0, err
    assert not (out / LOCK_FILE).exists()
    scored = runner.invoke(app, ["score", str(out), "--json", "--quiet"])
    assert scored.exit_code == 0, scored.output
    lines = (out / "steps.jsonl").read_text().splitlines()
    keys = [(o["method"], o["stream"], o["step"]) for o in map(json.loads, lines)]
    assert len(keys) == len(set(keys))


def _sentences(n: int) -> list[tuple[str, str]]:
    words = " ".join(s for s, _ in SENTENCES).split()
    return [(" ".join(words[: 8 + i % 9]) + ".", "Die Katze.") for i in range(n)]


def test_score_detects_duplicate_step_records(tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "s.jsonl"
    write_streams(streams, make_streams()[:2])
    out = tmp_path / "run"
    assert runner.invoke(app, eval_args(tiny_model, streams, "--out", str(out))).exit_code == 0
    steps = out / "steps.jsonl"
    lines = steps.read_text().splitlines(keepends=True)
    steps.write_text("".join(lines + lines[:3]))  # what two writers appending the same streams leave
    damaged = runner.invoke(app, ["score", str(out)])
    assert damaged.exit_code == 1
    text = " ".join(damaged.output.split())
    assert f"steps.jsonl:{len(lines) + 1}: " in text and "duplicate step record" in text
    assert "also on line 1" in text
    assert "run it again with --overwrite" in text and "eval --resume" not in text  # resume refuses it

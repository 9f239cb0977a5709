"""Stopping a run: SIGTERM like Ctrl-C, Ctrl-C while scoring, and what an unfinished run reports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.decoding.engine import EngineSettings
from simul.request.methods import Method
from simul.runs.directory import STATUS_COMPLETE, STATUS_INTERRUPTED
from simul.runs.evaluation import EvalRequest, Interrupted, run_evaluation
from simul.streams.format import read_streams
from simul.testing.hold import HOLD_ENV, MARK_ENV
from tests.helpers import eval_args

REPO = Path(__file__).resolve().parent.parent
runner = CliRunner()


def test_sigterm_is_handled_like_ctrl_c(tiny_model: Path, streams_file: Path, tmp_path: Path) -> None:
    """The child waits after writing its first stream (the test-only hook simul.testing.hold), is sent SIGTERM
    there, and keeps exactly that stream: no race with how fast the machine decodes."""
    out = tmp_path / "run"
    mark = tmp_path / "holding"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "simul",
            *eval_args(tiny_model, streams_file, "--threads", "2", "--out", str(out)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), HOLD_ENV: "1", MARK_ENV: str(mark)},
    )
    try:
        deadline = time.monotonic() + 300
        while not mark.exists():  # the first stream is written and the child waits
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert "terminated (SIGTERM) after" in err and f"--resume --out {out}" in err and "Traceback" not in err
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == STATUS_INTERRUPTED and run["streams_done"] == 1
    assert not (out / ".lock").exists()

    def decoded(run_dir: Path) -> list[tuple[str, str, int, list[int]]]:
        lines = (run_dir / "steps.jsonl").read_text().splitlines()
        return [(d["stream"], d["method"], d["step"], d["output_ids"]) for d in map(json.loads, lines)]

    first = read_streams(streams_file)[0]
    kept = decoded(out)
    assert [x[:3] for x in kept] == [
        (first.id, key, i) for key in ("rt", "ssbd-b0.2") for i in range(len(first.steps))
    ]
    # the resumed run decodes the other streams only and ends with what one uninterrupted run decodes
    args = eval_args(tiny_model, streams_file, "--threads", "2")
    resumed = runner.invoke(app, [*args, "--out", str(out), "--resume"])
    assert resumed.exit_code == 0, resumed.output
    whole = runner.invoke(app, [*args, "--out", str(tmp_path / "whole")])
    assert whole.exit_code == 0, whole.output
    assert decoded(out)[: len(kept)] == kept and decoded(out) == decoded(tmp_path / "whole")
    assert json.loads((out / "run.json").read_text())["status"] == STATUS_COMPLETE


def test_ctrl_c_while_scoring(
    tiny_model: Path, streams_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import simul.runs.evaluation

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    out = tmp_path / "run"
    with monkeypatch.context() as patch:
        patch.setattr(simul.runs.evaluation, "score", interrupted)
        result = runner.invoke(app, eval_args(tiny_model, streams_file, "--threads", "2", "--out", str(out)))
    text = " ".join(result.output.split())
    assert result.exit_code == 130
    assert "interrupted while scoring: all 4 streams were decoded and are kept" in text
    assert f"simul eval --resume --out {out}" in text
    assert json.loads((out / "run.json").read_text())["status"] == STATUS_INTERRUPTED
    resumed = runner.invoke(
        app, eval_args(tiny_model, streams_file, "--threads", "2", "--out", str(out), "--resume")
    )
    assert resumed.exit_code == 0, resumed.output
    assert json.loads((out / "run.json").read_text())["status"] == STATUS_COMPLETE
    # Ctrl-C while `simul score` scores: a message and 130, not a silent exit
    import simul.cli.score_cmd

    monkeypatch.setattr(simul.cli.score_cmd, "score", interrupted)
    stopped = runner.invoke(app, ["score", str(out)])
    assert stopped.exit_code == 130 and "interrupted before the command finished" in stopped.output


def test_allow_incomplete_reports_the_streams_scored(
    tiny_model: Path, streams_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "cut"
    request = EvalRequest(
        streams_file,
        [Method("rt")],
        EngineSettings(model=tiny_model, n_ctx=1024, threads=2),
        out=out,
        comet_model="none",
    )

    def stop_after_one(done: int, total: int) -> None:
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(Interrupted):
        run_evaluation(request, progress=stop_after_one)
    result = runner.invoke(app, ["score", str(out), "--allow-incomplete"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert f"1 of 4 streams from {out}" in " ".join(result.output.split())
    doc = runner.invoke(app, ["score", str(out), "--allow-incomplete", "--json", "--quiet"])
    assert (json.loads(doc.stdout)["streams"], json.loads(doc.stdout)["streams_total"]) == (1, 4)


def test_sigterm_in_a_forked_worker_ends_it_quietly() -> None:
    """OmniSTEval's SoftSegmenter (long-form scoring) forks a multiprocessing Pool and stops its workers with
    SIGTERM; a worker that inherited simul's handler must end as with the default handler (exit 143), not
    raise Terminated and print a traceback."""
    import os
    import signal
    import time

    from simul.cli.common import sigterm_as_interrupt

    with sigterm_as_interrupt():
        pid = os.fork()
        if pid == 0:  # the child never returns into pytest
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            except BaseException:
                os._exit(7)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 128 + signal.SIGTERM

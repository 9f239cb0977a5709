"""Progress when stderr is not a terminal (CI logs): plain lines with streams done and the time left."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from simul.cli import app
from simul.cli.running import PlainProgress
from simul.streams.format import write_streams
from tests.helpers import eval_args, make_streams

runner = CliRunner()


def test_plain_progress_prints_every_few_seconds_with_an_eta() -> None:
    now = [100.0]
    lines: list[str] = []
    progress = PlainProgress("decoding streams", every=10.0, clock=lambda: now[0], write=lines.append)
    progress.update(2, 12)  # two streams resumed from the run directory
    for done, at in ((3, 104.0), (4, 108.0), (5, 112.0), (6, 113.0), (12, 115.0)):
        now[0] = at
        progress.update(done, 12)
    assert lines == [
        "decoding streams: 2/12 streams to start with",
        # 3 streams decoded in 12 s: 4 s each, 7 left
        "decoding streams: 5/12 streams (41%), 0:00:12 elapsed, ETA 0:00:28",
        "decoding streams: 12/12 streams (100%), 0:00:15 elapsed, ETA 0:00:00",  # the last one always
    ]


def test_eval_prints_plain_progress_unless_quiet(tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "s.jsonl"
    write_streams(streams, make_streams()[:2])
    args = [a for a in eval_args(tiny_model, streams) if a != "--quiet"]
    loud = runner.invoke(app, args)  # CliRunner's stderr is not a terminal
    assert loud.exit_code == 0, loud.output
    assert "decoding streams: 0/2 streams to start with" in loud.output
    assert "decoding streams: 2/2 streams (100%)" in loud.output and "ETA" in loud.output
    quiet = runner.invoke(app, [*args, "--quiet"])
    assert quiet.exit_code == 0 and "streams to start with" not in quiet.output

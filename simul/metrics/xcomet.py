"""XCOMET (Guerreiro et al., 2024, "xCOMET: Transparent Machine Translation Evaluation through Fine-grained
Error Detection", TACL) scored in a child process.

``Unbabel/XCOMET-XL``, the IWSLT 2026 simultaneous track's ranking metric, is unbabel-comet's
``XCOMETMetric`` (``comet/models/multitask/xcomet_metric.py``): an XLM-RoBERTa-XL encoder read three times
per segment, on [mt:src], [mt:ref] and [mt:src:ref]; each gives a regression score (capped at 1) and a tag
per hypothesis token (O, minor, major, critical). The tags, averaged over the three inputs with weights
1/6, 1/3, 1/2, make the error spans; the spans make an MQM-like score, 1 - min(25, minor + 5 major + 10
critical) / 25; the segment score is 0.12, 0.33 and 0.33 times the three regression scores plus 0.22 times
the MQM score. The system score is the mean of the segment scores. simul calls the class's own ``predict``
and records its figures as they come: the segment scores (run.json's ``xcomet``, per_stream's ``xcomet``),
the spans and whether the model's input was cut at its 512 tokens (simul.metrics.xcomet_worker).

**Why a child process.** XCOMET-XL takes about 29 GB to load (simul.metrics.comet_model: its 14 GB fp32
checkpoint is read whole, then copied into the model). Where the kernel's out-of-memory killer ends the
process that holds it, a scorer inside simul's own process would take the run with it, its status left at
``running``. In a child process the kill reaches the child only: :class:`XcometScorer` reads the closed
pipe and the signal from the exit status and raises :class:`ScorerKilled`, which the run records as
``scoring_failed`` (simul.runs.evaluation) for `simul score RUN --comet-model ...` to finish where there is
more memory. The child loads the model once and serves every ``score`` call of a run (one per method).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from simul.common.errors import SimulError
from simul.machine.memory import gib
from simul.metrics.comet_model import (
    CometScores,
    ScorerKilled,
    SegmentDetail,
    check_memory,
    comet_version,
    memory_needed,
)

__all__ = ["ScorerKilled", "XcometScorer"]

WORKER = "simul.metrics.xcomet_worker"


def _stop(process: subprocess.Popen[str], log: IO[bytes]) -> None:
    """End the child (its stdin closed, then a wait; killed if it does not end) and close its log."""
    if process.poll() is None:
        try:
            if process.stdin is not None:
                process.stdin.close()
            process.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
    log.close()


class XcometScorer:
    """An XCOMET model loaded in a child process (simul.metrics.xcomet_worker)."""

    kind = "xcomet"
    needs_source = True

    def __init__(self, model: str, batch_size: int, checkpoint: Path) -> None:
        self.model = model
        self.version = comet_version()
        self.batch_size = batch_size
        self.checkpoint = str(checkpoint)
        self.needed = memory_needed(checkpoint)
        check_memory(checkpoint, model)
        self._log: IO[bytes] = tempfile.TemporaryFile(prefix="simul-xcomet-")  # noqa: SIM115 (closed by _stop)
        env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
        root = str(Path(__file__).resolve().parents[2])  # the folder holding simul, for a source checkout
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        self._process = subprocess.Popen(
            [sys.executable, "-m", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            encoding="utf-8",
            env=env,
        )
        self._finalizer = weakref.finalize(self, _stop, self._process, self._log)
        answer = self._ask({"op": "load", "checkpoint": self.checkpoint}, "loading")
        self.max_tokens = int(answer["max_tokens"])

    def close(self) -> None:
        self._finalizer()

    def _stderr_tail(self) -> str:
        self._log.seek(0)
        lines = [
            line
            for line in self._log.read().decode("utf-8", "replace").splitlines()
            if line.strip() and "Warning" not in line
        ]
        return lines[-1].strip()[:300] if lines else ""

    def _ask(self, request: dict[str, Any], doing: str) -> dict[str, Any]:
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps(request, ensure_ascii=False) + "\n")
            process.stdin.flush()
            line = process.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            raise self._death(doing)
        answer = json.loads(line)
        if not answer.get("ok"):
            message = f"XCOMET failed while {doing} {self.model}: {answer.get('error')}"
            if doing == "loading":
                self.close()
            raise SimulError(message)
        return dict(answer)

    def _death(self, doing: str) -> SimulError:
        """The error for a child that ended without answering: killed by a signal, or exited."""
        code = self._process.wait()
        self.close()
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            oom = (
                " (on Linux SIGKILL is most often the out-of-memory killer: `dmesg` or `journalctl -k` says "
                "so)"
                if -code == signal.SIGKILL
                else ""
            )
            return ScorerKilled(
                f"the XCOMET process was killed by {name} while {doing} {self.model}{oom}; loading and "
                f"scoring it needs about {gib(self.needed)}. Score the run again where there is more memory "
                f"(or with a smaller --comet-batch-size than {self.batch_size})"
            )
        tail = self._stderr_tail()
        return SimulError(
            f"the XCOMET process exited with status {code} while {doing} {self.model}"
            + (f": {tail}" if tail else "")
        )

    def score(self, sources: Sequence[str], outputs: Sequence[str], references: Sequence[str]) -> CometScores:
        data = [{"src": s, "mt": m, "ref": r} for s, m, r in zip(sources, outputs, references, strict=True)]
        if not data:
            return CometScores(0.0, [], self.model, self.version, self.batch_size, kind="xcomet", details=[])
        answer = self._ask({"op": "score", "data": data, "batch_size": self.batch_size}, "scoring with")
        segments = [float(x) for x in answer["scores"]]
        details = [
            SegmentDetail(spans=d["spans"], truncated=bool(d["truncated"]), tokens=d["tokens"])
            for d in answer["details"]
        ]
        return CometScores(
            system=sum(segments) / len(segments),
            segments=segments,
            model=self.model,
            version=self.version,
            batch_size=self.batch_size,
            kind="xcomet",
            details=details,
            max_tokens=self.max_tokens,
        )

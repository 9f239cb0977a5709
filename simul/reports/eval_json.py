"""The --json document of `simul eval`: the methods with their metrics, the run's status and context, and
which timings are unreliable (simul.reports.timing_notes)."""

from __future__ import annotations

from typing import Any

from simul.reports.timing_notes import TimingNotes
from simul.runs.directory import STATUS_COMPLETE, STATUS_INTERRUPTED
from simul.runs.evaluation import EvalOutcome


def summary_json(outcome: EvalOutcome) -> dict[str, Any]:
    """The --json document of eval: the spec'd shape plus context."""
    return {
        "methods": [
            {k: m[k] for k in ("name", "beta", "mask_k", "mask", "key", "label", "metrics")}
            for m in outcome.scored.methods_json()
        ],
        "run_dir": str(outcome.run_dir) if outcome.run_dir else None,
        "status": STATUS_COMPLETE if outcome.complete else STATUS_INTERRUPTED,
        "streams": outcome.streams_done,
        "streams_total": outcome.streams_total,
        "signatures": outcome.scored.signatures,
        "comet": outcome.scored.comet,
        "model": outcome.run["config"]["model"]["name"],
        "timing_unreliable": TimingNotes.from_run(outcome.run).unreliable,
        "throughput": outcome.run.get("throughput"),
    }

"""Rounds of one benchmark: the same evaluation N times, taking turns in one process (`simul bench --rounds`).

Each round decodes every stream with every method (simul.runs.side_by_side gives the rounds turns, so a
slow spell of the machine meets them all at the same stage). What the rounds add is the spread of the speed
figures (simul.metrics.intervals); their outputs must not differ, since a stream's result is a function of
the stream, the method, the model and the settings alone: :func:`differing_outputs` names every update
where another round's output is not round 1's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simul.metrics.intervals import run_intervals
from simul.request.methods import Method
from simul.runs.evaluation import EvalOutcome
from simul.runs.side_by_side import LaneRecord


def differing_outputs(outcomes: Sequence[EvalOutcome]) -> list[str]:
    """ "round R: METHOD on STREAM, update U" for every update whose output is not round 1's."""
    first = outcomes[0].results
    out: list[str] = []
    for number, outcome in enumerate(outcomes[1:], start=2):
        for key, results in outcome.results.items():
            theirs = {r.stream_id: r for r in first.get(key, [])}
            for result in results:
                base = theirs.get(result.stream_id)
                steps = [] if base is None else base.steps
                for index, step in enumerate(result.steps):
                    if index >= len(steps) or steps[index].output_ids != step.output_ids:
                        out.append(f"round {number}: {key} on {result.stream_id}, update {index + 1}")
    return out


def rounds_record(
    methods: Sequence[Method], outcomes: Sequence[EvalOutcome], lanes: Sequence[LaneRecord]
) -> dict[str, Any] | None:
    """run.json's ``speed_intervals`` over every round, with each round's turns (wall, CPU/wall, load)."""
    record = run_intervals(methods, [o.results for o in outcomes])
    if record is not None:
        record["lanes"] = [lane.to_json() for lane in lanes]
    return record

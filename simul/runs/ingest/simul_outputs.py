"""simul's stream format with the system's outputs: a stream line plus an ``outputs`` list, one per step.

Each entry of ``outputs`` is the text the system produced at that step, or an object ``{"output": TEXT,
"display": TEXT, "seconds": NUMBER}`` where ``display`` (what was shown, default the output) and
``seconds`` (the update's wall-clock) are optional. Update times count as available only when every step
of every stream gives one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simul.common.errors import SimulError
from simul.runs.ingest.jsonl import read_objects
from simul.runs.ingest.system import SystemOutputs, SystemStream, Update
from simul.streams.format import stream_from_json


def _entry(value: Any, where: str) -> tuple[str, str | None, float | None]:
    if isinstance(value, str):
        return value, None, None
    if not isinstance(value, dict) or not isinstance(value.get("output"), str):
        raise SimulError(f"{where}: each output must be a string or an object with a string 'output'")
    unknown = set(value) - {"output", "display", "seconds"}
    if unknown:
        raise SimulError(
            f"{where}: unknown output field(s) {sorted(unknown)}; allowed: output, display, seconds"
        )
    display = value.get("display")
    if display is not None and not isinstance(display, str):
        raise SimulError(f"{where}: 'display' must be a string")
    seconds = value.get("seconds")
    if seconds is not None and (
        isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0
    ):
        raise SimulError(f"{where}: 'seconds' must be a non-negative number")
    return value["output"], display, None if seconds is None else float(seconds)


def read(path: Path) -> SystemOutputs:
    result: list[SystemStream] = []
    timed_everywhere = True
    for where, obj in read_objects(path, "stream file with outputs"):
        stream = stream_from_json(obj, where)
        outputs = obj.get("outputs")
        if not isinstance(outputs, list):
            raise SimulError(f"{where}: no 'outputs' list; add one output per step")
        if len(outputs) != len(stream.steps):
            raise SimulError(
                f"{where}: {len(stream.steps)} steps but {len(outputs)} outputs; give one per step"
            )
        updates = []
        for index, (step, value) in enumerate(zip(stream.steps, outputs, strict=True)):
            output, display, seconds = _entry(value, f"{where}, output {index}")
            timed_everywhere = timed_everywhere and seconds is not None
            updates.append(
                Update(
                    source=step.source, output=output, time_ms=step.time_ms, display=display, seconds=seconds
                )
            )
        result.append(SystemStream(id=stream.id, updates=updates, where=where, source=stream.final_source))
    missing = {"draft", "model_tokens"} | (set() if timed_everywhere else {"timing"})
    return SystemOutputs(streams=result, not_available=missing, notes=["simul stream file with outputs"])

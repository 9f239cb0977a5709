"""SimulEval's ``instances.log`` (SimulEval 1.1.4): one JSON object per instance.

Fields: ``index``, ``prediction`` (the final text), ``delays`` (one per target unit: source words for text
input, milliseconds for speech), ``elapsed``, ``source``, ``source_length``, ``reference``. simul's own export
adds ``id``. SimulEval's target is append-only: the log records no revisions, only when each unit was
emitted. simul rebuilds one update per distinct delay, whose output is the units emitted by then; erasure is
therefore not available (it would be zero by construction), nor are timings or draft acceptance.

Instances are joined to the stream file by ``id`` when present, else by their source text; an instance that
matches no stream is an error. Units: ``word`` (``prediction.split()``) or ``char`` (the characters of the
stripped prediction, as simul's export writes them; SimulEval's own char logs have no spaces).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from pathlib import Path

from simul.common.errors import SimulError
from simul.metrics.units import TARGET_UNITS, target_unit, units
from simul.runs.ingest.jsonl import read_objects
from simul.runs.ingest.positions import source_at
from simul.runs.ingest.system import SystemOutputs, SystemStream, Update
from simul.streams.format import Stream


def _normal(text: str) -> str:
    return " ".join(text.split())


def read(path: Path, streams: Mapping[str, Stream], unit: str | None) -> SystemOutputs:
    if unit is not None and unit not in TARGET_UNITS:
        raise SimulError(f"unknown SimulEval latency unit {unit!r}; choose one of {', '.join(TARGET_UNITS)}")
    by_source = {_normal(s.final_source): s for s in streams.values()}
    result: list[SystemStream] = []
    for where, obj in read_objects(path, "SimulEval instances.log"):
        stream = _match(obj, streams, by_source, where)
        prediction = obj.get("prediction")
        if not isinstance(prediction, str):
            raise SimulError(f"{where}: 'prediction' must be a string")
        delays = obj.get("delays")
        if not isinstance(delays, list) or not all(
            isinstance(d, int | float) and not isinstance(d, bool) for d in delays
        ):
            raise SimulError(f"{where}: 'delays' must be a list of numbers, one per target unit")
        unit_here = unit or target_unit(stream.tgt)
        pieces = units(prediction, unit_here)
        if len(pieces) != len(delays):
            raise SimulError(
                f"{where}: the prediction has {len(pieces)} {unit_here} units but there are "
                f"{len(delays)} delays; "
                "pass the log's latency unit with --unit word|char"
            )
        if any(b < a for a, b in pairwise(delays)):
            raise SimulError(f"{where}: 'delays' go backwards; SimulEval's target is append-only")
        updates: list[Update] = []
        joiner = "" if unit_here == "char" else " "
        for i, d in enumerate(delays):
            if i + 1 < len(delays) and delays[i + 1] == d:
                continue
            shown = prediction.strip() if i + 1 == len(delays) else joiner.join(pieces[: i + 1])
            source, time_ms = source_at(stream, float(d))
            updates.append(Update(source=source, output=shown, time_ms=time_ms))
        if not updates:
            updates.append(Update(source=stream.final_source, output="", time_ms=stream.steps[-1].time_ms))
        result.append(SystemStream(id=stream.id, updates=updates, where=where))
    return SystemOutputs(
        streams=result,
        not_available={"draft", "model_tokens", "timing", "revisions"},
        notes=[
            "SimulEval instances.log: append-only, no revisions recorded (NE not available); one update per "
            "distinct delay"
        ],
    )


def _match(
    obj: dict[str, object], streams: Mapping[str, Stream], by_source: Mapping[str, Stream], where: str
) -> Stream:
    stream_id = obj.get("id")
    if stream_id is not None:
        if not isinstance(stream_id, str) or stream_id not in streams:
            raise SimulError(
                f"{where}: id {stream_id!r} is not in the stream file; instances are joined to "
                "references by id"
            )
        return streams[stream_id]
    source = obj.get("source")
    if isinstance(source, list):
        source = " ".join(str(x) for x in source)
    if not isinstance(source, str) or _normal(source) not in by_source:
        raise SimulError(
            f"{where}: the instance has no 'id' and its source matches no stream of the stream file; "
            "instances are joined to references by id (or by their complete source)"
        )
    return by_source[_normal(source)]

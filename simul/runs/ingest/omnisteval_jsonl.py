"""OmniSTEval's long-form hypothesis file (OmniSTEval 0.1.10, ``omnisteval longform``, JSONL hypotheses).

One JSON object per talk (``omnisteval/data.py``, ``load_hypothesis_jsonl``): ``source`` names the recording
(a string, or a list whose first item is the name; OmniSTEval matches it to the segmentation's ``wav``
without its folder and extension), ``prediction`` is the talk's final output, ``delays`` one
computation-unaware emission time per output unit and ``elapsed`` (optional) one computation-aware time,
both in milliseconds on the talk's clock, and ``source_length`` the recording's length. simul's own export
also writes ``id`` (the talk id) and uses a source word as the position of text documents.

Talks are joined to the long-form streams of the stream file by ``id`` when present, else by the
recording's name (``omnisteval_files.read_hypotheses``, which also parses and checks each line). Like
SimulEval's log the file is append-only: it keeps when each unit of the final output appeared, not the
revisions before. simul rebuilds one update per distinct (delay, elapsed): the longest
prefix of units whose delays have all passed, emitted at the largest of their delays, with the largest of
their elapsed times as the update's computation-aware time. Erasure, timings, model tokens and draft
acceptance are therefore not available. Units: ``word`` (``prediction.split()``, OmniSTEval's
``--word_level``) or ``char`` (the characters of the stripped prediction, ``--char_level``): ``--unit``, else
the line's ``unit`` (simul's export writes it), else the target language's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError
from simul.metrics.longform.omnisteval_files import read_hypotheses
from simul.metrics.units import TARGET_UNITS, target_unit, units
from simul.runs.ingest.positions import source_at
from simul.runs.ingest.system import SystemOutputs, SystemStream, Update
from simul.streams.format import Stream

WHAT = "OmniSTEval long-form JSONL"


def _talk(obj: dict[str, Any], streams: Mapping[str, Stream], where: str) -> Stream:
    talk_id = obj.get("id", obj["talk"])
    if not isinstance(talk_id, str) or talk_id not in streams:
        raise SimulError(
            f"{where}: talk {talk_id!r} is not a stream id of the stream file; talks are joined to their "
            "references by id (or by the recording's name without folder and extension)"
        )
    stream = streams[talk_id]
    if not stream.longform:
        raise SimulError(
            f"{where}: stream {talk_id!r} is not long-form; --format omnisteval reads whole talks "
            "(for a SimulEval instances.log of sentences use --format simuleval)"
        )
    return stream


def read(path: Path, streams: Mapping[str, Stream], unit: str | None) -> SystemOutputs:
    if unit is not None and unit not in TARGET_UNITS:
        raise SimulError(f"unknown OmniSTEval unit {unit!r}; choose one of {', '.join(TARGET_UNITS)}")
    if not path.is_file():
        raise SimulError(f"{WHAT} {path} {'is a directory' if path.is_dir() else 'does not exist'}")
    result: list[SystemStream] = []
    with_elapsed = 0
    # parsed and checked line by line (JSON, 'prediction', 'source', numbers) by the long-form scorer's reader
    for obj in read_hypotheses(path):
        where = f"{path}:{obj['line']}"
        stream = _talk(obj, streams, where)
        prediction = obj["prediction"]
        written = obj.get("unit")  # simul's own export states its unit
        unit_here = unit or (written if written in TARGET_UNITS else target_unit(stream.tgt))
        pieces = units(prediction, unit_here)
        delays = obj.get("delays")
        if delays is None:
            raise SimulError(f"{where}: no 'delays'; give one emission time (ms) per output unit")
        elapsed = obj.get("elapsed")
        for key, values in (("delays", delays), ("elapsed", elapsed)):
            if values is None:
                continue
            if any(v < 0 for v in values):
                raise SimulError(f"{where}: {key!r} must be 0 or more (ms on the talk's clock)")
            if len(values) != len(pieces):
                raise SimulError(
                    f"{where}: the prediction has {len(pieces)} {unit_here} units but there are "
                    f"{len(values)} {key}; pass the file's unit with --unit word|char"
                )
        with_elapsed += elapsed is not None
        updates = _updates(stream, prediction, pieces, list(delays), elapsed and list(elapsed), unit_here)
        result.append(SystemStream(id=stream.id, updates=updates, where=where))
    if with_elapsed and with_elapsed != len(result):
        raise SimulError(
            f"{path}: 'elapsed' is on {with_elapsed} of {len(result)} talks; give it on every talk or on none"
        )
    return SystemOutputs(
        streams=result,
        not_available={"draft", "model_tokens", "timing", "revisions"},
        notes=[
            "OmniSTEval long-form JSONL: append-only, no revisions recorded (NE not available); one update "
            "per distinct emission time"
            + ("" if with_elapsed else "; no 'elapsed', so computation-aware latency is not available")
        ],
    )


def _updates(
    stream: Stream,
    prediction: str,
    pieces: list[str],
    delays: list[float],
    elapsed: list[float] | None,
    unit: str,
) -> list[Update]:
    joiner = "" if unit == "char" else " "
    updates: list[Update] = []
    time = ca = 0.0
    for count in range(1, len(pieces) + 1):
        time = max(time, delays[count - 1]) if count > 1 else delays[0]
        if elapsed is not None:
            ca = max(ca, elapsed[count - 1]) if count > 1 else elapsed[0]
        last = count == len(pieces)
        if not last and delays[count] <= time and (elapsed is None or elapsed[count] <= ca):
            continue  # the next unit appeared with this one
        source, time_ms = source_at(stream, time)
        shown = prediction.strip() if last else joiner.join(pieces[:count])
        updates.append(
            Update(source=source, output=shown, time_ms=time_ms, elapsed_ms=None if elapsed is None else ca)
        )
    if not updates:
        updates.append(Update(source=stream.final_source, output="", time_ms=stream.steps[-1].time_ms))
    return updates

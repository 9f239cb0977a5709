"""simulstream's metrics log (simulstream 1.0.0, ``simulstream.metrics.readers.LogReader``).

The server writes one JSON object per line: ``{"id": N, "metadata": {"wav_name": PATH}}`` when client N
starts an audio file, then per update ``{"id": N, "total_audio_processed": SECONDS, "computation_time":
SECONDS, "generated_tokens": [...], "deleted_tokens": [...]}``; other lines (``model_loading_time``) carry no
id. An update first deletes ``deleted_tokens`` from the end of the tokens so far, then appends
``generated_tokens``; the text is the tokens detokenized. simul reads the detokenizers that need no model:
simulstream's ``simuleval`` detokenizer with unit ``word`` (tokens joined by spaces), ``char`` (joined as
they are) or ``spm`` (joined, ``▁`` made a space).

Streams are joined by the audio file's stem (``Path(wav_name).stem``) to stream ids. Positions: the update's
``total_audio_processed`` times 1000 is milliseconds for timed streams and source words for text streams
(`simul export --format simulstream` writes a word as a millisecond). ``computation_time`` is kept as the
update's wall-clock. The log holds no draft acceptance and no model tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

from simul.common.errors import SimulError
from simul.runs.ingest.jsonl import number, read_objects, string_list
from simul.runs.ingest.positions import source_at
from simul.runs.ingest.system import SystemOutputs, SystemStream, Update
from simul.streams.format import Stream

SimulstreamUnit = Literal["word", "char", "spm"]  # the token units of simulstream's detokenizers
DETOKENIZERS: dict[SimulstreamUnit, Callable[[list[str]], str]] = {
    "word": lambda tokens: " ".join(tokens),
    "char": lambda tokens: "".join(tokens),
    "spm": lambda tokens: "".join(tokens).replace("\u2581", " ").strip(),
}


def read(path: Path, streams: Mapping[str, Stream], unit: str) -> SystemOutputs:
    if unit not in DETOKENIZERS:
        raise SimulError(f"unknown simulstream token unit {unit!r}; choose one of {', '.join(DETOKENIZERS)}")
    detok = DETOKENIZERS[unit]
    names: dict[int | str, tuple[str, str]] = {}  # client id -> (stream id, where)
    tokens: dict[int | str, list[str]] = {}
    updates: dict[int | str, list[Update]] = {}
    order: list[int | str] = []
    for where, obj in read_objects(path, "simulstream log"):
        if "id" not in obj:
            continue
        client = obj["id"]
        if isinstance(client, bool) or not isinstance(client, int | str):
            raise SimulError(f"{where}: 'id' must be the client number, got {client!r}")
        key = client
        if "metadata" in obj:
            meta = obj["metadata"]
            wav = meta.get("wav_name") if isinstance(meta, dict) else None
            if not isinstance(wav, str) or not wav:
                raise SimulError(
                    f"{where}: metadata needs 'wav_name' (the audio file whose stem is the stream id)"
                )
            if key in names:
                raise SimulError(
                    f"{where}: client {client!r} starts a second audio file; one file per client id"
                )
            names[key] = (Path(wav).stem, where)
            tokens[key] = []
            updates[key] = []
            order.append(key)
            continue
        if key not in names:
            raise SimulError(f"{where}: client {client!r} has no metadata line with its wav_name before it")
        stream_id = names[key][0]
        stream = streams.get(stream_id)
        if stream is None:
            raise SimulError(
                f"{names[key][1]}: audio {stream_id!r} is not a stream id of the stream file; streams are "
                "joined to references by id, so the log must name the same ids"
            )
        generated = string_list(obj, "generated_tokens", where, "see simulstream's metrics log format")
        deleted = string_list(obj, "deleted_tokens", where, "see simulstream's metrics log format")
        seconds = number(obj, "total_audio_processed", where)
        compute = number(obj, "computation_time", where)
        current = tokens[key]
        if deleted:
            if len(deleted) > len(current) or current[-len(deleted) :] != deleted:
                raise SimulError(
                    f"{where}: deleted_tokens {deleted!r} are not the last tokens emitted so far; the log is "
                    "inconsistent"
                )
            current = current[: -len(deleted)]
        current = current + generated
        tokens[key] = current
        source, time_ms = source_at(stream, seconds * 1000.0)
        text = detok(current)
        # simulstream's LogReader: a timed update is emitted, computation-aware, at the audio processed plus
        # its computation time (no backlog carried over); long-form runs keep that rule
        elapsed = (seconds + compute) * 1000.0 if stream.longform and stream.timed else None
        updates[key].append(
            Update(source=source, output=text, time_ms=time_ms, seconds=compute, elapsed_ms=elapsed)
        )
    result = []
    for key in order:
        stream_id, where = names[key]
        if not updates[key]:
            raise SimulError(f"{where}: audio {stream_id!r} has no update lines")
        result.append(SystemStream(id=stream_id, updates=updates[key], where=where))
    return SystemOutputs(
        streams=result,
        not_available={"draft", "model_tokens"},
        notes=[f"simulstream log, {unit} tokens; update time is simulstream's computation_time"],
    )

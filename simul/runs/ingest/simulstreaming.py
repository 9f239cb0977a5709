"""SimulStreaming's translation output (ufal/SimulStreaming, ``simulstreaming_translate.py``): JSONL per talk.

Each line is one partial output of the LLM translator: ``emission_time`` (seconds on the talk's clock:
the length of the audio received in its computation-unaware simulation, ``--comp_unaware``, and real time
since the start in the computation-aware one), ``end`` (the end of the last processed audio segment),
``status`` (``INCOMPLETE`` while an update is being computed, ``COMPLETE`` when it is done), ``text``,
``unconfirmed_text`` and ``is_final`` (the recognizer detected the end of a voiced segment; the unconfirmed
text is then confirmed and the translator starts afresh).

``text`` is the target *confirmed by the current update* (LocalAgreement: it will not change), cumulative
over the lines of one update and repeated on its ``COMPLETE`` line; ``unconfirmed_text`` is the rest of the
current translation, which later updates may revise. So the talk's confirmed target after a line is the
``text`` of every earlier ``COMPLETE`` line joined, plus this line's ``text``, and what the viewer sees (the
update's talk-level output and display) is that confirmed target followed by the unconfirmed text. Pieces
are joined with one space, or with nothing for targets written without spaces (zh, ja), as SimulStreaming
joins them. A line that changes neither the displayed text nor the confirmed part is not a new update.

The file records no computation time, no model tokens and no draft acceptance: the update time is
``emission_time`` (in milliseconds, computation-unaware when the file comes from ``--comp_unaware``, which
is the run to score; a computation-aware file's times already include the computation) and the
computation-aware time (``elapsed_ms``) is not available. ``committed_chars`` is the length of the confirmed
target.

A file holds one talk: it is joined to the stream file by its name without the extension (``talk1.jsonl``
is talk ``talk1``), or to the only long-form stream when the stream file holds one. A folder of such files
is read as one file per talk.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError
from simul.runs.ingest.jsonl import number, read_objects
from simul.runs.ingest.positions import source_at
from simul.runs.ingest.system import SystemOutputs, SystemStream, Update
from simul.streams.format import Stream, join_texts

WHAT = "SimulStreaming translation output"
STATUSES = ("INCOMPLETE", "COMPLETE")


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix == ".jsonl" and p.is_file())
        if not files:
            raise SimulError(f"{path} holds no .jsonl files; pass a SimulStreaming output file per talk")
        return files
    return [path]


def _talk(path: Path, streams: Mapping[str, Stream], single: bool) -> Stream:
    stream = streams.get(path.stem)
    if stream is None:
        talks = [s for s in streams.values() if s.longform]
        if single and len(talks) == 1:
            return talks[0]
        raise SimulError(
            f"{path}: {path.stem!r} is not a stream id of the stream file; a SimulStreaming output holds one "
            "talk and is joined to its references by the file's name: name it <talk id>.jsonl"
        )
    if not stream.longform:
        raise SimulError(
            f"{path}: stream {stream.id!r} is not long-form; --format simulstreaming reads whole talks"
        )
    if not stream.timed:
        raise SimulError(
            f"{path}: talk {stream.id!r} has no times on its steps; SimulStreaming's emission_time is in "
            "seconds on the talk's clock, so the talk needs time_ms (build it with `simul streams`)"
        )
    return stream


def _text(obj: dict[str, Any], key: str, where: str) -> str:
    value = obj.get(key, "")
    if not isinstance(value, str):
        raise SimulError(f"{where}: {key!r} must be a string")
    return value


def read_talk(path: Path, stream: Stream) -> SystemStream:
    """The updates of one talk's output file (see the module docstring)."""
    confirmed_pieces: list[str] = []  # the ``text`` of every COMPLETE line so far
    updates: list[Update] = []
    previous_time = 0.0
    first_where = None
    for where, obj in read_objects(path, WHAT):
        first_where = first_where or where
        if "unconfirmed_text" not in obj and "status" not in obj:
            looks = "Whisper's (ASR) output" if "words" in obj or "tokens" in obj else "another file"
            raise SimulError(
                f"{where}: no 'unconfirmed_text' and no 'status'; this looks like {looks}, not the output of "
                "simulstreaming_translate.py"
            )
        seconds = number(obj, "emission_time", where)
        if seconds < 0:
            raise SimulError(f"{where}: 'emission_time' must be 0 or more seconds")
        if seconds < previous_time:
            raise SimulError(
                f"{where}: 'emission_time' goes backwards ({seconds:g} s < {previous_time:g} s); the lines "
                "must be in the order SimulStreaming wrote them"
            )
        previous_time = seconds
        status = obj.get("status", "COMPLETE")
        if status not in STATUSES:
            raise SimulError(f"{where}: 'status' must be INCOMPLETE or COMPLETE, got {status!r}")
        text = _text(obj, "text", where)
        unconfirmed = _text(obj, "unconfirmed_text", where)
        if "is_final" in obj and not isinstance(obj["is_final"], bool):
            raise SimulError(f"{where}: 'is_final' must be true or false")
        confirmed = join_texts([*confirmed_pieces, text], stream.tgt)
        shown = join_texts([confirmed, unconfirmed], stream.tgt)
        if status == "COMPLETE":
            confirmed_pieces.append(text)
        if updates and updates[-1].output == shown and updates[-1].committed_chars == len(confirmed):
            continue
        source, time_ms = source_at(stream, seconds * 1000.0)
        updates.append(Update(source=source, output=shown, time_ms=time_ms, committed_chars=len(confirmed)))
    if not updates:
        raise SimulError(f"{path} holds no output lines")
    return SystemStream(id=stream.id, updates=updates, where=first_where or str(path))


def read(path: Path, streams: Mapping[str, Stream]) -> SystemOutputs:
    if not path.exists():
        raise SimulError(f"{WHAT} {path} does not exist")
    files = _files(path)
    result = [read_talk(file, _talk(file, streams, single=len(files) == 1)) for file in files]
    return SystemOutputs(
        streams=result,
        not_available={"draft", "model_tokens", "timing"},
        notes=[
            "SimulStreaming translation output: update time is emission_time; no computation time "
            "(computation-aware latency not available)"
        ],
    )

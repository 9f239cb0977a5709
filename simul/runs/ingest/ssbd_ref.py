"""The SSBD reference implementation's files (llama.cpp ``examples/self-spec-bias``, commit 82c35ea).

Its stream file (``stream.jsonl``, one object per source line) holds ``stream_ins``, the requests in order,
each the source known so far; ``id`` (default ``<file name>:<0-based line>``), ``source`` (default the last
request) and ``segmentation`` are optional. ``llama-self-spec-bias -o out.jsonl`` writes the same object with
``stream_outs`` added: ``stream_outs[i]`` is the answer to ``stream_ins[i]`` (after ``--output-mask-k``, i.e.
what was sent), the last one the completed translation. References are joined by ``id``, never by line.
The output records no timings and no draft acceptance.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError
from simul.request.templates import SOURCE_SLOT
from simul.runs.ingest.jsonl import read_objects, string_list
from simul.runs.ingest.system import SystemOutputs, SystemStream, Update
from simul.streams.format import Stream

FIX = "write the file as llama-self-spec-bias -o writes it (see its README, 'Scoring')"


def read(path: Path) -> SystemOutputs:
    streams: list[SystemStream] = []
    for where, obj in read_objects(path, "SSBD reference output"):
        ins = string_list(obj, "stream_ins", where, FIX)
        if not ins:
            raise SimulError(f"{where}: 'stream_ins' is empty; every record needs at least one request")
        if "stream_outs" not in obj:
            raise SimulError(
                f"{where}: no 'stream_outs'; this looks like an input stream.jsonl, not an output"
            )
        outs = string_list(obj, "stream_outs", where, FIX)
        if len(outs) != len(ins):
            raise SimulError(
                f"{where}: {len(ins)} stream_ins but {len(outs)} stream_outs; "
                "there must be one answer per request"
            )
        number = int(where.rsplit(":", 1)[1])
        stream_id = obj.get("id", f"{path.name}:{number - 1}")
        if not isinstance(stream_id, str) or not stream_id:
            raise SimulError(f"{where}: 'id' must be a non-empty string")
        source = obj.get("source", ins[-1])
        if not isinstance(source, str):
            raise SimulError(f"{where}: 'source' must be a string")
        updates = [Update(source=i, output=o) for i, o in zip(ins, outs, strict=True)]
        streams.append(SystemStream(id=stream_id, updates=updates, where=where, source=source))
    return SystemOutputs(
        streams=streams,
        not_available={"draft", "model_tokens", "timing"},
        notes=["SSBD reference output: stream_outs only (no timings, no draft acceptance)"],
    )


def stream_record(stream: Stream) -> dict[str, Any]:
    """A stream as a line of the reference's ``stream.jsonl`` (its input)."""
    segmentation: dict[str, Any] = {"policy": "simul"}
    lag = stream.provenance.get("lag")
    if isinstance(lag, int) and not isinstance(lag, bool):
        segmentation = {"policy": "interval", "n": lag}
    return {
        "id": stream.id,
        "source": stream.final_source,
        "segmentation": segmentation,
        "stream_ins": [step.source for step in stream.steps],
    }


def stream_lines(streams: Sequence[Stream]) -> str:
    return "".join(json.dumps(stream_record(s), ensure_ascii=False) + "\n" for s in streams)


def prompt_halves(prompt: str, where: str) -> tuple[str, str]:
    """A run's recorded prompt (run.json ``config.model.prompt``, rendered with ``{source}`` in the source's
    place) as the reference's ``--in-prefix`` and ``--in-suffix``.

    The reference tokenizes prefix + source + suffix as one text with special tokens parsed, as simul does
    for a source that holds no special-token text (simul.decoding.stream.StreamDecoder.tokenize_prompt), so
    the two tools start every update from the same prompt tokens.
    """
    count = prompt.count(SOURCE_SLOT)
    if count != 1:
        raise SimulError(
            f"{where}: the run's prompt holds {SOURCE_SLOT} {count} times, not once, so where the source "
            "goes is not known; export the prompt of a run made with another --template"
        )
    before, after = prompt.split(SOURCE_SLOT)
    return before, after

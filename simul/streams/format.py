"""The stream file format: JSONL, one stream per line, versioned and self-describing.

A line looks like::

    {"format": "simul-stream", "version": 1, "id": "flores200-devtest-1", "src": "en", "tgt": "de",
     "steps": [{"source": "We now have", "final": false}, ..., {"source": "... he added.", "final": true}],
     "reference": "...", "provenance": {"dataset": "flores200", "split": "devtest", "line": 1, "lag": 3}}

Each step holds the whole source prefix known at that moment (not a delta), so steps from a speech
recognizer may revise, shrink or repeat words; nothing here assumes a step extends the previous one.
``time_ms`` (optional) is when the step became known, relative to the start of the stream's audio.
Exactly the last step is final. ``reference`` may be null when there is none.

A stream with several references (WMT's refA and refB, for example) stores them as ``"references": [...]``
in a version-2 record instead of ``reference``; a stream with one reference is written as version 1, as
before, so files without several references stay readable by older simul. Version-1 readers refuse version 2
with a message rather than scoring against the first reference only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError
from simul.common.files import atomic_file, check_writable_file, os_error_message
from simul.common.languages import get_language
from simul.common.limits import as_float, check_source, check_steps, loads, nonblank_lines

FORMAT_NAME = "simul-stream"
FORMAT_VERSION = 1
# Written only for streams with several references (the ``references`` list); read like version 1.
MULTI_REFERENCE_VERSION = 2
READ_VERSIONS = (FORMAT_VERSION, MULTI_REFERENCE_VERSION)


@dataclass(frozen=True)
class Step:
    """The source known at one moment of a stream."""

    source: str
    final: bool = False
    time_ms: float | None = None
    # Extra per-step facts an importer wants to keep (for example the audio time without compute time).
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "final": self.final}
        if self.time_ms is not None:
            out["time_ms"] = round(self.time_ms, 1)
        if self.extra:
            out["extra"] = self.extra
        return out


@dataclass(frozen=True)
class Stream:
    """One sentence or utterance whose source arrives in steps; the last step is the complete source."""

    id: str
    src: str
    tgt: str
    steps: tuple[Step, ...]
    reference: str | None = None  # the first reference (the one COMET and latency use)
    provenance: dict[str, Any] = field(default_factory=dict, compare=False)
    more_references: tuple[str, ...] = ()  # the second, third, ... reference

    @property
    def references(self) -> tuple[str, ...]:
        """Every reference, the first one first; empty when the stream has none."""
        return () if self.reference is None else (self.reference, *self.more_references)

    @property
    def final_source(self) -> str:
        return self.steps[-1].source

    @property
    def timed(self) -> bool:
        return all(step.time_ms is not None for step in self.steps)

    def to_json(self) -> dict[str, Any]:
        several = len(self.references) > 1
        out: dict[str, Any] = {
            "format": FORMAT_NAME,
            "version": MULTI_REFERENCE_VERSION if several else FORMAT_VERSION,
            "id": self.id,
            "src": self.src,
            "tgt": self.tgt,
            "steps": [step.to_json() for step in self.steps],
            "provenance": self.provenance,
        }
        if several:
            out["references"] = list(self.references)
        else:
            out["reference"] = self.reference
        return out

    def validate(self) -> None:
        """Raise ValueError (with a message that says what to fix) if the stream breaks the format's rules."""
        if not self.id:
            raise ValueError("stream id is empty")
        get_language(self.src)
        get_language(self.tgt)
        if not self.steps:
            raise ValueError(f"stream {self.id!r} has no steps")
        for index, step in enumerate(self.steps):
            if not step.source.strip():
                raise ValueError(f"stream {self.id!r} step {index} has an empty source")
            last = index == len(self.steps) - 1
            if step.final != last:
                where = (
                    "the last step must be final" if last else f"step {index} is final but is not the last"
                )
                raise ValueError(f"stream {self.id!r}: {where}")
        if self.more_references and self.reference is None:
            raise ValueError(f"stream {self.id!r} has more references but no first reference")
        for number, ref in enumerate(self.references, start=1):
            if not ref.strip():
                raise ValueError(f"stream {self.id!r}: reference {number} is empty")
        times = [step.time_ms for step in self.steps]
        if any(t is not None for t in times):
            if any(t is None for t in times):
                raise ValueError(f"stream {self.id!r}: time_ms must be given on every step or on none")
            for index in range(1, len(times)):
                prev, cur = times[index - 1], times[index]
                assert prev is not None and cur is not None
                if cur < prev:
                    raise ValueError(
                        f"stream {self.id!r}: time_ms goes backwards at step {index} ({cur} < {prev})"
                    )


def _step_from_json(obj: Any, where: str) -> Step:
    if not isinstance(obj, dict):
        raise SimulError(f"{where}: each step must be an object with 'source' and 'final'")
    unknown = set(obj) - {"source", "final", "time_ms", "extra"}
    if unknown:
        raise SimulError(f"{where}: unknown step field(s) {sorted(unknown)}")
    source = obj.get("source")
    if not isinstance(source, str):
        raise SimulError(f"{where}: step 'source' must be a string")
    check_source(source, where)
    final = obj.get("final", False)
    if not isinstance(final, bool):
        raise SimulError(f"{where}: step 'final' must be true or false")
    time_ms = obj.get("time_ms")
    if time_ms is not None and (isinstance(time_ms, bool) or not isinstance(time_ms, int | float)):
        raise SimulError(f"{where}: step 'time_ms' must be a number of milliseconds")
    if time_ms is not None and not (as_float(time_ms) >= 0 and math.isfinite(as_float(time_ms))):
        raise SimulError(
            f"{where}: step 'time_ms' must be a finite number of milliseconds, 0 or more "
            "(or left out on every step)"
        )
    extra = obj.get("extra", {})
    if not isinstance(extra, dict):
        raise SimulError(f"{where}: step 'extra' must be an object")
    return Step(source=source, final=final, time_ms=None if time_ms is None else float(time_ms), extra=extra)


def _references_from_json(obj: dict[str, Any], where: str) -> list[str]:
    """``reference`` (a string or null) or ``references`` (a list of strings), never both."""
    if "references" in obj:
        if "reference" in obj:
            raise SimulError(f"{where}: give either 'reference' or 'references' (a list), not both")
        refs = obj["references"]
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            raise SimulError(f"{where}: field 'references' must be a list of strings")
        return refs
    reference = obj.get("reference")
    if reference is not None and not isinstance(reference, str):
        raise SimulError(f"{where}: field 'reference' must be a string or null")
    return [] if reference is None else [reference]


def stream_from_json(obj: Any, where: str = "<stream>") -> Stream:
    """Build a Stream from one parsed JSONL record; errors name ``where`` (file:line)."""
    if not isinstance(obj, dict):
        raise SimulError(f"{where}: expected a JSON object per line")
    if obj.get("format") != FORMAT_NAME:
        raise SimulError(
            f'{where}: not a simul stream record ("format" must be {FORMAT_NAME!r}); '
            "build stream files with `simul streams flores|acl6060|asr`"
        )
    version = obj.get("version")
    if version not in READ_VERSIONS:
        raise SimulError(
            f"{where}: stream format version {version!r} is not supported (this simul reads versions "
            f"{' and '.join(str(v) for v in READ_VERSIONS)}); rebuild the file with this simul or upgrade "
            "simul"
        )
    for key in ("id", "src", "tgt"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            raise SimulError(f"{where}: field {key!r} must be a non-empty string")
    steps_obj = obj.get("steps")
    if not isinstance(steps_obj, list):
        raise SimulError(f"{where}: field 'steps' must be a list")
    references = _references_from_json(obj, where)
    provenance = obj.get("provenance", {})
    if not isinstance(provenance, dict):
        raise SimulError(f"{where}: field 'provenance' must be an object")
    check_steps(len(steps_obj), where)
    steps = tuple(_step_from_json(s, f"{where}, step {i}") for i, s in enumerate(steps_obj))
    try:
        src = get_language(obj["src"]).short
        tgt = get_language(obj["tgt"]).short
    except SimulError as exc:
        raise SimulError(f"{where}: {exc}") from None
    stream = Stream(
        id=obj["id"],
        src=src,
        tgt=tgt,
        steps=steps,
        reference=references[0] if references else None,
        provenance=provenance,
        more_references=tuple(references[1:]),
    )
    try:
        stream.validate()
    except ValueError as exc:
        raise SimulError(f"{where}: {exc}") from None
    return stream


def iter_streams(path: Path) -> Iterator[Stream]:
    """Read a stream file lazily, validating every line; blank lines are skipped."""
    if not path.exists():
        raise SimulError(f"stream file {path} does not exist; build one with `simul streams flores ...`")
    if path.is_dir():
        raise SimulError(f"stream file {path} is a directory; pass a .jsonl file")
    seen: set[str] = set()
    for where, line in nonblank_lines(path):
        obj = loads(line, where)
        stream = stream_from_json(obj, where)
        if stream.id in seen:
            raise SimulError(f"{where}: duplicate stream id {stream.id!r}; ids must be unique in a file")
        seen.add(stream.id)
        yield stream


def read_streams(path: Path, limit: int | None = None) -> list[Stream]:
    """Read and validate a whole stream file; return its first ``limit`` streams when given.

    The lines past the limit are validated too (duplicate ids included): a damaged file is refused before
    hours of decoding, whatever the limit. That costs one JSON parse per line, milliseconds per thousand
    streams, small beside decoding a single stream."""
    streams: list[Stream] = []
    for stream in iter_streams(path):
        if limit is None or len(streams) < limit:
            streams.append(stream)
    if not streams:
        raise SimulError(f"stream file {path} holds no streams")
    return streams


def check_limits(stream: Stream) -> None:
    """Refuse to write a stream that the reader would refuse (simul.common.limits: steps, source length)."""
    where = f"refusing to write stream {stream.id!r}"
    check_steps(len(stream.steps), where)
    for index, step in enumerate(stream.steps):
        check_source(step.source, f"{where}, step {index}")


def dumps_stream(stream: Stream) -> str:
    return json.dumps(stream.to_json(), ensure_ascii=False, sort_keys=True)


def write_streams(path: Path, streams: Iterable[Stream]) -> int:
    """Write streams atomically (a temporary file renamed into place); returns how many were written.

    Also when the streams come from a generator that fails half-way, or the disk fills up, no half-written
    or temporary file stays (see :func:`simul.common.files.atomic_file`)."""
    check_writable_file(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SimulError(os_error_message(exc, path.parent, "create the folder")) from None
    count = 0
    with atomic_file(path) as handle:
        for stream in streams:
            try:
                stream.validate()
            except ValueError as exc:
                raise SimulError(f"refusing to write an invalid stream: {exc}") from None
            check_limits(stream)
            handle.write(dumps_stream(stream) + "\n")
            count += 1
    return count

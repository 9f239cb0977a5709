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

A *long-form* stream (version 3, ``"longform": true``) is a whole talk or document as one stream: its steps
are the growing transcript of the whole talk (``time_ms`` on the talk's clock when known), and it carries the
reference segmentation for the scorer only (the decoder never sees it): ``segments``, each with its
``references``, its ``source`` transcript when known, and its ``offset_ms`` and ``duration_ms`` on the talk's
clock when known; ``duration_ms`` at the top is the recording's length (long-form latency counts to it).
Because every step holds the whole transcript so far, a talk's steps are stored as deltas on disk: a step is
``{"keep": K, "add": "..."}`` meaning the previous step's source cut to its first K characters, then ``add``
(so a recognizer's revision of the last words costs only those words). In memory every
:class:`Step` holds the whole source, as in short-form streams. The top-level ``reference`` of a long-form
:class:`Stream` is derived: its segments' first references joined (for whole-talk BLEU/chrF).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError
from simul.common.files import atomic_file, check_writable_file, os_error_message
from simul.common.languages import get_language
from simul.common.limits import LINE_BYTES, as_float, check_source, check_steps, loads, nonblank_lines
from simul.common.sequences import common_prefix_length

FORMAT_NAME = "simul-stream"
FORMAT_VERSION = 1
# Written only for streams with several references (the ``references`` list); read like version 1.
MULTI_REFERENCE_VERSION = 2
# Long-form streams: whole talks or documents with a reference segmentation (see the module docstring).
LONGFORM_VERSION = 3
READ_VERSIONS = (FORMAT_VERSION, MULTI_REFERENCE_VERSION, LONGFORM_VERSION)
# Segments may touch or overlap their neighbour by this much (rounding of times given in seconds).
SEGMENT_TOLERANCE_MS = 1.0


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
class Segment:
    """One reference segment of a long-form stream: what the scorer aligns the talk's output onto."""

    references: tuple[str, ...]  # every reference translation, the first one first; may be empty
    source: str | None = None  # the segment's source transcript, when known (COMET uses it)
    offset_ms: float | None = None  # start on the talk's clock
    duration_ms: float | None = None

    @property
    def end_ms(self) -> float | None:
        if self.offset_ms is None or self.duration_ms is None:
            return None
        return self.offset_ms + self.duration_ms

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"references": list(self.references)}
        if self.source is not None:
            out["source"] = self.source
        if self.offset_ms is not None:
            out["offset_ms"] = round(self.offset_ms, 1)
        if self.duration_ms is not None:
            out["duration_ms"] = round(self.duration_ms, 1)
        return out


def join_texts(texts: Iterable[str], lang: str) -> str:
    """Texts of consecutive segments as one text: space-joined, or run together for zh/ja."""
    sep = "" if get_language(lang).unspaced else " "
    return sep.join(t.strip() for t in texts if t.strip())


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
    # long-form (version 3): a whole talk or document, with its reference segmentation for the scorer
    longform: bool = False
    segments: tuple[Segment, ...] = ()
    duration_ms: float | None = None  # the recording's length, when known

    @classmethod
    def talk(
        cls,
        id: str,
        src: str,
        tgt: str,
        steps: tuple[Step, ...],
        segments: tuple[Segment, ...],
        duration_ms: float | None = None,
        provenance: dict[str, Any] | None = None,
    ) -> Stream:
        """A long-form stream; its ``reference`` (and more references) are the segments' joined."""
        reference, more = _joined_references(segments, tgt)
        return cls(
            id=id,
            src=src,
            tgt=tgt,
            steps=steps,
            reference=reference,
            provenance=provenance or {},
            more_references=more,
            longform=True,
            segments=segments,
            duration_ms=duration_ms,
        )

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
        if self.longform:
            return self._talk_json()
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

    def _talk_json(self) -> dict[str, Any]:
        steps: list[dict[str, Any]] = []
        previous = ""
        for step in self.steps:
            keep = common_prefix_length(previous, step.source)
            entry: dict[str, Any] = {"keep": keep, "add": step.source[keep:], "final": step.final}
            if step.time_ms is not None:
                entry["time_ms"] = round(step.time_ms, 1)
            if step.extra:
                entry["extra"] = step.extra
            steps.append(entry)
            previous = step.source
        out: dict[str, Any] = {
            "format": FORMAT_NAME,
            "version": LONGFORM_VERSION,
            "longform": True,
            "id": self.id,
            "src": self.src,
            "tgt": self.tgt,
            "steps": steps,
            "segments": [segment.to_json() for segment in self.segments],
            "provenance": self.provenance,
        }
        if self.duration_ms is not None:
            out["duration_ms"] = round(self.duration_ms, 1)
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
        if self.longform:
            self._validate_segments()
        elif self.segments or self.duration_ms is not None:
            raise ValueError(f"stream {self.id!r}: segments and duration_ms belong to long-form streams only")

    def _validate_segments(self) -> None:
        """Segments in talk order, none overlapping the next, inside the recording if its length is known."""
        talk = f"talk {self.id!r}"
        if self.duration_ms is not None and not (math.isfinite(self.duration_ms) and self.duration_ms > 0):
            raise ValueError(f"{talk}: duration_ms must be a positive number of milliseconds")
        timed = [seg.offset_ms is not None for seg in self.segments]
        if any(timed) and not all(timed):
            raise ValueError(f"{talk}: offset_ms must be given on every segment or on none")
        previous_end: float | None = None
        for number, seg in enumerate(self.segments, start=1):
            where = f"{talk}, segment {number}"
            for ref_number, ref in enumerate(seg.references, start=1):
                if not ref.strip():
                    raise ValueError(f"{where}: reference {ref_number} is empty")
            if (seg.offset_ms is None) != (seg.duration_ms is None):
                raise ValueError(f"{where}: give both offset_ms and duration_ms, or neither")
            if seg.offset_ms is None or seg.duration_ms is None:
                continue
            if not (math.isfinite(seg.offset_ms) and seg.offset_ms >= 0):
                raise ValueError(f"{where}: offset_ms must be a finite number, 0 or more")
            if not (math.isfinite(seg.duration_ms) and seg.duration_ms >= 0):
                raise ValueError(f"{where}: duration_ms must be a finite number, 0 or more")
            if previous_end is not None and seg.offset_ms < previous_end - SEGMENT_TOLERANCE_MS:
                raise ValueError(
                    f"{where} starts at {seg.offset_ms:g} ms, before segment {number - 1} ends "
                    f"({previous_end:g} ms): segments must be in talk order and must not overlap"
                )
            end = seg.offset_ms + seg.duration_ms
            if self.duration_ms is not None and end > self.duration_ms + SEGMENT_TOLERANCE_MS:
                raise ValueError(
                    f"{where} ends at {end:g} ms, after the end of the recording ({self.duration_ms:g} ms): "
                    "fix the segment times or the talk's duration_ms"
                )
            previous_end = end
        counts = {len(seg.references) for seg in self.segments}
        if len(counts) > 1:
            raise ValueError(f"{talk}: every segment must have the same number of references")


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


def _joined_references(segments: Sequence[Segment], tgt: str) -> tuple[str | None, tuple[str, ...]]:
    """The talk's references: the segments' n-th references joined, for every n all segments have."""
    if not segments or not segments[0].references:
        return None, ()
    n = min(len(seg.references) for seg in segments)
    if n == 0:  # some segments have none: validate() refuses the talk with a message
        return None, ()
    joined = [join_texts((seg.references[i] for seg in segments), tgt) for i in range(n)]
    return joined[0], tuple(joined[1:])


_TALK_STEP_KEYS = {"keep", "add", "final", "time_ms", "extra"}
_SEGMENT_KEYS = {"references", "source", "offset_ms", "duration_ms"}


def _talk_steps_from_json(steps_obj: list[Any], where: str) -> tuple[Step, ...]:
    """Version-3 steps: each is the previous step's source cut to ``keep`` characters, plus ``add``."""
    steps: list[Step] = []
    previous = ""
    for index, obj in enumerate(steps_obj):
        at = f"{where}, step {index}"
        if not isinstance(obj, dict):
            raise SimulError(f"{at}: each step of a long-form stream must be an object with 'keep' and 'add'")
        unknown = set(obj) - _TALK_STEP_KEYS
        if unknown:
            raise SimulError(
                f"{at}: unknown step field(s) {sorted(unknown)} (long-form steps have 'keep' and 'add')"
            )
        keep = obj.get("keep")
        add = obj.get("add")
        if isinstance(keep, bool) or not isinstance(keep, int) or not 0 <= keep <= len(previous):
            raise SimulError(
                f"{at}: 'keep' must be a whole number of characters from 0 to the previous step's length "
                f"({len(previous)})"
            )
        if not isinstance(add, str):
            raise SimulError(f"{at}: step 'add' must be a string")
        source = previous[:keep] + add
        check_source(source, at)
        fields = {k: v for k, v in obj.items() if k not in ("keep", "add")}
        steps.append(_step_from_json({"source": source, **fields}, at))
        previous = source
    return tuple(steps)


def _segments_from_json(obj: Any, where: str) -> tuple[Segment, ...]:
    if not isinstance(obj, list):
        raise SimulError(f"{where}: field 'segments' of a long-form stream must be a list")
    segments: list[Segment] = []
    for number, seg in enumerate(obj, start=1):
        at = f"{where}, segment {number}"
        if not isinstance(seg, dict):
            raise SimulError(f"{at}: each segment must be an object with 'references'")
        unknown = set(seg) - _SEGMENT_KEYS
        if unknown:
            raise SimulError(f"{at}: unknown segment field(s) {sorted(unknown)}")
        refs = seg.get("references", [])
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            raise SimulError(f"{at}: 'references' must be a list of strings")
        source = seg.get("source")
        if source is not None and not isinstance(source, str):
            raise SimulError(f"{at}: 'source' must be a string")
        times: dict[str, float | None] = {}
        for key in ("offset_ms", "duration_ms"):
            value = seg.get(key)
            if value is not None and not math.isfinite(as_float(value)):
                raise SimulError(f"{at}: {key!r} must be a finite number of milliseconds")
            times[key] = None if value is None else float(value)
        segments.append(
            Segment(
                references=tuple(refs),
                source=source,
                offset_ms=times["offset_ms"],
                duration_ms=times["duration_ms"],
            )
        )
    return tuple(segments)


def _talk_from_json(obj: dict[str, Any], where: str, src: str, tgt: str) -> Stream:
    if obj.get("longform") is not True:
        raise SimulError(f'{where}: a version-3 stream must have "longform": true')
    for key in ("reference", "references"):
        if key in obj:
            raise SimulError(
                f"{where}: a long-form stream keeps its references in 'segments', not in {key!r}"
            )
    steps_obj = obj.get("steps")
    assert isinstance(steps_obj, list)
    steps = _talk_steps_from_json(steps_obj, where)
    segments = _segments_from_json(obj.get("segments", []), where)
    duration = obj.get("duration_ms")
    if duration is not None and not math.isfinite(as_float(duration)):
        raise SimulError(f"{where}: 'duration_ms' must be a finite number of milliseconds")
    return Stream.talk(
        id=obj["id"],
        src=src,
        tgt=tgt,
        steps=steps,
        segments=segments,
        duration_ms=None if duration is None else float(duration),
        provenance=obj.get("provenance", {}),
    )


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
    provenance = obj.get("provenance", {})
    if not isinstance(provenance, dict):
        raise SimulError(f"{where}: field 'provenance' must be an object")
    check_steps(len(steps_obj), where)
    try:
        src = get_language(obj["src"]).short
        tgt = get_language(obj["tgt"]).short
    except SimulError as exc:
        raise SimulError(f"{where}: {exc}") from None
    if version == LONGFORM_VERSION:
        talk = _talk_from_json(obj, where, src, tgt)
        try:
            talk.validate()
        except ValueError as exc:
            raise SimulError(f"{where}: {exc}") from None
        return talk
    if "longform" in obj or "segments" in obj:
        raise SimulError(f"{where}: 'longform' and 'segments' need stream format version 3")
    references = _references_from_json(obj, where)
    steps = tuple(_step_from_json(s, f"{where}, step {i}") for i, s in enumerate(steps_obj))
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
    where = f"refusing to write {'talk' if stream.longform else 'stream'} {stream.id!r}"
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
            line = dumps_stream(stream)
            size = len(line.encode("utf-8"))
            if size > LINE_BYTES.value():
                what = "talk" if stream.longform else "stream"
                raise SimulError(
                    f"refusing to write {what} {stream.id!r}: its record is {size} bytes, over the limit of "
                    f"{LINE_BYTES.value()} bytes per line that readers accept; {LINE_BYTES.hint()}"
                )
            handle.write(line + "\n")
            count += 1
    return count

"""Parsing recognizer output: timed partials in three formats, with their emission times.

Three input formats (docs/streams.md has examples). Every line carries an *emission time*: when the
recognizer produced it, measured from the start of the talk audio.

* ``sltev``: SLTev's ``P|C <emission> <start> <end> text`` (``.asrt``); each ``P`` line is the whole current
  hypothesis of an utterance (it may revise earlier words), the ``C`` line closes the utterance with its
  complete text. SLTev's timed gold transcripts (``.OStt``) have no emission column, ``P|C <start> <end>
  text``; their emission time is ``end``. SLTev does not state a unit; its samples count hundredths of a
  second, hence the default ``cs``.
* ``whisper-streaming``: whisper_streaming / SimulStreaming's ``<emission_ms> <beg_ms> <end_ms> <text>``.
  Each line is a committed chunk; the transcript is the concatenation of all chunks so far (a chunk that
  starts without a space continues the previous word).
* ``jsonl``: one JSON object per line, ``{"time_ms", "start_ms", "end_ms", "text", "final", "talk"}``; like
  ``sltev``, ``text`` is the whole current hypothesis of the open utterance and ``final: true`` closes it.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from simul.common.errors import SimulError, UsageError
from simul.common.limits import as_float, loads
from simul.common.safe_text import excerpt
from simul.streams.segments import read_utf8_lines

PartialsFormat = Literal["sltev", "whisper-streaming", "jsonl"]
FORMATS: tuple[PartialsFormat, ...] = get_args(PartialsFormat)
TimeUnit = Literal["ms", "cs", "s"]
TIME_UNITS: dict[TimeUnit, float] = {"ms": 1.0, "cs": 10.0, "s": 1000.0}
DEFAULT_TIME_UNIT = {"sltev": "cs", "whisper-streaming": "ms", "jsonl": "ms"}
AlignMode = Literal["text", "time"]
ALIGN_MODES: tuple[AlignMode, ...] = get_args(AlignMode)
DEFAULT_MAX_GAP_MS = 1000.0

_SLTEV_SUFFIXES = {".ostt": 2, ".asrt": 3, ".slt": 3, ".asr": 3}
_WHISPER_LINE = re.compile(r"^\s*(\S+)[ \t]+(\S+)[ \t]+(\S+)(?:[ \t](.*))?$")
_JSONL_KEYS = ("time_ms", "start_ms", "end_ms", "text", "final", "talk")


@dataclass(frozen=True)
class PartialLine:
    """One line of recognizer output, times in milliseconds from the start of the talk."""

    line: int
    time_ms: float
    start_ms: float | None
    end_ms: float | None
    text: str
    final: bool
    # True: ``text`` is appended to the committed transcript (whisper-streaming); False: it is the whole
    # current hypothesis of the open utterance (sltev, jsonl).
    append: bool
    talk: str | None = None


@dataclass(frozen=True)
class PartialsFile:
    path: Path
    format: str
    time_unit: str
    lines: tuple[PartialLine, ...]


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise UsageError(f"unknown --partials-format {fmt!r}: use one of {', '.join(FORMATS)}")
    return fmt


def infer_format(path: Path) -> str:
    """The format a file name implies (``.jsonl``, SLTev suffixes); otherwise the user must say."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return "jsonl"
    if suffix in _SLTEV_SUFFIXES:
        return "sltev"
    raise UsageError(
        f"cannot tell the format of {path.name} from its name; pass --partials-format ({', '.join(FORMATS)})"
    )


def parse_partials(path: Path, fmt: str, time_unit: str | None = None) -> PartialsFile:
    """Read a partials file, check every line and that emission times never go backwards."""
    check_format(fmt)
    unit = time_unit or DEFAULT_TIME_UNIT[fmt]
    if unit not in TIME_UNITS:
        raise UsageError(f"unknown --time-unit {unit!r}: use one of {', '.join(TIME_UNITS)}")
    raw = read_utf8_lines(path, "partials file")
    scale = TIME_UNITS[unit]
    if fmt == "sltev":
        lines = _parse_sltev(path, raw, scale)
    elif fmt == "whisper-streaming":
        lines = _parse_whisper(path, raw, scale)
    else:
        lines = _parse_jsonl(path, raw, scale)
    if not lines:
        raise SimulError(f"partials file {path} holds no partials")
    _check_order(path, lines)
    return PartialsFile(path=path, format=fmt, time_unit=unit, lines=tuple(lines))


def parse_number(token: str, where: str, name: str, scale: float = 1.0) -> float:
    """``token`` as a finite non-negative number times ``scale``; errors name ``where`` and ``name``."""
    try:
        value = float(token)
    except ValueError:
        raise SimulError(f"{where}: {name} {excerpt(token)} is not a number") from None
    if not math.isfinite(value * scale) or value < 0:
        raise SimulError(f"{where}: {name} must be a non-negative number, got {excerpt(token)}")
    return value * scale


def _check_span(where: str, start: float | None, end: float | None) -> None:
    if start is not None and end is not None and end < start:
        raise SimulError(f"{where}: the audio span ends before it starts ({end:g} < {start:g} ms)")


def _sltev_layout(path: Path, raw: list[str]) -> int:
    """How many time columns the SLTev file has: 2 (``.OStt``) or 3 (emission, start, end)."""
    if path.suffix.lower() in _SLTEV_SUFFIXES:
        return _SLTEV_SUFFIXES[path.suffix.lower()]
    counts: dict[int, int] = defaultdict(int)
    for line in raw:
        tokens = line.split()[1:4]
        n = 0
        for token in tokens:
            try:
                float(token)
            except ValueError:
                break
            n += 1
        counts[n] += 1
    # A text that starts with a number adds a column on its line only, so the most common count wins.
    layout = max(counts, key=lambda n: (counts[n], n)) if counts else 3
    if layout < 2:
        raise SimulError(
            f"{path}: not SLTev partials: lines must read 'P|C <emission> <start> <end> text' "
            "(or 'P|C <start> <end> text' in .OStt files)"
        )
    return layout


def _parse_sltev(path: Path, raw: list[str], scale: float) -> list[PartialLine]:
    layout = _sltev_layout(path, [line for line in raw if line.strip()])
    expected = "P|C <start> <end> text" if layout == 2 else "P|C <emission> <start> <end> text"
    out: list[PartialLine] = []
    for number, line in enumerate(raw, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        parts = line.split(None, layout + 1)
        if parts[0] not in ("P", "C"):
            raise SimulError(
                f"{where}: a line must start with P (partial) or C (complete), got {excerpt(parts[0])}; "
                f"expected {expected!r}"
            )
        if len(parts) < layout + 1:
            raise SimulError(f"{where}: missing times; expected {expected!r}")
        names = ["start", "end"] if layout == 2 else ["emission time", "start", "end"]
        times = [parse_number(parts[k + 1], where, names[k], scale) for k in range(layout)]
        text = parts[layout + 1] if len(parts) > layout + 1 else ""
        emission, start, end = (
            (times[1], times[0], times[1]) if layout == 2 else (times[0], times[1], times[2])
        )
        _check_span(where, start, end)
        out.append(PartialLine(number, emission, start, end, text, final=parts[0] == "C", append=False))
    return out


def _parse_whisper(path: Path, raw: list[str], scale: float) -> list[PartialLine]:
    out: list[PartialLine] = []
    for number, line in enumerate(raw, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        match = _WHISPER_LINE.match(line)
        if match is None:
            raise SimulError(
                f"{where}: expected '<emission_ms> <beg_ms> <end_ms> <text>', got {excerpt(line)}"
            )
        emission = parse_number(match[1], where, "emission time", scale)
        start = parse_number(match[2], where, "begin time", scale)
        end = parse_number(match[3], where, "end time", scale)
        _check_span(where, start, end)
        out.append(PartialLine(number, emission, start, end, match[4] or "", final=True, append=True))
    return out


def _optional_time(obj: dict[str, Any], key: str, where: str, scale: float) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    number = as_float(value) * scale
    if not (math.isfinite(number) and number >= 0):
        raise SimulError(f"{where}: {key!r} must be a non-negative number of milliseconds or null")
    return number


def _parse_jsonl(path: Path, raw: list[str], scale: float) -> list[PartialLine]:
    out: list[PartialLine] = []
    for number, line in enumerate(raw, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        obj = loads(line, where)
        if not isinstance(obj, dict):
            raise SimulError(f"{where}: expected a JSON object with {', '.join(_JSONL_KEYS)}")
        if "time_ms" not in obj or "text" not in obj:
            raise SimulError(f"{where}: every partial needs 'time_ms' (emission time) and 'text'")
        emission = _optional_time(obj, "time_ms", where, scale)
        if emission is None:
            raise SimulError(f"{where}: 'time_ms' must be a number of milliseconds")
        if not isinstance(obj["text"], str):
            raise SimulError(f"{where}: 'text' must be a string")
        final = obj.get("final", False)
        if not isinstance(final, bool):
            raise SimulError(f"{where}: 'final' must be true or false")
        talk = obj.get("talk")
        if talk is not None and (not isinstance(talk, str) or not talk):
            raise SimulError(f"{where}: 'talk' must be a non-empty string when given")
        start = _optional_time(obj, "start_ms", where, scale)
        end = _optional_time(obj, "end_ms", where, scale)
        _check_span(where, start, end)
        out.append(PartialLine(number, emission, start, end, obj["text"], final, append=False, talk=talk))
    return out


def _check_order(path: Path, lines: list[PartialLine]) -> None:
    last: dict[str | None, PartialLine] = {}
    for pl in lines:
        prev = last.get(pl.talk)
        if prev is not None and pl.time_ms < prev.time_ms:
            raise SimulError(
                f"{path}:{pl.line}: emission time goes backwards ({pl.time_ms:g} ms after {prev.time_ms:g} "
                f"ms on line {prev.line}); partials must be listed in the order the recognizer emitted them"
            )
        last[pl.talk] = pl

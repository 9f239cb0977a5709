"""Limits on what a reader accepts, so that a hostile or broken file gets a clear error, not a crash.

Every reader of simul's inputs (stream files, recognizer partials, segment YAML, FLORES and ACL 60/60 text,
run directories) refuses, with ``file:line`` and the way out:

==========================  =========================  ===========  ==========================================
limit                       environment variable       default      why
==========================  =========================  ===========  ==========================================
bytes in one line           ``SIMUL_MAX_LINE_BYTES``   16 MiB       a stream of 10,000 long steps fits; a file
                                                                    without line breaks is not read whole
steps in one stream         ``SIMUL_MAX_STEPS``        10,000       a partial every 100 ms for 16 minutes
characters in a step source ``SIMUL_MAX_SOURCE_CHARS`` 100,000      about 15,000 words, far past any context
JSON nesting depth          (fixed)                    64           simul's own records nest 5 levels deep
==========================  =========================  ===========  ==========================================

The three sizes can be raised (or lowered) through their environment variables, e.g.
``SIMUL_MAX_STEPS=50000 simul streams stats big.jsonl``. Nesting is fixed: Python's JSON and YAML readers
recurse, and a file nested thousands of levels deep would otherwise end in a ``RecursionError``.
A number of more than 4300 digits is refused (Python's limit on converting such numbers), and so is a
string with a lone surrogate (not Unicode text). Stream files and JSONL partials are read strictly:
``NaN`` and ``Infinity`` are not JSON. Run-directory files (written by simul itself) may hold them.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from simul.common.errors import SimulError, UsageError

MAX_JSON_DEPTH = 64
# Segment offsets and durations (seconds): a talk is not longer than a day. Simulated partials tick through
# the whole segment, so an absurd duration would otherwise run (almost) forever.
MAX_AUDIO_SECONDS = 86_400.0


@dataclass(frozen=True)
class Limit:
    """A size limit with its documented default and the environment variable that overrides it."""

    env: str
    default: int
    unit: str

    def value(self) -> int:
        raw = os.environ.get(self.env)
        if raw is None or not raw.strip():
            return self.default
        try:
            value = int(raw.strip().replace("_", ""))
        except ValueError:
            raise UsageError(f"{self.env}={raw!r} is not a whole number of {self.unit}") from None
        if value < 1:
            raise UsageError(f"{self.env} must be at least 1, got {value}")
        return value

    def hint(self) -> str:
        return f"set {self.env} to a larger number of {self.unit} if the file is right"


LINE_BYTES = Limit("SIMUL_MAX_LINE_BYTES", 16 * 1024 * 1024, "bytes")
STEPS = Limit("SIMUL_MAX_STEPS", 10_000, "steps")
SOURCE_CHARS = Limit("SIMUL_MAX_SOURCE_CHARS", 100_000, "characters")


def as_float(value: Any) -> float:
    """A JSON or YAML number as a float; NaN for anything else (a string, a bool, an int too large)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    try:
        return float(value)
    except OverflowError:
        return math.nan


def binary_lines(handle: IO[bytes], path: Path) -> Iterator[tuple[int, bytes]]:
    """``(line number, raw line)`` of a binary file; a line over the size limit is an error, and is never
    read into memory whole."""
    limit = LINE_BYTES.value()
    number = 0
    while True:
        raw = handle.readline(limit + 1)
        if not raw:
            return
        number += 1
        if len(raw) - raw.endswith(b"\n") > limit:
            raise SimulError(f"{path}:{number}: the line is longer than {limit} bytes; {LINE_BYTES.hint()}")
        yield number, raw


def nonblank_lines(path: Path) -> Iterator[tuple[str, str]]:
    """``(file:line, text)`` of every non-blank line of a UTF-8 JSONL-style file, under the line size limit;
    bytes that are not UTF-8 are an error naming the line."""
    with path.open("rb") as handle:
        for number, raw in binary_lines(handle, path):
            where = f"{path}:{number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SimulError(f"{where}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
            if line.strip():
                yield where, line


def check_text_lines(lines: list[str], path: Path, first_line: int = 1) -> None:
    """Refuse a text line over the size limit (counted in UTF-8 bytes), naming it."""
    limit = LINE_BYTES.value()
    for number, line in enumerate(lines, start=first_line):
        if len(line) * 4 > limit and len(line.encode("utf-8", "surrogatepass")) > limit:
            raise SimulError(f"{path}:{number}: the line is longer than {limit} bytes; {LINE_BYTES.hint()}")


def check_source(text: str, where: str) -> None:
    limit = SOURCE_CHARS.value()
    if len(text) > limit:
        raise SimulError(
            f"{where}: the source is {len(text)} characters long, over the limit of {limit}; "
            f"{SOURCE_CHARS.hint()}"
        )


def check_steps(count: int, where: str) -> None:
    limit = STEPS.value()
    if count > limit:
        raise SimulError(f"{where}: {count} steps, over the limit of {limit} per stream; {STEPS.hint()}")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number; write null or a finite number")


class JSONProblem(ValueError):
    """JSON that cannot be read; the message says why, without a location."""


def parse_json(text: str, allow_constants: bool = False) -> Any:
    """Parse one JSON document, raising :class:`JSONProblem` with a reason a user can act on.

    Refuses nesting deeper than :data:`MAX_JSON_DEPTH`, numbers Python cannot convert, lone surrogates in
    strings (not Unicode text) and, unless ``allow_constants``, ``NaN`` and ``Infinity``.
    """
    try:
        obj = json.loads(text, parse_constant=None if allow_constants else _reject_constant)
    except json.JSONDecodeError as exc:
        raise JSONProblem(json_error(exc)) from None
    except RecursionError:
        raise JSONProblem(f"JSON nested more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError as exc:
        message = str(exc)
        if "digits" in message:
            message = "a number has more than 4300 digits"
        raise JSONProblem(f"unreadable JSON ({message})") from None
    problem = json_problem(obj) if _may_have_problem(text) else None
    if problem is not None:
        raise JSONProblem(problem)
    return obj


# a JSON escape of a UTF-16 surrogate (U+D800-U+DFFF): the only way a lone one gets into text read as UTF-8
_SURROGATE_ESCAPE = re.compile(r"\\[uU][dD][89abcdefABCDEF]")


def _may_have_problem(text: str) -> bool:
    """Whether :func:`json_problem` can find anything in the document parsed from ``text``; False lets a
    reader of thousands of records skip the walk over every value (it was a fifth of `simul diff`'s time).
    A container nested N deep needs N opening brackets in the text, and a lone surrogate is either in the
    text itself (it then cannot be encoded) or written as a ``\\uDxxx`` escape; both tests only ever answer
    True too often (brackets inside strings, an escaped backslash before ``uD8``), never too rarely."""
    if not isinstance(text, str):
        return True
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH:
        return True
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return True
    return _SURROGATE_ESCAPE.search(text) is not None


def loads(text: str, where: str, allow_constants: bool = False) -> Any:
    """:func:`parse_json`, with every failure a SimulError naming ``where`` (``file:line``)."""
    try:
        return parse_json(text, allow_constants)
    except JSONProblem as exc:
        raise SimulError(f"{where}: {exc}") from None


def json_error(exc: json.JSONDecodeError) -> str:
    """``malformed JSON (<reason> at column N)``, or ``at line L, column N`` in a document of several lines
    (run.json is written indented: the column alone does not find the mistake); some of json's reasons
    already end in "at"."""
    where = f"line {exc.lineno}, column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
    return f"malformed JSON ({exc.msg.removesuffix(' at')} at {where})"


def json_problem(obj: Any) -> str | None:
    """Why parsed JSON is refused (nested deeper than :data:`MAX_JSON_DEPTH`, a lone surrogate), or None."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            problem = _string_problem(item)
            if problem:
                return problem
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_JSON_DEPTH:
            return f"JSON nested more than {MAX_JSON_DEPTH} levels deep"
        if isinstance(item, dict):
            for key, value in item.items():
                problem = _string_problem(key)
                if problem:
                    return problem
                stack.append((value, depth + 1))
        else:
            stack.extend((value, depth + 1) for value in item)
    return None


def _string_problem(text: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        return (
            f"the text holds a lone surrogate \\u{code:04x}, which is not Unicode text; fix the program "
            "that wrote the file"
        )
    return None

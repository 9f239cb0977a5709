"""Reading a JSONL file line by line with errors that name the file and the line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError
from simul.common.limits import JSONProblem, nonblank_lines, parse_json


def read_objects(path: Path, what: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(``file:line``, object) for every non-blank line; anything but a JSON object is an error."""
    if not path.exists():
        raise SimulError(f"{what} {path} does not exist")
    if path.is_dir():
        raise SimulError(f"{what} {path} is a directory; pass the file")
    for where, line in nonblank_lines(path):
        try:
            obj = parse_json(line)
        except JSONProblem as exc:
            raise SimulError(f"{where}: {exc}; each line must be one JSON object") from None
        if not isinstance(obj, dict):
            raise SimulError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        yield where, obj


def string_list(obj: dict[str, Any], key: str, where: str, fix: str) -> list[str]:
    """``obj[key]`` as a list of strings, or an error saying what to fix."""
    value = obj.get(key)
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise SimulError(f"{where}: field {key!r} must be a list of strings; {fix}")
    return value


def number(obj: dict[str, Any], key: str, where: str) -> float:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SimulError(f"{where}: field {key!r} must be a number, got {value!r}")
    return float(value)

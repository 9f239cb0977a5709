"""Hypothesis strategies that damage real files the way careless programs and attackers do.

Text-level: truncate, flip a byte, delete or duplicate a span or a line, insert control characters, bidi
overrides, Rich markup or invalid UTF-8. JSON-level: drop or duplicate a key, swap a value's type, put in
huge numbers, NaN, negative times, deep nesting, lone surrogates. Each strategy draws one mutated input
from a seed document.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from hypothesis import strategies as st

# What hostile text looks like: terminal escapes (colour, OSC window title and hyperlink), C0/C1 controls,
# DEL, bidi overrides and isolates, line separators, Rich markup (a closing tag that crashes Rich), emoji
# codes, and a backslash that could escape a following markup bracket.
HOSTILE_SNIPPETS = [
    "\x1b[31m",
    "\x1b[0m",
    "\x1b]0;pwned\x07",
    "\x1b]8;;http://example.com\x1b\\link\x1b]8;;\x1b\\",
    "\r",
    "\x00",
    "\x07",
    "\x08",
    "\x7f",
    "\x85",
    "\x9b31m",
    "\u202e",
    "\u2066",
    "\u2028",
    "[/]",
    "[bold]",
    "[/bold]",
    "[laughter]",
    "[link=http://x]",
    ":smile:",
    "\\",
    "\t",
    "\n",
    "%s%n",
    "{0}",
]

hostile_text = st.lists(
    st.one_of(st.sampled_from(HOSTILE_SNIPPETS), st.text(max_size=8)), min_size=0, max_size=6
).map("".join)

# Values that replace a JSON value: every type, and numbers a careless writer produces.
# (sampled_from hands out the same object every time: copy a drawn value before changing it)
weird_values: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, -1, -1e9, 1e308, 10**400, 2**63, -(2**63), 0.5, -0.0]),
    st.sampled_from([float("nan"), float("inf"), float("-inf")]),
    st.integers(),
    st.floats(),
    st.text(max_size=10),
    hostile_text,
    st.sampled_from(["", " ", "x" * 300, "\ud800", "de", "en", "zz"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    st.sampled_from([[], {}, [[[[]]]], {"a": {"b": {"c": {}}}}]),
)


# Keys an "add" mutation puts into an object: short-form stream keys, and those of long-form (version-3)
# records (steps as {keep, add} deltas, segments, the talk's duration).
ADDED_KEYS = [
    "extra",
    "time_ms",
    "final",
    "source",
    "id",
    "x",
    "keep",
    "add",
    "segments",
    "references",
    "reference",
    "offset_ms",
    "duration_ms",
    "longform",
]


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``obj`` (the root included)."""
    out = [prefix]
    if isinstance(obj, dict):
        for key, value in obj.items():
            out.extend(_paths(value, (*prefix, key)))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            out.extend(_paths(value, (*prefix, index)))
    return out


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        obj = obj[part]
    return obj


@st.composite
def mutated_json(draw: st.DrawFn, seed: Any) -> Any:
    """``seed`` (parsed JSON) with one to three JSON-level mutations."""
    obj = json.loads(json.dumps(seed))
    deepened = False
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(obj)
        path = draw(st.sampled_from(paths))
        op = draw(
            st.sampled_from(["replace", "drop", "add", "hostile", "deepen", "duplicate", "numbers", "negate"])
        )
        if not path:
            if op == "deepen":
                obj = [obj]
                deepened = True
            elif op == "replace":
                obj = copy.deepcopy(draw(weird_values))
            continue
        parent, last = _get(obj, path[:-1]), path[-1]
        value = parent[last]
        if op == "replace":
            parent[last] = copy.deepcopy(draw(weird_values))
        elif op == "drop":
            del parent[last]
        elif op == "add" and isinstance(value, dict):
            value[draw(st.sampled_from(ADDED_KEYS))] = draw(weird_values)
        elif op == "hostile" and isinstance(value, str):
            at = draw(st.integers(0, len(value)))
            parent[last] = value[:at] + draw(hostile_text) + value[at:]
        elif op == "deepen":
            # at most ~200 levels in all: deeper inputs are made at text level (mutated_lines_json), since
            # building them here would recurse as deep in this strategy
            for _ in range(draw(st.sampled_from([2, 62, 63, 64, 65, 200])) if not deepened else 2):
                value = [value]
            parent[last] = value
            deepened = True
        elif op == "duplicate" and isinstance(value, list) and value:
            value.append(json.loads(json.dumps(value[draw(st.integers(0, len(value) - 1))])))
        elif op == "numbers" and isinstance(value, int | float) and not isinstance(value, bool):
            parent[last] = draw(st.sampled_from([float("nan"), float("inf"), -value, 10**400, 1e308 * 10]))
        elif op == "negate" and isinstance(value, int | float) and not isinstance(value, bool):
            parent[last] = -abs(value) - 1
        else:
            parent[last] = copy.deepcopy(draw(weird_values))
    return obj


def dump_json(obj: Any, ensure_ascii: bool = False) -> str:
    """JSON as a careless writer produces it: NaN and Infinity are written as such."""
    return json.dumps(obj, ensure_ascii=ensure_ascii)


@st.composite
def mutated_bytes(draw: st.DrawFn, seed: bytes) -> bytes:
    """``seed`` with one to three byte-level mutations (never longer than a few KiB more)."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(
            st.sampled_from(
                ["truncate", "flip", "delete", "duplicate", "insert", "line_dup", "line_drop", "bad_utf8"]
            )
        )
        size = len(data)
        at = draw(st.integers(0, size))
        if op == "truncate":
            del data[at:]
        elif op == "flip" and size:
            at = min(at, size - 1)
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 40))]
        elif op == "duplicate":
            span = bytes(data[at : at + draw(st.integers(1, 60))])
            data[at:at] = span
        elif op == "insert":
            data[at:at] = draw(hostile_text).encode("utf-8", "surrogatepass")
        elif op in ("line_dup", "line_drop"):
            lines = bytes(data).split(b"\n")
            k = draw(st.integers(0, max(len(lines) - 1, 0)))
            if op == "line_dup":
                lines.insert(k, lines[k])
            else:
                del lines[k]
            data = bytearray(b"\n".join(lines))
        elif op == "bad_utf8":
            data[at:at] = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe2\x82", b"\x00"]))
    return bytes(data)


@st.composite
def mutated_lines_json(draw: st.DrawFn, lines: list[Any]) -> bytes:
    """A JSONL file from parsed ``lines``, one of them mutated at the JSON level (and maybe at byte level)."""
    out = [json.loads(json.dumps(x)) for x in lines]
    k = draw(st.integers(0, len(out) - 1))
    out[k] = draw(mutated_json(out[k]))
    text = "".join(dump_json(x, draw(st.booleans())) + "\n" for x in out)
    extreme = draw(st.integers(0, 40))
    if extreme == 40:  # a number longer than Python converts (4300 digits)
        text = re.sub(r"(?<=: )-?\d+(\.\d+)?", "9" * 5000, text, count=1)
    elif extreme == 39:  # nesting deeper than Python's recursion limit
        depth = draw(st.sampled_from([1000, 100_000]))
        text = re.sub(r"(?<=: )(true|false|null|-?\d+)", "[" * depth + "]" * depth, text, count=1)
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 3)) == 0:
        data = draw(mutated_bytes(data))
    return data

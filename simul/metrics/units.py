"""The units latency is counted in, on the target side, chosen so that the field's scorers count the same.

SimulEval (``--eval-latency-unit``), simulstream and OmniSTEval count the target in one of two units:

* ``word``: whitespace-separated words, ``text.split()``. Used for languages written with spaces.
* ``char``: characters of the text with leading and trailing whitespace removed, spaces *inside* the text
  included: ``list(text.strip())``. Used for Chinese, Japanese and Thai. Spaces are counted because SimulEval
  counts the reference that way when it scores a log (``len(reference.strip())``, SimulEval 1.1.4
  ``LogInstance.reference_length``) and simulstream counts characters as ``list(text)``; counting the
  hypothesis the same way keeps hypothesis and reference in one unit.

The reference length follows SimulEval exactly: ``len(reference.split(" "))`` for words and
``len(reference.strip())`` for characters (identical to the hypothesis rule for references with single
spaces and no surrounding whitespace, which holds for FLORES-200 and ACL 60/60).

The rule, stated once: simul scores latency in the unit it exports (``simul export``), so the LAAL in
``run.json`` and the LAAL SimulEval computes on the export are the same number.
"""

from __future__ import annotations

from typing import Literal

from simul.common.errors import SimulError
from simul.common.languages import get_language

TargetUnit = Literal["word", "char"]
TARGET_UNITS: tuple[TargetUnit, ...] = ("word", "char")


def target_unit(tgt: str) -> TargetUnit:
    """``char`` for languages written without spaces (zh, ja, th), ``word`` otherwise."""
    return "char" if get_language(tgt).unspaced else "word"


def units(text: str, unit: str) -> list[str]:
    """The hypothesis ``text`` split into latency units."""
    if unit == "word":
        return text.split()
    if unit == "char":
        return list(text.strip())
    raise SimulError(f"unknown latency unit {unit!r}; choose one of {', '.join(TARGET_UNITS)}")


def reference_length(reference: str, unit: str) -> int:
    """|Y*| as SimulEval counts it when scoring a log (see the module docstring)."""
    if unit == "word":
        return len(reference.split(" "))
    if unit == "char":
        return len(reference.strip())
    raise SimulError(f"unknown latency unit {unit!r}; choose one of {', '.join(TARGET_UNITS)}")


def source_unit(src: str, timed: bool) -> str:
    """What a source position counts: ``ms`` for timed streams, else ``words`` or ``chars``."""
    if timed:
        return "ms"
    return "chars" if get_language(src).unspaced else "words"

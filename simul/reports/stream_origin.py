"""How two runs' streams differ, named for `simul diff` when it refuses to compare them.

`simul diff` compares two runs only on the same stream file (run.json's ``config.streams.evaluated_sha256``).
Streams from audio make that file on the machine that recognized the audio, and two recognitions of one
recording can differ for reasons that have nothing to do with the translation being compared: another
recognizer version, another CPU instruction set (CTranslate2 picks its kernels by it), other recognizer
settings, or another emission schedule (``--timing auto`` and ``measured`` follow the measured compute). A
bare "different streams" leaves the user to find which; this module finds it: whether the streams' steps
(words and times) differ or only their provenance, and which fields of the recognizer's record
(``provenance.asr``, or ``provenance.partials.asr`` for a whole talk) differ, with both sides' values.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from simul.common.safe_text import excerpt
from simul.streams.asr.measured import MEASURED
from simul.streams.format import Stream

MAX_FIELDS = 6  # named in the message; the rest counted


def asr_record(stream: Stream) -> Mapping[str, Any] | None:
    """The recognizer's record in a stream's provenance, or None for a stream not made from audio."""
    provenance = stream.provenance
    record = provenance.get("asr")
    if not isinstance(record, Mapping):
        partials = provenance.get("partials")
        record = partials.get("asr") if isinstance(partials, Mapping) else None
    return record if isinstance(record, Mapping) else None


def _flat(record: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _flat(value, f"{name}.")
        else:
            yield name, value


def recognizer_differences(base: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Every field of two recognizer records whose values differ (nested fields by dotted name), both
    values; a field one side lacks has None there."""
    b, n = dict(_flat(base)), dict(_flat(new))
    return {key: (b.get(key), n.get(key)) for key in sorted(b.keys() | n.keys()) if b.get(key) != n.get(key)}


def _steps(stream: Stream) -> list[tuple[str, float | None]]:
    return [(step.source, step.time_ms) for step in stream.steps]


def _show(value: Any) -> str:
    return excerpt(str(value), 40) if value is not None else "absent"


def _describe(key: str, base: Any, new: Any) -> str:
    """One field's difference: both values, or for two lists (such as ``cpu_isa``) the members only one
    side has (``-`` the base's, ``+`` the new one's)."""
    if isinstance(base, list) and isinstance(new, list):
        gone = [f"-{excerpt(str(x), 20)}" for x in base if x not in new]
        added = [f"+{excerpt(str(x), 20)}" for x in new if x not in base]
        changes = [*gone, *added]
        shown = " ".join(changes[:MAX_FIELDS]) + (
            f" and {len(changes) - MAX_FIELDS} more" if len(changes) > MAX_FIELDS else ""
        )
        return f"{key} {shown or 'in another order'}"
    return f"{key} {_show(base)} vs {_show(new)}"


def explain(base: Mapping[str, Stream], new: Mapping[str, Stream]) -> str:
    """One sentence on how two runs' stream sets differ (empty when nothing is found to name): the streams
    only one side has, how many shared streams differ in their words or times, and for streams from audio
    which recognizer fields differ. Fields of what was measured (compute, real-time factor, lag) are named
    apart from how the audio was recognized."""
    shared = [sid for sid in base if sid in new]
    parts: list[str] = []
    only = len(base) - len(shared), len(new) - len(shared)
    if any(only):
        parts.append(f"{only[0]} streams only in the base run, {only[1]} only in the new one")
    differing = [sid for sid in shared if _steps(base[sid]) != _steps(new[sid])]
    if differing:
        parts.append(f"{len(differing)} of {len(shared)} shared streams have other steps (words or times)")
    elif shared and not any(only):
        parts.append("the steps are the same; only what the stream files record beside them differs")
    fields: dict[str, tuple[Any, Any]] = {}
    for sid in shared:
        b, n = asr_record(base[sid]), asr_record(new[sid])
        if b is not None and n is not None:
            for key, values in recognizer_differences(b, n).items():
                fields.setdefault(key, values)
    how = {k: v for k, v in fields.items() if k.split(".")[-1] not in MEASURED}
    if how:
        named = [_describe(key, b, n) for key, (b, n) in list(how.items())[:MAX_FIELDS]]
        more = f" and {len(how) - MAX_FIELDS} more" if len(how) > MAX_FIELDS else ""
        parts.append("the audio was recognized differently: " + "; ".join(named) + more)
    measured = sorted(k for k in fields if k.split(".")[-1] in MEASURED)
    if measured:
        parts.append(
            "the recognitions' measured figures differ (" + ", ".join(measured) + "): under --timing auto "
            "or measured the schedule follows the machine's speed; --timing audio gives a stream of the "
            "audio alone"
        )
    return "; ".join(parts)

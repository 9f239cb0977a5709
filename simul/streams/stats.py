"""What a stream file holds: how many steps, how much each step adds, how often a step revises.

Units are whitespace words, or non-space characters for sources written without spaces (zh, ja, th).
Step t *extends* step t-1 when the units of t-1 are a prefix of those of t; otherwise it *revises* it
(changes or drops units; a shrinking step revises). The first step of a stream neither extends nor revises.
For long-form streams (whole talks or documents) the figures also list each talk: the units of its final
transcript, its length in seconds (the recording's ``duration_ms``, else the last step's time), its
reference segments and its steps.

Units *added* by a step are those after the longest common prefix with the previous step (all units for
the first step), so a revision that rewrites the last word adds one.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from simul.common.languages import get_language
from simul.common.sequences import common_prefix_length
from simul.streams.format import Stream


def units(text: str, unspaced: bool) -> list[str]:
    if unspaced:
        return [ch for ch in text if not ch.isspace()]
    return text.split()


@dataclass(frozen=True)
class StepChange:
    """How one step differs from the previous one of its stream."""

    kind: str  # "first", "extend" or "revise"
    added: int
    removed: int
    length: int


def step_changes(stream: Stream) -> list[StepChange]:
    unspaced = get_language(stream.src).unspaced
    changes: list[StepChange] = []
    previous: list[str] | None = None
    for step in stream.steps:
        current = units(step.source, unspaced)
        if previous is None:
            changes.append(StepChange("first", len(current), 0, len(current)))
        else:
            keep = common_prefix_length(previous, current)
            kind = "extend" if keep == len(previous) else "revise"
            changes.append(StepChange(kind, len(current) - keep, len(previous) - keep, len(current)))
        previous = current
    return changes


def _summary(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "median": 0.0, "min": 0.0, "max": 0.0}
    return {
        "mean": round(statistics.fmean(values), 3),
        "median": round(float(statistics.median(values)), 3),
        "min": round(float(min(values)), 3),
        "max": round(float(max(values)), 3),
    }


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole > 0 else 0.0


def stream_stats(streams: Sequence[Stream]) -> dict[str, Any]:
    """Figures for ``simul streams stats`` (JSON-ready)."""
    steps_per_stream = [len(s.steps) for s in streams]
    added: list[float] = []
    final_lengths: list[float] = []
    later_steps = middle_steps = revising = revising_final = 0
    unit_kinds: set[str] = set()
    for stream in streams:
        unit_kinds.add("char" if get_language(stream.src).unspaced else "word")
        changes = step_changes(stream)
        added.extend(c.added for c in changes)
        final_lengths.append(changes[-1].length)
        later_steps += len(changes) - 1
        middle_steps += max(len(changes) - 2, 0)
        revising += sum(1 for c in changes if c.kind == "revise")
        revising_final += len(changes) > 1 and changes[-1].kind == "revise"
    timed = [s for s in streams if s.timed]
    pairs = Counter(f"{s.src}-{s.tgt}" for s in streams)
    out: dict[str, Any] = {
        "streams": len(streams),
        "languages": dict(sorted(pairs.items())),
        "steps": sum(steps_per_stream),
        "steps_per_stream": _summary(steps_per_stream),
        "unit": "/".join(sorted(unit_kinds)),
        "added_per_step": _summary(added),
        "final_length": _summary(final_lengths),
        "revising_steps": revising,
        "revise_share": _share(revising, later_steps),
        # simulated partials end with a cased, punctuated final step, which always revises: this share
        # leaves final steps out
        "revise_share_before_final": _share(revising - revising_final, middle_steps),
        "timed_streams": len(timed),
        "untimed_streams": len(streams) - len(timed),
        "simulated_streams": sum(1 for s in streams if s.provenance.get("simulated") is True),
        "with_reference": sum(1 for s in streams if s.reference is not None),
        # how many references each stream has, e.g. {"0": 1, "2": 40}: BLEU and chrF use them all
        "references_per_stream": {
            str(n): count for n, count in sorted(Counter(len(s.references) for s in streams).items())
        },
    }
    if timed:
        out["final_time_ms"] = _summary([s.steps[-1].time_ms or 0.0 for s in timed])
    out.update(_partials_counts(streams))
    talks = [s for s in streams if s.longform]
    if talks:
        out["longform_streams"] = len(talks)
        out["talks"] = [talk_stats(s) for s in talks]
    return out


def talk_seconds(stream: Stream) -> float | None:
    """A talk's length: the recording's (``duration_ms``), else its last step's time; None when untimed."""
    if stream.duration_ms is not None:
        return stream.duration_ms / 1000.0
    last = stream.steps[-1].time_ms
    return None if last is None else last / 1000.0


def talk_stats(stream: Stream) -> dict[str, Any]:
    """One long-form stream: its length (units of the final transcript, seconds), segments and steps."""
    seconds = talk_seconds(stream)
    return {
        "id": stream.id,
        "words": len(units(stream.final_source, get_language(stream.src).unspaced)),
        "seconds": None if seconds is None else round(seconds, 1),
        "segments": len(stream.segments),
        "steps": len(stream.steps),
        "references": len(stream.references),
    }


def _whole(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _partials_counts(streams: Sequence[Stream]) -> dict[str, Any]:
    """Unaligned counts that the importer recorded in provenance, once per partials file and talk."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for stream in streams:
        partials = stream.provenance.get("partials")
        if not isinstance(partials, dict) or "file" not in partials:
            continue
        key = (str(partials.get("file")), str(stream.provenance.get("talk")))
        seen.setdefault(key, partials)
    if not seen:
        return {}

    def total(name: str) -> int:
        # provenance is free-form: a count that is not a whole number >= 0 (a hand edit) is not added
        return sum(_whole(p.get(name)) for p in seen.values())

    return {
        "partials_files": len(seen),
        "partials": total("partials"),
        "unaligned_partials": total("unaligned_partials"),
        "unaligned_words": total("unaligned_words"),
    }

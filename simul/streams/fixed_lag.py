"""The one place where fixed-lag streams are built from line-aligned text (FLORES, `simul streams text`).

Importers read their files into :class:`AlignedLine` records (1-based line, source, references, and where
each came from, for messages); :func:`lag_streams` selects lines ``start..`` (at most ``limit``), checks
them, and turns each into a stream whose steps follow :func:`simul.streams.lag.lag_prefixes`. Every
importer thus shares the step rule, the selection, the checks and the provenance keys
``line, lag, unit, simulated``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from simul.common.errors import SimulError
from simul.common.languages import Language
from simul.common.limits import check_source, check_steps
from simul.streams.format import Step, Stream
from simul.streams.lag import lag_prefixes

LagUnit = Literal["word", "char"]
UNITS: tuple[LagUnit, ...] = get_args(LagUnit)


@dataclass(frozen=True)
class AlignedLine:
    """One line of a line-aligned test set: the source and its references (possibly none)."""

    line: int  # 1-based
    source: str
    references: tuple[str, ...]
    where_source: str  # "file:line", for messages
    where_references: tuple[str, ...]


@dataclass
class LagImport:
    """The streams built, and the lines skipped with ``skip_empty`` (reason -> line numbers)."""

    streams: list[Stream]
    skipped: dict[str, list[int]] = field(default_factory=dict)

    @property
    def skipped_count(self) -> int:
        return sum(len(lines) for lines in self.skipped.values())


def default_unit(src: Language) -> str:
    """Characters for sources written without spaces (zh, ja, th), else whitespace words."""
    return "char" if src.unspaced else "word"


def check_selection(lag: int, start: int, limit: int | None) -> None:
    if lag < 1:
        raise SimulError(f"--lag must be at least 1, got {lag}")
    if start < 1:
        raise SimulError(f"--start is 1-based and must be at least 1, got {start}")
    if limit is not None and limit < 1:
        raise SimulError(f"--limit must be at least 1, got {limit}")


def lag_stream(
    stream_id: str,
    src: Language,
    tgt: Language,
    source: str,
    references: Sequence[str],
    lag: int,
    unit: str,
    provenance: Mapping[str, Any],
) -> Stream:
    """A fixed-lag stream: step t holds the first min(t*lag, n) units of the n-unit source."""
    if unit not in UNITS:
        raise SimulError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    prefixes = lag_prefixes(source, lag, unspaced=unit == "char")
    check_steps(len(prefixes), f"stream {stream_id} (at --lag {lag})")
    steps = tuple(Step(source=p, final=i == len(prefixes) - 1) for i, p in enumerate(prefixes))
    refs = [r.strip() for r in references]
    return Stream(
        id=stream_id,
        src=src.short,
        tgt=tgt.short,
        steps=steps,
        reference=refs[0] if refs else None,
        provenance={**provenance, "lag": lag, "unit": unit, "simulated": True},
        more_references=tuple(refs[1:]),
    )


def lag_streams(
    lines: Sequence[AlignedLine],
    *,
    id_prefix: str,
    src: Language,
    tgt: Language,
    lag: int,
    unit: str | None = None,
    provenance: Mapping[str, Any] | None = None,
    start: int = 1,
    limit: int | None = None,
    skip_empty: bool = False,
    offer_skip: bool = True,
    what: str = "the source",
) -> LagImport:
    """Streams ``<id_prefix>-<line>`` for lines start.. (at most ``limit`` lines) of a line-aligned set.

    An empty source or reference line is an error naming its file and line, or, with ``skip_empty``, a
    skipped line counted under its reason (``offer_skip``: the error suggests ``--skip-empty``).
    ``what`` names the source in the message for a ``--start``
    past the end.
    """
    check_selection(lag, start, limit)
    if start > len(lines):
        raise SimulError(f"--start {start} is past the last line of {what} ({len(lines)} lines)")
    end = len(lines) if limit is None else min(len(lines), start - 1 + limit)
    chosen_unit = unit or default_unit(src)
    result = LagImport(streams=[])
    for row in lines[start - 1 : end]:
        reason = None
        if not row.source.strip():
            reason, where = "empty source line", row.where_source
        else:
            empty = [w for r, w in zip(row.references, row.where_references, strict=True) if not r.strip()]
            if empty:
                reason, where = "empty reference line", empty[0]
        if reason is not None:
            if not skip_empty:
                hint = " (pass --skip-empty to leave such lines out)" if offer_skip else ""
                raise SimulError(f"{where}: {reason}{hint}")
            result.skipped.setdefault(reason, []).append(row.line)
            continue
        check_source(row.source, row.where_source)
        result.streams.append(
            lag_stream(
                f"{id_prefix}-{row.line}",
                src,
                tgt,
                row.source,
                row.references,
                lag,
                chosen_unit,
                {**(provenance or {}), "line": row.line},
            )
        )
    return result

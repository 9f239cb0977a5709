"""What an importer hands over: per stream, the system's updates, and what its format cannot tell."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Update:
    """One output of the system: the source it had seen and what it produced (and, if known, showed)."""

    source: str
    output: str
    time_ms: float | None = None
    display: str | None = None  # None: what was produced was shown
    seconds: float | None = None  # the update's wall-clock, when the format records it
    # long-form facts a format may state directly (see StepRecord.talk): the computation-aware time the
    # update was emitted on the talk's clock, and how many characters of the output are confirmed for good
    elapsed_ms: float | None = None
    committed_chars: int | None = None


@dataclass
class SystemStream:
    """The updates of one stream, with where the stream was read (``file:line``) for error messages."""

    id: str
    updates: list[Update]
    where: str
    # the complete source as the system's file states it, checked against the stream file when given
    source: str | None = None


@dataclass
class SystemOutputs:
    streams: list[SystemStream]
    # fields of the step records (simul.metrics.spec.RECORD_FIELDS) that this format does not record
    not_available: set[str]
    notes: list[str] = field(default_factory=list)

"""What a run records about its references, so that runs scored against different references are not compared.

BLEU and chrF use every reference of a stream (sacrebleu's multi-reference scores); COMET and LAAL's
reference length need one reference and use the first. NE uses no reference (it is normalized by the final
output's length).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from simul.streams.format import Stream

# which reference each metric uses (recorded in run.json, stated in the docs)
REFERENCE_USE = {"bleu": "all", "chrf": "all", "comet": "first", "latency": "first"}


def references_digest(streams: Sequence[Stream]) -> str:
    """SHA-256 over the stream ids and their references, in order."""
    payload = json.dumps([[s.id, list(s.references)] for s in streams], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def reference_summary(streams: Sequence[Stream]) -> dict[str, Any]:
    """``config.streams.references`` of run.json: count per stream, digest, which metric uses which."""
    counts = [len(s.references) for s in streams]
    return {
        "min_per_stream": min(counts, default=0),
        "max_per_stream": max(counts, default=0),
        "sha256": references_digest(streams),
        "use": dict(REFERENCE_USE),
    }


def describe_references(summary: dict[str, Any] | None) -> str:
    """``2 per stream`` or ``1-2 per stream`` (for messages)."""
    if not summary:
        return "unknown"
    low, high = summary.get("min_per_stream"), summary.get("max_per_stream")
    return f"{low} per stream" if low == high else f"{low}-{high} per stream"


def references_caption(summary: dict[str, Any] | None) -> str | None:
    """A line for the eval table when the references are not one per stream (None when they are)."""
    if not summary or summary.get("max_per_stream") == 1 == summary.get("min_per_stream"):
        return None
    if summary.get("min_per_stream") == 0:
        return None  # streams without a reference: report.reference_note says what was computed on which
    return (
        f"references: {describe_references(summary)}; BLEU and chrF use all of them, COMET and LAAL the first"
    )


def reference_lines(stream: Stream) -> list[str]:
    """``reference: ...``, or ``reference 1: ...``, ``reference 2: ...`` when there are several."""
    refs = stream.references
    if len(refs) == 1:
        return [f"reference: {refs[0]}"]
    return [f"reference {number}: {ref}" for number, ref in enumerate(refs, start=1)]


def testset_summary(streams: Sequence[Stream]) -> list[dict[str, Any]]:
    """The sacrebleu test sets the streams came from (name, language pair, sacrebleu version, references)."""
    seen: dict[str, dict[str, Any]] = {}
    for stream in streams:
        prov = stream.provenance
        if "testset" in prov:
            entry = {
                "name": prov["testset"],
                "langpair": prov.get("langpair"),
                "sacrebleu": prov.get("sacrebleu"),
                "references": prov.get("references"),
            }
            seen.setdefault(json.dumps(entry, sort_keys=True), entry)
    return list(seen.values())


# A count beyond this is no count of words or segments (and a float could not hold it exactly).
MAX_COUNT = 2**53


def _count(value: Any) -> int:
    """A count of a segment-time record: provenance is free-form (a hand edit, another tool), so a value that
    is not a whole number from 0 to :data:`MAX_COUNT` is not added (as simul.streams.stats does with the
    importers' counts) instead of stopping `simul eval` or `simul score` on a figure of a caption."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT else 0


def segment_times_summary(streams: Sequence[Stream]) -> dict[str, Any] | None:
    """``config.streams.segment_times`` of run.json: how many talks have reference segment times derived from
    the recognizer's words (``provenance["segment_times"]``, simul.streams.asr.segment_times) rather than
    given by a segment YAML, and how well the words matched; None when no talk has. A record counts when its
    ``derived`` is true; its counts are read with :func:`_count`."""
    talks = [s for s in streams if s.longform]
    derived = [
        record
        for s in talks
        if isinstance(record := s.provenance.get("segment_times"), dict) and record.get("derived") is True
    ]
    if not derived:
        return None
    method = derived[0].get("method")
    return {
        "derived_talks": len(derived),
        "talks": len(talks),
        "method": method if isinstance(method, str) else None,
        "source_words": sum(_count(r.get("source_words")) for r in derived),
        "matched_words": sum(_count(r.get("matched_words")) for r in derived),
        "interpolated_segments": sum(_count(r.get("interpolated_segments")) for r in derived),
    }


def segment_times_caption(summary: dict[str, Any] | None) -> str | None:
    """A line for the eval and score tables when segment times were derived from the recognizer."""
    if not summary:
        return None
    return (
        f"segment times derived from the recognizer's words for {summary['derived_talks']} of "
        f"{summary['talks']} talks ({summary['matched_words']} of {summary['source_words']} source words "
        f"matched, {summary['interpolated_segments']} segments interpolated), not from a segment YAML"
    )

"""Long-form latency on re-segmented talks: LongYAAL, LongLAAL (= StreamLAAL), LongAL, LongDAL; CU and CA.

Definitions follow OmniSTEval 0.1.10 (``omnisteval/scoring.py``: ``YAALScorer(is_longform=True)``,
``LAALScorer``, ``ALScorer``, ``DALScorer``, applied by ``evaluate_instances`` to the output of
``resegment``), which IWSLT 2026 uses. For reference segment s of a talk, with offset o_s and duration |X_s|
(ms, or source words for untimed documents), the units that re-segmentation put into s have delays
d_i = D_i - o_s (D_i on the talk's axis; CA uses the elapsed times E_i - o_s), |Y| = their number, |Y*| the
length of s's first reference (words: ``len(ref.split(" "))``; characters: ``len(ref)`` with spaces removed,
as OmniSTEval's ``--char_level`` strips them from the references) and R_s = (end of the talk's last segment)
- o_s, the time left to the recording's end (``data._add_time_to_recording_end_to_segmentation``).

* LongYAAL (Polák et al., 2025, "Better Late Than Never", arXiv:2509.17349): gamma = max(|Y|, |Y*|) / |X_s|,
  tau = number of leading units with d_i < R_s, LongYAAL_s = (1/tau) sum_{i<=tau} [d_i - (i-1)/gamma];
  no value when d_1 >= R_s. Unlike short-form YAAL, units emitted after the segment's end still count
  ("counts words until the recording's end").
* LongLAAL (Papi et al., 2022; the StreamLAAL of Papi et al., 2024, "StreamAtt", ACL, when the
  re-segmentation is mWER): gamma = max(|Y|, |Y*|) / |X_s|, tau = the first i with d_i >= |X_s| (|Y| if
  none), LongLAAL_s = (1/tau) sum_{i<=tau} [d_i - (i-1)/gamma]; d_1 when d_1 > |X_s|.
* LongAL (Ma et al., 2019, "STACL"): the same with gamma = |Y*| / |X_s|.
* LongDAL (Arivazhagan et al., 2019): gamma = |Y| / |X_s|, d'_1 = d_1, d'_i = max(d_i, d'_(i-1) + 1/gamma),
  LongDAL_s = (1/|Y|) sum_i [d'_i - (i-1)/gamma].

The corpus figure is the mean over segments that give a value. **Skipped segments** (as OmniSTEval): a segment
that received no units gives no value for any metric; LongYAAL also skips a segment whose first unit came
after the recording's end. A zero-length segment (|X_s| = 0) gives no LAAL/AL/DAL (OmniSTEval leaves its
``source_length`` unset) and no LongYAAL (where OmniSTEval 0.1.10 fails on it and drops every latency
metric).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from simul.metrics.bands import BANDS
from simul.metrics.latency import al, dal, laal, yaal
from simul.metrics.longform.resegment import Resegmentation
from simul.metrics.longform.talk import LongformTalk

LATENCY_METRICS = ("long_yaal", "long_laal", "long_al", "long_dal")
# IWSLT 2026 latency regimes of computation-unaware LongYAAL, in ms (speech talks only)
REGIMES = BANDS  # IWSLT 2026's bands (simul.metrics.bands)


def reference_length(reference: str, unit: str) -> int:
    """|Y*| as OmniSTEval's long-form Instance counts it (char level: references without spaces)."""
    reference = reference.strip()  # OmniSTEval reads the reference file's lines stripped
    if unit == "char":
        return len(reference.replace(" ", ""))
    return len(reference.split(" "))


def long_yaal(
    delays: Sequence[float], source_length: float, reference_length: int, to_end: float
) -> float | None:
    """LongYAAL of one segment (delays relative to its offset; ``to_end`` = R_s): short-form YAAL counting
    units until the recording's end."""
    return yaal(delays, source_length, reference_length, until=to_end)


def long_laal(delays: Sequence[float], source_length: float, reference_length: int) -> float | None:
    """LongLAAL (StreamLAAL) of one segment: LAAL on its delays."""
    return laal(delays, source_length, reference_length)


def long_al(delays: Sequence[float], source_length: float, reference_length: int) -> float | None:
    """LongAL of one segment (the reference length as the oracle rate; long-form segments always have a
    non-empty reference)."""
    return al(delays, source_length, reference_length)


def long_dal(delays: Sequence[float], source_length: float) -> float | None:
    """LongDAL of one segment (the hypothesis length as the rate)."""
    return dal(delays, source_length)


@dataclass(frozen=True)
class SegmentLatency:
    """One segment's figures (None where the segment gives no value); CU and CA."""

    long_yaal: float | None
    long_laal: float | None
    long_al: float | None
    long_dal: float | None
    ca_long_yaal: float | None
    ca_long_laal: float | None
    ca_long_al: float | None
    ca_long_dal: float | None


def _figures(
    delays: Sequence[float], length: float, ref_len: int, to_end: float
) -> tuple[float | None, float | None, float | None, float | None]:
    return (
        long_yaal(delays, length, ref_len, to_end),
        long_laal(delays, length, ref_len),
        long_al(delays, length, ref_len),
        long_dal(delays, length),
    )


def segment_latencies(talks: Sequence[LongformTalk], reseg: Resegmentation) -> list[list[SegmentLatency]]:
    """Per talk, per segment, the eight figures (see the module docstring)."""
    out = []
    for talk, outputs in zip(talks, reseg.talks, strict=True):
        end = talk.recording_end
        rows = []
        for seg, got in zip(talk.segments, outputs, strict=True):
            ref_len = reference_length(seg.references[0] if seg.references else "", talk.unit)
            cu = [d - seg.offset for d in got.delays]
            ca = [e - seg.offset for e in got.elapsed] if got.elapsed is not None else []
            to_end = end - seg.offset
            rows.append(
                SegmentLatency(
                    *_figures(cu, seg.duration, ref_len, to_end), *_figures(ca, seg.duration, ref_len, to_end)
                )
            )
        out.append(rows)
    return out


def corpus_latency(rows: Sequence[Sequence[SegmentLatency]]) -> dict[str, float | None]:
    """Each metric's mean over the segments (of every talk) that give a value; None when none does."""
    names = [f"{p}{m}" for p in ("", "ca_") for m in LATENCY_METRICS]
    result: dict[str, float | None] = {}
    for name in names:
        values = [getattr(r, name) for talk in rows for r in talk if getattr(r, name) is not None]
        result[name] = sum(values) / len(values) if values else None
    return result


def regime(long_yaal_cu: float | None, timed: bool) -> str:
    """IWSLT 2026's latency regime of a system by its computation-unaware LongYAAL: ``low`` (up to 2000 ms),
    ``high`` (2000-4000 ms), else ``over``; ``n/a`` for text documents or without a value."""
    if not timed or long_yaal_cu is None:
        return "n/a"
    for name, _, upper in REGIMES:
        if long_yaal_cu <= upper:
            return name
    return "over"

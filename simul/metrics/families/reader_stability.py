"""Stability as a reader sees it: how long the words a reader sees keep changing, and how long the
wrong ones stayed on screen, for the raw outputs and for what was displayed.

Normalized erasure (simul.metrics.erasure; Arivazhagan et al., 2020, "Re-translation versus Streaming for
Simultaneous Translation", IWSLT) counts erased tokens. A reader also suffers from how long a wrong word was
on screen before it was taken back, and from waiting for a word to become final. These figures are new in
simul: no peer tool (SimulEval, OmniSTEval, simulstream) reports them; the prefix rule (a token is changed
when it is erased, i.e. lies past the longest common prefix of two consecutive texts) is NE's.

Notation, per stream: o_1 .. o_T the texts of its updates (raw outputs, or displays), tokenized with the NE
tokenizer; tau_t the clock of update t: the stream's time in ms (``time_ms``; for a talk the update's
emission time) when every update has one, else the source words read by then (whitespace words; non-space
characters for zh/ja/th; a talk's ``source_words``). l_t = |LCP(o_(t-1), o_t)| with o_0 empty. A token
instance is born at the update that wrote it at its position and lives until an update erases it:

    born_t(j) = born_(t-1)(j) for j < l_t,  t for l_t <= j < |o_t|

* **Time to final** (``ttf``, ``ttf_display``; ``ttf_p90``, ``ttf_display_p90``): for each token i of the
  final text o_T, first_i = min{t : |o_t| > i} (the first update that showed anything at position i) and
  final_i = born_T(i) (the update that wrote the token that stayed):

      TTF_i = tau_(final_i) - tau_(first_i)

  pooled over every final token of every stream: the mean, and the 90th percentile (nearest rank:
  the ceil(0.9 N)-th smallest). A token shown right the first time has TTF 0. Also in updates
  (final_i - first_i; counts ``reader_stability.ttf_updates``).
* **Time-weighted erasure** (``twe``, ``twe_display``): each erased token weighted by how long it was shown,
  over the final tokens as NE:

      TWE = sum over streams, t, and l_t <= j < |o_(t-1)| of (tau_t - tau_(born_(t-1)(j)))
            / sum over streams of |o_T|

  in ms (source words) per final token; with every weight 1 it would be NE.
* **Changes per minute** (``changes_per_min``, ``changes_per_min_display``; timed streams only): updates that
  erase something (l_t < |o_(t-1)|) per minute of displayed time, the time from the first update that shows
  a token to the stream's last update, pooled: sum of changes / sum of displayed minutes.
* **Changed share** (``changed_share``, ``changed_share_display``): of the token instances ever shown, the
  percentage later erased: 100 * sum of erasures / sum over t of (|o_t| - l_t). Every instance shown is
  either erased or final, so pooled it equals 100 * NE / (1 + NE): NE as a reader reads it.

A run whose records hold no revisions (``simul ingest`` of append-only logs) gets None for all of them
(``needs``), as for NE.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from simul.common.languages import get_language
from simul.common.sequences import common_prefix_length
from simul.decoding.records import StreamResult
from simul.metrics.family import Family, FamilyInput, Figures, rounded
from simul.metrics.latency import source_positions
from simul.metrics.spec import MetricInfo
from simul.metrics.tokenizers import get_tokenizer

VIEWS = {"": "raw outputs", "_display": "what was displayed"}


@dataclass
class StreamStability:
    """One stream's sums (one view: raw or displayed), for pooling over streams."""

    ttf: list[float] = field(default_factory=list)  # per final token, clock units
    ttf_updates: list[int] = field(default_factory=list)  # per final token, updates
    weighted_erasure: float = 0.0
    erased: int = 0
    shown: int = 0  # token instances ever written
    changes: int = 0  # updates that erased something
    displayed: float = 0.0  # clock from the first shown token to the last update
    final_tokens: int = 0


def stream_stability(texts: Sequence[Sequence[str]], clock: Sequence[float]) -> StreamStability:
    """The module's sums for one stream: ``texts`` its tokenized texts in update order, ``clock`` tau_t."""
    out = StreamStability()
    previous: Sequence[str] = ()
    born: list[int] = []
    first: list[int] = []  # first[i]: the first update that showed a token at position i
    first_shown: int | None = None
    for t, current in enumerate(texts):
        keep = common_prefix_length(previous, current)
        if keep < len(previous):
            out.changes += 1
            out.erased += len(previous) - keep
            out.weighted_erasure += sum(clock[t] - clock[born[j]] for j in range(keep, len(previous)))
        out.shown += len(current) - keep
        born = born[:keep] + [t] * (len(current) - keep)
        while len(first) < len(current):
            first.append(t)
        if current and first_shown is None:
            first_shown = t
        previous = current
    out.final_tokens = len(previous)
    out.ttf = [clock[born[i]] - clock[first[i]] for i in range(len(previous))]
    out.ttf_updates = [born[i] - first[i] for i in range(len(previous))]
    if first_shown is not None and texts:
        out.displayed = clock[len(texts) - 1] - clock[first_shown]
    return out


def percentile90(values: Sequence[float]) -> float | None:
    """The nearest-rank 90th percentile: the ceil(0.9 N)-th smallest value (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    return float(ordered[max(1, math.ceil(0.9 * len(ordered))) - 1])


def _clock(result: StreamResult, unspaced: bool) -> tuple[list[float], str]:
    steps = result.steps
    if steps and all(s.time_ms is not None for s in steps):
        return [float(s.time_ms or 0.0) for s in steps], "ms"
    if steps and all(s.talk is not None and "source_words" in s.talk for s in steps):
        return [float((s.talk or {})["source_words"]) for s in steps], "source words"
    return source_positions([s.source for s in steps], [None] * len(steps), unspaced), "source words"


def _pooled(streams: Sequence[StreamStability], timed: bool) -> dict[str, float | None]:
    ttf = [x for s in streams for x in s.ttf]
    final = sum(s.final_tokens for s in streams)
    shown = sum(s.shown for s in streams)
    minutes = sum(s.displayed for s in streams) / 60000.0
    return {
        "ttf": rounded(sum(ttf) / len(ttf), 3) if ttf else None,
        "ttf_p90": rounded(percentile90(ttf), 3),
        "twe": round(sum(s.weighted_erasure for s in streams) / final, 4) if final else None,
        "changes_per_min": round(sum(s.changes for s in streams) / minutes, 3) if timed and minutes else None,
        "changed_share": round(100.0 * sum(s.erased for s in streams) / shown, 3) if shown else None,
    }


def reader_stability_figures(given: FamilyInput) -> Figures:
    tokenize = get_tokenizer(given.ne_tokenizer)
    per_view: dict[str, list[StreamStability]] = {view: [] for view in VIEWS}
    units: set[str] = set()
    rows: list[dict[str, Any]] = []
    for result in given.results:
        stream = given.streams[result.stream_id]
        clock, unit = _clock(result, get_language(stream.src).unspaced)
        units.add(unit)
        row: dict[str, Any] = {}
        for view in VIEWS:
            texts = [tokenize(s.display if view else s.output) for s in result.steps]
            got = stream_stability(texts, clock)
            per_view[view].append(got)
            row[f"ttf{view}"] = round(sum(got.ttf) / len(got.ttf), 3) if got.ttf else None
            twe = got.weighted_erasure / got.final_tokens if got.final_tokens else None
            row[f"twe{view}"] = rounded(twe, 4)
        rows.append(row)
    metrics: dict[str, float | None] = {}
    counts: dict[str, Any] = {}
    mixed = len(units) > 1
    unit = "mixed" if mixed else (units.pop() if units else "ms")
    summary: dict[str, Any] = {"unit": unit, "ttf_updates": {}}
    for view, streams in per_view.items():
        pooled = _pooled(streams, unit == "ms")
        for name, value in pooled.items():
            # a run mixing timed and untimed streams has no common clock: its timed figures are None
            clocked = name in ("ttf", "ttf_p90", "twe", "changes_per_min")
            metrics[_name(name, view)] = None if mixed and clocked else value
        updates = [x for s in streams for x in s.ttf_updates]
        summary["ttf_updates"][VIEWS[view]] = {
            "mean": round(sum(updates) / len(updates), 3) if updates else None,
            "p90": percentile90(updates),
        }
        summary[f"changes{view}"] = sum(s.changes for s in streams)
    counts["reader_stability"] = summary
    return Figures(metrics=metrics, counts=counts, rows=rows)


def _name(name: str, view: str) -> str:
    """ttf + _display -> ttf_display; ttf_p90 + _display -> ttf_display_p90."""
    if name == "ttf_p90":
        return f"ttf{view}_p90"
    return f"{name}{view}"


def _specs() -> tuple[MetricInfo, ...]:
    specs: list[MetricInfo] = []
    for view, what in VIEWS.items():
        short = " disp" if view else ""
        specs += [
            MetricInfo(
                f"ttf{view}",
                False,
                f"TTF{short}",
                f"time to final of {what}: mean over final tokens of how long after a token first appeared "
                "at its position it stopped changing (ms, or source words for untimed streams)",
                fmt=".4g",
                units="ms or source words",
                needs=("revisions",),
            ),
            MetricInfo(
                f"ttf{view}_p90",
                False,
                f"TTF{short} p90",
                f"time to final of {what}, 90th percentile over final tokens",
                fmt=".4g",
                units="ms or source words",
                needs=("revisions",),
            ),
            MetricInfo(
                f"twe{view}",
                False,
                f"TWE{short}",
                f"time-weighted erasure of {what}: each erased token weighted by how long it was shown, per "
                "final token",
                fmt=".4g",
                units="ms or source words per final token",
                needs=("revisions",),
            ),
            MetricInfo(
                f"changes_per_min{view}",
                False,
                f"Chg/min{short}",
                f"updates of {what} that erase something, per minute of displayed time (timed streams)",
                fmt=".3g",
                units="per minute",
                needs=("revisions",),
            ),
            MetricInfo(
                f"changed_share{view}",
                False,
                f"Changed{short} %",
                f"percent of the tokens shown in {what} that were later erased",
                fmt=".3g",
                units="percent",
                needs=("revisions",),
            ),
        ]
    return tuple(specs)


FAMILY = Family(name="reader_stability", specs=_specs(), figures=reader_stability_figures)

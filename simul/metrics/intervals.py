"""How sure a speed figure is: 95 % intervals for TPS and speedup by a paired two-level bootstrap.

A speed figure moves from run to run with the machine (other tenants' memory traffic, frequency, the OS),
and within a run with the streams that happened to be chosen. `simul bench --rounds N` decodes the whole
stream set N times, the rounds taking turns in one process (simul.runs.side_by_side), RT and the other
methods interleaved stream by stream within each round. With ``cells[m][r][s]`` = (output tokens,
t_gen, t_prompt + t_gen) of method m on stream s in round r, each of B resamples (Efron & Tibshirani, *An
Introduction to the Bootstrap*, 1993, ch. 13; over streams as Koehn, 2004, resamples sentences):

1. draws N rounds with replacement, and within each drawn round n streams with replacement (n: the number
   of streams): a two-level (cluster) bootstrap, so that a round slow as a whole stays slow in a resample;
2. computes every method on those same (round, stream) cells:

       TPS*_m     = sum of output tokens / sum of t_gen
       speedup*_m = TPS*_m / TPS*_RT            (the same cells: paired, so a slow spell slows both)

   and likewise TPS e2e (t_prompt + t_gen) and speedup e2e;

3. the 95 % interval is the 2.5th to 97.5th percentile of the B values (percentile bootstrap).

The point figure is the pooled one: the sums over every stream of every round. With one round the interval
is over streams alone (how much the figure owes to which streams were chosen); with more, the rounds add the
machine's drift between passes over the same streams. The resampling is seeded (:data:`SEED`), so the same
records give the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from simul.decoding.records import StreamResult
from simul.request.methods import Method

RESAMPLES = 2000
SEED = 0
CONFIDENCE = 0.95
FIGURES = ("tps", "tps_e2e", "speedup", "speedup_e2e")


@dataclass(frozen=True)
class Interval:
    """A figure, its 95 % interval, and its value in each round (in round order)."""

    value: float
    low: float
    high: float
    rounds: tuple[float, ...]

    def to_json(self, digits: int) -> dict[str, Any]:
        """Rounded; a figure without time to divide by is None (run files are strict JSON)."""
        return {
            "value": _number(self.value, digits),
            "low": _number(self.low, digits),
            "high": _number(self.high, digits),
            "rounds": [_number(v, digits) for v in self.rounds],
        }


def _number(value: float, digits: int) -> float | None:
    return round(value, digits) if math.isfinite(value) else None


@dataclass(frozen=True)
class SpeedIntervals:
    """Every method's speed figures with their intervals (method key -> figure name -> interval)."""

    rounds: int
    streams: int
    resamples: int
    figures: Mapping[str, Mapping[str, Interval]]

    def to_json(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds,
            "streams": self.streams,
            "resamples": self.resamples,
            "confidence": CONFIDENCE,
            "method": "paired bootstrap over streams and rounds (percentile)",
            "methods": {
                key: {
                    name: interval.to_json(2 if name.startswith("tps") else 3)
                    for name, interval in by.items()
                }
                for key, by in self.figures.items()
            },
        }


def _cells(results: Sequence[StreamResult], ids: Sequence[str]) -> npt.NDArray[np.float64]:
    """(output tokens, t_gen, t_prompt + t_gen) per stream, in ``ids`` order."""
    by_id = {r.stream_id: r for r in results}
    out = np.zeros((len(ids), 3))
    for k, sid in enumerate(ids):
        steps = by_id[sid].steps
        out[k] = (
            sum(len(s.output_ids) for s in steps),
            sum(s.t_gen for s in steps),
            sum(s.t_prompt + s.t_gen for s in steps),
        )
    return out


def _ratio(tokens: npt.NDArray[np.float64], seconds: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(seconds > 0, tokens / np.where(seconds > 0, seconds, 1.0), np.nan)


def speed_intervals(
    rounds: Sequence[Mapping[str, Sequence[StreamResult]]],
    rt_key: str | None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> SpeedIntervals:
    """The intervals of every method's TPS (and, with RT among them, speedup) over the rounds' results
    (``rounds[r][method key]``: one round's stream results of that method; every round holds the same
    methods and streams)."""
    if not rounds:
        raise ValueError("no rounds to resample")
    keys = list(rounds[0])
    ids = sorted({r.stream_id for r in rounds[0][keys[0]]}) if keys else []
    for number, one in enumerate(rounds):
        if list(one) != keys or any(sorted(r.stream_id for r in one[k]) != ids for k in keys):
            raise ValueError(f"round {number + 1} holds other methods or streams than round 1")
    # cells[m, r, s, (tokens, gen, e2e)]
    cells = np.array([[_cells(one[key], ids) for one in rounds] for key in keys]).reshape(
        len(keys), len(rounds), len(ids), 3
    )
    rng = np.random.default_rng(seed)
    n, count = len(ids), len(rounds)
    picks = rng.integers(0, count, size=(resamples, count))
    drawn = np.zeros((len(keys), resamples, 3))  # (methods, resamples, 3): sums over the drawn cells
    for j in range(count):
        streams = rng.integers(0, n, size=(resamples, n)) if n else np.zeros((resamples, 0), dtype=int)
        drawn += cells[:, picks[:, j, None], streams, :].sum(axis=2)
    pooled = cells.sum(axis=(1, 2))  # (methods, 3)
    per_round = cells.sum(axis=2)  # (methods, rounds, 3)
    tps = {"tps": 1, "tps_e2e": 2}
    rt = keys.index(rt_key) if rt_key in keys else None
    figures: dict[str, dict[str, Interval]] = {}
    for m, key in enumerate(keys):
        by: dict[str, Interval] = {}
        for name, column in tps.items():
            value = _ratio(pooled[m, 0], pooled[m, column])
            boot = _ratio(drawn[m, :, 0], drawn[m, :, column])
            each = _ratio(per_round[m, :, 0], per_round[m, :, column])
            by[name] = _interval(float(value), boot, each)
            if rt is None:
                continue
            rt_value = _ratio(pooled[rt, 0], pooled[rt, column])
            rt_boot = _ratio(drawn[rt, :, 0], drawn[rt, :, column])
            rt_each = _ratio(per_round[rt, :, 0], per_round[rt, :, column])
            speed_name = "speedup" if name == "tps" else "speedup_e2e"
            by[speed_name] = _interval(
                float(_ratio(np.asarray(value), np.asarray(rt_value))),
                _ratio(boot, rt_boot),
                _ratio(each, rt_each),
            )
        figures[key] = by
    return SpeedIntervals(len(rounds), n, resamples, figures)


def _interval(value: float, boot: npt.NDArray[np.float64], each: npt.NDArray[np.float64]) -> Interval:
    finite = boot[np.isfinite(boot)]
    tail = 100 * (1 - CONFIDENCE) / 2
    low, high = np.percentile(finite, [tail, 100 - tail]) if finite.size else (np.nan, np.nan)
    return Interval(value, float(low), float(high), tuple(float(v) for v in each))


def apart(base: Interval, new: Interval) -> bool:
    """Whether two intervals of one figure do not overlap: the change is beyond the spread both show."""
    return new.high < base.low or new.low > base.high


def baseline_key(methods: Sequence[Method]) -> str | None:
    """The method the speedups are over, as the reports choose it: RT without mask-k, else any RT."""
    plain = next((m.key for m in methods if m.name == "rt" and not m.mask_k), None)
    return plain or next((m.key for m in methods if m.name == "rt"), None)


def run_intervals(
    methods: Sequence[Method], rounds: Sequence[Mapping[str, Sequence[StreamResult]]]
) -> dict[str, Any] | None:
    """run.json's ``speed_intervals`` record of one or more rounds of the same methods over the same
    streams (None without a stream, or when a round lacks a method's results)."""
    keys = [m.key for m in methods]
    if not rounds or not all(all(one.get(k) for k in keys) for one in rounds):
        return None
    ordered = [{k: one[k] for k in keys} for one in rounds]
    return speed_intervals(ordered, baseline_key(methods)).to_json()


def read_interval(record: Any, key: str, name: str) -> tuple[float, float] | None:
    """A method's 95 % interval of a speed figure from a ``speed_intervals`` record as run.json holds it
    (None when there is none, or a hand edit left something other than two finite numbers, low <= high)."""
    methods = record.get("methods") if isinstance(record, Mapping) else None
    figures = methods.get(key) if isinstance(methods, Mapping) else None
    figure = figures.get(name) if isinstance(figures, Mapping) else None
    if not isinstance(figure, Mapping):
        return None
    numbers = [figure.get("low"), figure.get("high")]
    bounds = [float(v) for v in numbers if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(bounds) != 2 or not all(math.isfinite(v) for v in bounds) or bounds[0] > bounds[1]:
        return None
    return bounds[0], bounds[1]

"""Latency of what the viewer sees, with revisions: LAAL, AL, DAL and YAAL, computation-unaware and -aware.

**Delays.** A target unit's delay is the source position at which it was displayed and never changed
afterwards (Arivazhagan et al., 2020, "Re-translation versus Streaming for Simultaneous Translation", IWSLT,
section 3.2: re-translation latency counts a token when it is finalised, not when it first appears).
Formally, with D_t the display at step t split into target units (``metrics/units.py``: whitespace words, or
characters for zh/ja/th), F the final display and L_t = |LCP(D_t, F)|, unit j of F is finalised at the first
step t with L_(t') > j for every t' >= t; its delay d_j is the source position at that step. A unit that is
shown, erased and shown again counts from its last appearance.

**Positions.** Source words (non-space characters for languages written without spaces) for text streams;
milliseconds (the step's ``time_ms``) for timed streams. |X| is the position of the final step for text
streams, and the segment's duration for timed streams that record one (``provenance.duration_s``, ACL 60/60),
else the time of the final step.

**Computation-aware delays** (SimulEval's ``elapsed``): with C_t the cumulative wall-clock of the updates
0..t (``t_prompt + t_gen``, in ms), a unit finalised at step t has elapsed e_j = d_j + C_t for timed streams
(SimulEval's convention: the system reads the source as it arrives and every update's computation adds to
the delay). Text streams have no clock on the source, so e_j = C_t alone and the computation-aware |X| is
C_(T-1), the wall-clock of all updates: the latency a reader would see if each update started as soon as
the previous one finished.

**Averages** (per stream; the corpus figure is the mean over streams that give a value), with |Y| the
hypothesis length, |Y*| the reference length and tau the first i with d_i >= |X| (|Y| if none):

* AL (Ma et al., 2019, "STACL", ACL; SimulEval 1.1.4 ``ALScorer``): gamma = |Y*| / |X|,
  AL = (1/tau) * sum_(i=1..tau) [d_i - (i - 1) / gamma]
* LAAL (Papi et al., 2022, "Over-Generation Cannot Be Rewarded", AutoSimTrans; SimulEval ``LAALScorer``):
  the same with gamma = max(|Y|, |Y*|) / |X|
* DAL (Arivazhagan et al., 2019, "Monotonic Infinite Lookback Attention", ACL; SimulEval ``DALScorer``):
  gamma = |Y| / |X|, d'_1 = d_1, d'_i = max(d_i, d'_(i-1) + 1/gamma),
  DAL = (1/|Y|) * sum_(i=1..|Y|) [d'_i - (i - 1) / gamma]
* YAAL (Polák et al., 2025, "Better Late Than Never", arXiv:2509.17349; OmniSTEval 0.1.10 ``YAALScorer``,
  short-form): LAAL's gamma, summed only over the units emitted before the source ended (d_i < |X|);
  a stream whose first unit comes at or after the end gives no value.

AL and LAAL return d_1 when d_1 > |X| (SimulEval does the same; with tau = 1 the formula gives it anyway).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from simul.common.sequences import common_prefix_length


def finalisation_steps(displays: Sequence[Sequence[str]]) -> list[int]:
    """For every unit of the final display (``displays[-1]``), the first step from which it never changes."""
    if not displays:
        return []
    final = displays[-1]
    steps = [0] * len(final)
    # Walk backwards keeping the minimum prefix agreement with the final display seen so far.
    stable = len(final)
    for t in range(len(displays) - 1, -1, -1):
        agree = min(stable, common_prefix_length(displays[t], final))
        # units agree..stable-1 are stable from step t+1 on, but not at step t
        for j in range(agree, stable):
            steps[j] = t + 1
        stable = agree
    return steps


def finalisation_delays(displays: Sequence[Sequence[str]], positions: Sequence[float]) -> list[float]:
    """d_j for every unit of the final display, given each step's source position."""
    return [positions[t] for t in finalisation_steps(displays)]


def _tau(delays: Sequence[float], source_length: float) -> int:
    return next((i + 1 for i, d in enumerate(delays) if d >= source_length), len(delays))


def _lagging(delays: Sequence[float], source_length: float, target_length: float) -> float | None:
    if not delays or source_length <= 0:
        return None
    if delays[0] > source_length:
        return delays[0]
    step = source_length / max(target_length, 1)  # 1 / gamma
    tau = _tau(delays, source_length)
    return sum(delays[i] - i * step for i in range(tau)) / tau


def laal(delays: Sequence[float], source_length: float, reference_length: int) -> float | None:
    """Length-adaptive average lagging of one stream; None for an empty hypothesis."""
    return _lagging(delays, source_length, max(len(delays), reference_length))


def al(delays: Sequence[float], source_length: float, reference_length: int | None) -> float | None:
    """Average lagging with the reference length as the oracle rate (the hypothesis length without one)."""
    return _lagging(delays, source_length, reference_length if reference_length else len(delays))


def dal(delays: Sequence[float], source_length: float) -> float | None:
    """Differentiable average lagging (hypothesis length as the rate, as SimulEval computes it)."""
    if not delays or source_length <= 0:
        return None
    step = source_length / len(delays)
    total = 0.0
    previous = 0.0
    for i, d in enumerate(delays):
        current = d if i == 0 else max(d, previous + step)
        total += current - i * step
        previous = current
    return total / len(delays)


def yaal(
    delays: Sequence[float], source_length: float, reference_length: int, until: float | None = None
) -> float | None:
    """Yet another average lagging (short-form): LAAL over the units emitted before the source ended.

    ``until`` moves that end (long-form LongYAAL counts units until the recording's end,
    simul.metrics.longform.latency); the rate stays |X| / max(|Y|, |Y*|)."""
    end = source_length if until is None else until
    if not delays or source_length <= 0 or delays[0] >= end:
        return None
    step = source_length / max(len(delays), reference_length, 1)
    total = 0.0
    tau = 0
    for i, d in enumerate(delays):
        if d >= end:
            break
        total += d - i * step
        tau = i + 1
    return total / tau if tau else None


@dataclass(frozen=True)
class Lagging:
    """The four averages of one stream (None where a metric gives no value)."""

    laal: float | None
    al: float | None
    dal: float | None
    yaal: float | None

    @classmethod
    def of(cls, delays: Sequence[float], source_length: float, reference_length: int | None) -> Lagging:
        ref = reference_length or 0
        return cls(
            laal=laal(delays, source_length, ref),
            al=al(delays, source_length, reference_length),
            dal=dal(delays, source_length),
            yaal=yaal(delays, source_length, ref),
        )


def source_positions(sources: Sequence[str], times_ms: Sequence[float | None], unspaced: bool) -> list[float]:
    """Each step's source position: its time in ms when every step has one, else its length in words."""
    if times_ms and all(t is not None for t in times_ms):
        return [float(t) for t in times_ms if t is not None]
    if unspaced:
        return [float(sum(1 for ch in s if not ch.isspace())) for s in sources]
    return [float(len(s.split())) for s in sources]


def source_length(positions: Sequence[float], timed: bool, duration_ms: float | None) -> float:
    """|X|: the segment's duration for timed streams that have one, else the final step's position."""
    if timed and duration_ms is not None and duration_ms > 0:
        return duration_ms
    return positions[-1] if positions else 0.0


def cumulative_ms(update_seconds: Sequence[float]) -> list[float]:
    """C_t: the wall-clock of updates 0..t, in milliseconds."""
    total = 0.0
    out = []
    for seconds in update_seconds:
        total += seconds * 1000.0
        out.append(total)
    return out


def elapsed(
    finalised_at: Sequence[int], positions: Sequence[float], compute_ms: Sequence[float], timed: bool
) -> list[float]:
    """Computation-aware delays e_j (see the module docstring)."""
    if timed:
        return [positions[t] + compute_ms[t] for t in finalised_at]
    return [compute_ms[t] for t in finalised_at]

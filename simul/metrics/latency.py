"""Latency of what the viewer sees, with revisions.

A target token's delay is the source position at which it was displayed and never changed afterwards
(Arivazhagan et al., 2020, "Re-translation versus Streaming for Simultaneous Translation", IWSLT, section 3.2:
re-translation latency counts a token when it is finalised, not when it first appears). Formally, with D_t the
tokenized display at step t, F the final display and L_t = |LCP(D_t, F)|, token j of F is finalised at the
first step t with L_(t') > j for every t' >= t; its delay d_j is the source position at that step. A token
that is shown, erased and shown again counts from its last appearance.

Positions are source words (non-space characters for languages written without spaces) for text streams,
and milliseconds (the step's ``time_ms``) for timed streams.

The delays are averaged with Length-Adaptive Average Lagging (Papi et al., 2022, "Over-Generation Cannot Be
Rewarded", AutoSimTrans), the AL of Ma et al. (2019) with the oracle rate taken from the longer of hypothesis
and reference:

    LAAL = (1 / tau) * sum_(i=1..tau) [ d_i - (i - 1) * |X| / max(|Y|, |Y*|) ]

where |X| is the source length (position of the final step), |Y| and |Y*| the hypothesis and reference lengths
in tokens, and tau the first i with d_i = |X| (tau = |Y| if none). The corpus figure is the mean over streams
with a non-empty final output.
"""

from __future__ import annotations

from collections.abc import Sequence

from simul.metrics.erasure import common_prefix_length


def finalisation_steps(displays: Sequence[Sequence[str]]) -> list[int]:
    """For every token of the final display (``displays[-1]``), the first step from which it never changes."""
    if not displays:
        return []
    final = displays[-1]
    steps = [0] * len(final)
    # Walk backwards keeping the minimum prefix agreement with the final display seen so far.
    stable = len(final)
    for t in range(len(displays) - 1, -1, -1):
        agree = min(stable, common_prefix_length(displays[t], final))
        # tokens agree..stable-1 are stable from step t+1 on, but not at step t
        for j in range(agree, stable):
            steps[j] = t + 1
        stable = agree
    return steps


def finalisation_delays(displays: Sequence[Sequence[str]], positions: Sequence[float]) -> list[float]:
    """d_j for every token of the final display, given each step's source position."""
    return [positions[t] for t in finalisation_steps(displays)]


def laal(delays: Sequence[float], source_length: float, reference_length: int) -> float | None:
    """Length-adaptive average lagging of one stream; None for an empty hypothesis."""
    if not delays:
        return None
    hyp_len = len(delays)
    rate = source_length / max(hyp_len, reference_length, 1)
    tau = next((i + 1 for i, d in enumerate(delays) if d >= source_length), hyp_len)
    return sum(delays[i] - i * rate for i in range(tau)) / tau


def source_positions(sources: Sequence[str], times_ms: Sequence[float | None], unspaced: bool) -> list[float]:
    """Each step's source position: its time in ms when every step has one, else its length in words."""
    if times_ms and all(t is not None for t in times_ms):
        return [float(t) for t in times_ms if t is not None]
    if unspaced:
        return [float(sum(1 for ch in s if not ch.isspace())) for s in sources]
    return [float(len(s.split())) for s in sources]

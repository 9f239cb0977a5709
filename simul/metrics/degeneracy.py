"""Degeneracy diagnostics of a short-form run: SWF, EFSW, DSPTV and the degenerate-policy flag.

Source: OmniSTEval 0.1.10, ``omnisteval/scoring.py`` ``ShortformDegeneracyScorer`` (run by ``omnisteval
shortform`` on every short-form evaluation with latency; Polák et al., 2025, "Better Late Than Never",
arXiv:2509.17349, for YAAL). They tell whether a "simultaneous" policy is one in name only: a system that
waits for the end of every segment and then writes everything (or one that writes everything at once,
early) can still get a plausible average lag.

Inputs per stream i (simul's, ``metrics/delays.py``, the same as ``simul export --format simuleval`` and
``--format omnisteval`` write): the delays d_i,j of the units of the final display (the source position at
which each unit was displayed for the last time: source words, or ms for timed streams), |X_i| the source
length in the same unit, and YAAL_i (short-form YAAL, ``metrics/latency.py``; None for an empty output or one
whose first unit comes at or after the end of the source).

* SWF, simultaneous words fraction (percent, micro-averaged over the corpus): the share of output units
  displayed before the source ended,
  ``SWF = 100 * sum_i #{j : d_i,j < |X_i|} / sum_i |Y_i|``.
* EFSW, expected fraction of simultaneous words (percent): the share of the source that lies before the
  average lag, over the streams that have a YAAL,
  ``EFSW = 100 * sum_i max(0, |X_i| - YAAL_i) / sum_i |X_i|``.
* DSPTV, degenerate simultaneous policy test value (percentage points): ``DSPTV = EFSW - SWF``. OmniSTEval's
  docstring says ``SWF - EFSW`` but its code computes ``EFSW - SWF``; simul follows the code so that the
  numbers (and their sign) equal what ``omnisteval shortform`` prints.
* Degenerate policy: 1 when ``|DSPTV| > 20``, else 0 (also 0 when DSPTV has no value, as in OmniSTEval).

With no output unit in the whole corpus every figure is None (OmniSTEval: NaN); EFSW and DSPTV are None when
no stream has a YAAL. Long-form runs get None throughout: OmniSTEval computes these for short-form only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from simul.metrics.delays import StreamDelays
from simul.metrics.latency import yaal

DEGENERATE_DSPTV = 20.0  # OmniSTEval 0.1.10: degenerate when |DSPTV| > 20
NAMES = ("swf", "efsw", "dsptv", "degenerate_policy")


@dataclass(frozen=True)
class Degeneracy:
    swf: float | None
    efsw: float | None
    dsptv: float | None
    degenerate_policy: float | None  # 1.0 or 0.0, a number so that `simul diff` can compare it

    @classmethod
    def none(cls) -> Degeneracy:
        return cls(None, None, None, None)

    def metrics(self, digits: int = 4) -> dict[str, float | None]:
        values = (self.swf, self.efsw, self.dsptv, self.degenerate_policy)
        return {
            name: None if value is None else round(value, digits)
            for name, value in zip(NAMES, values, strict=True)
        }


def degeneracy(streams: Iterable[StreamDelays]) -> Degeneracy:
    """The four diagnostics over a corpus of short-form streams (see the module docstring)."""
    simultaneous = words = 0
    efsw_num = efsw_den = 0.0
    for s in streams:
        simultaneous += sum(1 for d in s.delays if d < s.source_length)
        words += len(s.delays)
        lag = yaal(s.delays, s.source_length, s.reference_length or 0)
        if lag is not None:
            efsw_num += max(0.0, s.source_length - lag)
            efsw_den += s.source_length
    if words == 0:
        return Degeneracy.none()
    swf = 100.0 * simultaneous / words
    efsw = 100.0 * efsw_num / efsw_den if efsw_den > 0 else None
    dsptv = efsw - swf if efsw is not None else None
    flag = 1.0 if dsptv is not None and abs(dsptv) > DEGENERATE_DSPTV else 0.0
    return Degeneracy(swf=swf, efsw=efsw, dsptv=dsptv, degenerate_policy=flag)

"""The degeneracy family: OmniSTEval's short-form diagnostics SWF, EFSW, DSPTV and the degenerate-policy flag
(definitions and source: simul.metrics.degeneracy). A run with whole talks gets None (``delays`` None):
OmniSTEval computes them for short-form evaluations only."""

from __future__ import annotations

from collections.abc import Sequence

from simul.metrics.degeneracy import Degeneracy, degeneracy
from simul.metrics.delays import StreamDelays
from simul.metrics.families.figures import Figures


def degeneracy_figures(delays: Sequence[StreamDelays] | None) -> Figures:
    found = Degeneracy.none() if delays is None else degeneracy(delays)
    return Figures(metrics=found.metrics())

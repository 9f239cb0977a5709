"""The degeneracy family: OmniSTEval's short-form diagnostics SWF, EFSW, DSPTV and the degenerate-policy flag
(definitions and source: simul.metrics.degeneracy). A run with whole talks gets None (``delays`` None):
OmniSTEval computes them for short-form evaluations only."""

from __future__ import annotations

from collections.abc import Sequence

from simul.metrics.degeneracy import Degeneracy, degeneracy
from simul.metrics.delays import StreamDelays
from simul.metrics.family import Family, FamilyInput, Figures
from simul.metrics.spec import MetricInfo


def degeneracy_figures(delays: Sequence[StreamDelays] | None) -> Figures:
    found = Degeneracy.none() if delays is None else degeneracy(delays)
    return Figures(metrics=found.metrics())


def _figures(given: FamilyInput) -> Figures:
    return degeneracy_figures(given.delays)


FAMILY = Family(
    name="degeneracy",
    specs=(
        MetricInfo(
            "swf",
            False,
            "SWF",
            "simultaneous words fraction: percent of displayed units finalised before the source ended",
            directional=False,
        ),
        MetricInfo(
            "efsw",
            False,
            "EFSW",
            "expected fraction of simultaneous words: percent of the source before YAAL",
            directional=False,
        ),
        MetricInfo(
            "dsptv",
            False,
            "DSPTV",
            "degenerate simultaneous policy test value: EFSW - SWF, percentage points",
            directional=False,
        ),
        MetricInfo(
            "degenerate_policy",
            False,
            "Degenerate",
            "1 when |DSPTV| > 20 (OmniSTEval's 'likely degenerate simultaneous policy'), else 0",
        ),
    ),
    figures=_figures,
)

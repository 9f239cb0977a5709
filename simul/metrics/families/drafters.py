"""The drafters family: A/D and A/O per drafter, draft tokens and forward passes per update, for
the methods whose records name the drafter of each token (``StepRecord.drafters_written``: a method with a
drafter other than RT's, SSBD's and CD's built-in ones; their run files keep the bytes they had before).

    A/D(d) = 100 * sum(tokens of drafter d kept) / sum(tokens drafter d offered for verification)
    A/O(d) = 100 * sum(tokens of drafter d kept) / sum(output tokens)          (simul.metrics.acceptance)
    draft tokens per update = sum(tokens offered by every drafter) / updates
    passes per update       = sum(one-token passes + verification passes) / updates

The A/O of the drafters add up to the method's A/O; the prompt pass of each update is not counted (every
method has exactly one per update, or none when ``--fuse`` puts it into the verification pass).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simul.decoding.records import StreamResult
from simul.metrics.acceptance import Acceptance
from simul.metrics.family import Family, FamilyInput, Figures, rounded


def drafter_figures(results: Sequence[StreamResult]) -> Figures:
    """``counts["drafters"]`` when every step names its drafters, else nothing (figures unchanged)."""
    steps = [s for r in results for s in r.steps]
    if not steps or not all(s.drafters_written for s in steps):
        return Figures()
    output = sum(len(s.output_ids) for s in steps)
    totals: dict[str, list[int]] = {}
    for step in steps:
        for name, (offered, kept) in step.drafter_counts().items():
            pair = totals.setdefault(name, [0, 0])
            pair[0] += offered
            pair[1] += kept
    by_drafter: dict[str, Any] = {}
    for name, (offered, kept) in totals.items():
        acc = Acceptance(accepted=kept, drafted=offered, output=output)
        by_drafter[name] = {
            "drafted": offered,
            "accepted": kept,
            "ad": rounded(acc.ad, 2),
            "ao": round(acc.ao, 2),
        }
    updates = len(steps)
    return Figures(
        counts={
            "drafters": {
                "by_drafter": by_drafter,
                "draft_tokens_per_update": round(sum(s.drafted_total for s in steps) / updates, 3),
                "passes_per_update": round(
                    sum(s.decode_passes + s.verify_passes for s in steps) / updates, 3
                ),
                "verify_passes": sum(s.verify_passes for s in steps),
                "decode_passes": sum(s.decode_passes for s in steps),
            }
        }
    )


def _figures(given: FamilyInput) -> Figures:
    return drafter_figures(given.results)


# counts only: the drafters' A/D and A/O are the method's, split by drafter
FAMILY = Family(name="drafters", specs=(), figures=_figures)

"""The acceptance family: A/D, A/O and the ideal speedup (formulas and source: simul.metrics.acceptance), the
token counts behind them, and the agreement with RT (SPEC "Metrics")

    agreement_rt = 100 * #(steps whose output tokens equal RT's at the same step) / #(steps compared)

where step i of a stream is compared with step i of RT's decoding of the same stream (up to the shorter of
the two), over the streams RT decoded. RT itself, and any method when the run has no RT, gets None."""

from __future__ import annotations

from collections.abc import Sequence

from simul.decoding.records import StreamResult
from simul.metrics.acceptance import acceptance
from simul.metrics.family import Family, FamilyInput, Figures, RtReference, rounded
from simul.metrics.spec import MetricInfo
from simul.request.methods import Method


def acceptance_figures(method: Method, results: Sequence[StreamResult], rt: RtReference | None) -> Figures:
    steps = [s for r in results for s in r.steps]
    acc = acceptance((s.drafted_total, s.accepted_total, len(s.output_ids)) for s in steps)
    return Figures(
        metrics={
            "ad": rounded(acc.ad, 2),
            "ao": round(acc.ao, 2),
            "ideal_speedup": rounded(acc.ideal_speedup, 3),
            "agreement_rt": rounded(_agreement(results, rt) if method.name != "rt" else None, 2),
        },
        counts={
            "output_tokens": acc.output,
            "draft_tokens": acc.drafted,
            "accepted_tokens": acc.accepted,
            "ending_tokens": sum(s.ending_tokens for s in steps),
            "resync_drafted": sum(s.resync_drafted for s in steps),
            "resync_accepted": sum(s.resync_accepted for s in steps),
            # steps that kept the whole draft and decoded nothing after it
            "frozen_steps": sum(
                1 for s in steps if s.draft_tokens and s.accepted == s.draft_tokens and s.new_tokens == 0
            ),
        },
        rows=[
            {
                "accepted": sum(s.accepted_total for s in r.steps),
                "output_tokens": sum(len(s.output_ids) for s in r.steps),
            }
            for r in results
        ],
    )


def _agreement(results: Sequence[StreamResult], rt: RtReference | None) -> float | None:
    if rt is None:
        return None
    same = total = 0
    for result in results:
        theirs = rt.results.get(result.stream_id)
        if theirs is None:
            continue
        for mine, rt_step in zip(result.steps, theirs.steps, strict=False):
            total += 1
            same += mine.output_ids == rt_step.output_ids
    return 100.0 * same / total if total else None


def _figures(given: FamilyInput) -> Figures:
    return acceptance_figures(given.method, given.results, given.rt)


DRAFTS = ("draft", "model_tokens")  # what A/O and the figures built on it need

FAMILY = Family(
    name="acceptance",
    specs=(
        MetricInfo(
            "ad", True, "A/D", "accepted draft tokens / draft tokens, percent", fmt=".1f", needs=("draft",)
        ),
        MetricInfo(
            "ao", True, "A/O", "accepted draft tokens / output tokens, percent", fmt=".1f", needs=DRAFTS
        ),
        MetricInfo(
            "ideal_speedup",
            True,
            "Ideal",
            "1 / (1 - A/O): speedup if verification were free",
            fmt=".2f",
            needs=DRAFTS,
        ),
        MetricInfo(
            "agreement_rt", True, "=RT", "share of steps whose output equals RT's, percent", needs=DRAFTS
        ),
    ),
    figures=_figures,
    counts_need={
        "draft": (
            "draft_tokens",
            "accepted_tokens",
            "resync_drafted",
            "resync_accepted",
            "frozen_steps",
            "accepted",
        ),
        "model_tokens": ("output_tokens",),
    },
)

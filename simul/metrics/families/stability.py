"""The stability family: normalized erasure of the raw outputs and of what was displayed, pooled over the
corpus and as the mean over streams (formula and source: simul.metrics.erasure), counted in the units of
the NE tokenizer (simul.metrics.tokenizers)."""

from __future__ import annotations

from collections.abc import Sequence

from simul.decoding.records import StreamResult
from simul.metrics.erasure import normalized_erasure, stream_erasure
from simul.metrics.family import Family, FamilyInput, Figures
from simul.metrics.spec import MetricInfo
from simul.metrics.tokenizers import get_tokenizer


def stability_figures(results: Sequence[StreamResult], ne_tokenizer: str) -> Figures:
    tokenize = get_tokenizer(ne_tokenizer)
    raw = [[tokenize(s.output) for s in r.steps] for r in results]
    shown = [[tokenize(s.display) for s in r.steps] for r in results]
    ne = normalized_erasure(raw)
    ne_display = normalized_erasure(shown)
    rows = []
    for raw_steps, shown_steps in zip(raw, shown, strict=True):
        erased, final_len = stream_erasure(raw_steps)
        erased_shown, _ = stream_erasure(shown_steps)
        rows.append({"erased": erased, "erased_display": erased_shown, "final_tokens": final_len})
    return Figures(
        metrics={
            "ne": round(ne.value, 4),
            "ne_display": round(ne_display.value, 4),
            "ne_mean": round(ne.mean, 4),
            "ne_display_mean": round(ne_display.mean, 4),
        },
        counts={
            "erased_tokens": ne.erased,
            "erased_display_tokens": ne_display.erased,
            "final_tokens": ne.final_tokens,
            "ne_unit": ne_tokenizer,
        },
        rows=rows,
    )


def _figures(given: FamilyInput) -> Figures:
    return stability_figures(given.results, given.ne_tokenizer)


FAMILY = Family(
    name="stability",
    specs=(
        MetricInfo(
            "ne", False, "NE", "normalized erasure of the raw outputs", fmt=".2f", needs=("revisions",)
        ),
        MetricInfo(
            "ne_display",
            False,
            "NE disp",
            "normalized erasure of what was displayed",
            fmt=".2f",
            needs=("revisions",),
        ),
        MetricInfo(
            "ne_mean",
            False,
            "NE mean",
            "normalized erasure of the raw outputs, mean over streams",
            needs=("revisions",),
        ),
        MetricInfo(
            "ne_display_mean",
            False,
            "NE disp mean",
            "normalized erasure of what was displayed, mean over streams",
            needs=("revisions",),
        ),
    ),
    figures=_figures,
    counts_need={"revisions": ("erased_tokens", "erased_display_tokens", "erased", "erased_display")},
)

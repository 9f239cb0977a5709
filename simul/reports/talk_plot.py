"""The cost of updates along a talk, as a plot: does re-translation in a bounded window stay flat?

One line per method (RT beside SSBD, ...): the time of each update (t_prompt + t_gen, ms) against the
position in the talk. For one talk the position is the number of source words known at the update; for
several talks it is the fraction of each talk's updates, averaged in 20 equal bins so talks of different
lengths overlay. metrics.talk_cost gives the same figures by quarter in run.json.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path

from simul.common.quarters import part_of
from simul.decoding.records import StepRecord

BINS = 20


def _series_one(steps: Sequence[StepRecord]) -> tuple[list[float], list[float]]:
    xs = [float((s.talk or {}).get("source_words") or i) for i, s in enumerate(steps)]
    ys = [(s.t_prompt + s.t_gen) * 1000.0 for s in steps]
    return xs, ys


def _series_pooled(talks: Sequence[Sequence[StepRecord]]) -> tuple[list[float], list[float]]:
    sums = [0.0] * BINS
    counts = [0] * BINS
    for steps in talks:
        n = len(steps)
        for i, s in enumerate(steps):
            b = part_of(i, n, BINS)
            sums[b] += (s.t_prompt + s.t_gen) * 1000.0
            counts[b] += 1
    xs = [(b + 0.5) / BINS for b in range(BINS) if counts[b]]
    ys = [sums[b] / counts[b] for b in range(BINS) if counts[b]]
    return xs, ys


def _rolling(values: Sequence[float], width: int = 15) -> list[float]:
    out = []
    total = 0.0
    for i, v in enumerate(values):
        total += v
        if i >= width:
            total -= values[i - width]
        out.append(total / min(i + 1, width))
    return out


def draw_talk_cost(
    methods: Mapping[str, Sequence[Sequence[StepRecord]]], title: str, out: Path | None = None
) -> str:
    """Plot ``methods`` (label -> the talks' update records); write ``out`` (.png or .svg) when given and
    return the plot as SVG text (for HTML pages)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.6))
    single = all(len(talks) == 1 for talks in methods.values())
    for label, talks in methods.items():
        if single:
            xs, ys = _series_one(talks[0])
            line = ax.plot(xs, ys, ".", alpha=0.25, markersize=3)[0]
            ax.plot(xs, _rolling(ys), color=line.get_color(), label=f"{label} (rolling mean of 15)")
        else:
            xs, ys = _series_pooled(talks)
            ax.plot(xs, ys, marker="o", markersize=3, label=label)
    ax.set_xlabel("source words known" if single else "position in the talk (fraction of its updates)")
    ax.set_ylabel("ms per update")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    ax.set_title(title, fontsize="medium")
    fig.tight_layout()
    if out is not None:
        fig.savefig(out, dpi=120)
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    plt.close(fig)
    svg = buffer.getvalue()
    return svg[svg.find("<svg") :]

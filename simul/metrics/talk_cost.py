"""The cost of updates along a long-form stream (a whole talk): does re-translation stay bounded?

Re-translating a whole talk at every update would cost O(talk length) per update; in a bounded window
(simul.decoding.longform) it should not grow. Per talk the updates are split into four quarters by their
index (update i of n falls in quarter floor(4 i / n): simul.common.quarters, the recognizer's rule too), and
per quarter

    cost_q = mean over the quarter's updates of (t_prompt + t_gen), in ms
    prompt_q = the largest prompt (template + context + window tokens) of the quarter's updates
    window_q = mean source words decoded per update (the open window, plus the windows closed at it)
    new_q = mean tokens decoded one at a time per update (output tokens not taken from a draft)

An update's time follows the work it does (new_q, and the window's length), which the talk's content sets;
window_q and prompt_q staying flat while cost_q moves shows that a change comes from the content, not from the
position in the talk.

Over several talks the quarters are pooled (every talk's first quarter together, ...). ``growth`` is
cost_4 / cost_1: 1.0 when an update costs the same at the end of the talk as at its start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simul.common.quarters import QUARTERS, part_of
from simul.decoding.records import StepRecord


def _quarters(
    talks: Sequence[Sequence[StepRecord]],
) -> tuple[list[list[float]], list[int], list[list[float]], list[list[float]]]:
    costs: list[list[float]] = [[] for _ in range(QUARTERS)]
    windows: list[list[float]] = [[] for _ in range(QUARTERS)]
    new: list[list[float]] = [[] for _ in range(QUARTERS)]
    prompts = [0] * QUARTERS
    for steps in talks:
        for index, step in enumerate(steps):
            q = part_of(index, len(steps))
            costs[q].append((step.t_prompt + step.t_gen) * 1000.0)
            talk = step.talk or {}
            prompts[q] = max(prompts[q], int(talk.get("prompt_tokens") or step.prompt_tokens))
            ranges = [*(talk.get("closed") or []), talk.get("open") or [0, 0]]
            windows[q].append(float(sum(int(b) - int(a) for a, b in ranges)))
            new[q].append(float(step.new_tokens))
    return costs, prompts, windows, new


def _means(groups: list[list[float]], digits: int) -> list[float | None]:
    return [round(sum(g) / len(g), digits) if g else None for g in groups]


def talk_cost(talks: Sequence[Sequence[StepRecord]]) -> dict[str, Any]:
    """Mean update time and largest prompt per quarter of the talks (see the module docstring)."""
    costs, prompts, windows, new = _quarters(talks)
    means = _means(costs, 3)
    first, last = means[0], means[-1]
    growth = round(last / first, 3) if first and last is not None else None
    return {
        "cost_quarters_ms": means,
        "prompt_tokens_quarters": prompts,
        "prompt_tokens_max": max(prompts) if prompts else 0,
        "window_words_quarters": _means(windows, 2),
        "new_tokens_quarters": _means(new, 2),
        "cost_growth": growth,
        "updates": sum(len(c) for c in costs),
        "windows": sum(len((s.talk or {}).get("closed") or []) for steps in talks for s in steps),
    }

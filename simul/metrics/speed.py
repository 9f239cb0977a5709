"""Decoding speed (SPEC "Metrics"; SSBD paper, section 4.1 and appendix A.1).

    TPS = sum over steps of output tokens emitted at the update / sum over steps of t_gen
    speedup = TPS(method) / TPS(RT), both measured in the same run on the same streams
    TPS e2e = the same tokens / sum over steps of (t_prompt + t_gen); speedup e2e likewise

t_gen starts once the prompt has been processed and includes SSBD's verification pass. The end-to-end time
of an update (t_prompt + t_gen) is reported as its 50th and 95th percentiles (linear interpolation between
order statistics, numpy's default), in milliseconds.

The speed model that explains SSBD's efficiency (docs/results.md, "What limits the speedup"): with a draft row
in a verification pass costing c one-token decodes, and A/D, A/O as fractions, the generation time per output
token relative to RT is

    (1 - A/O) + c * A/O / A/D        so    modelled speedup = 1 / ((1 - A/O) + c * A/O / A/D)

(a share 1 - A/O of the tokens is decoded one at a time, and A/O / A/D draft rows are verified per output
token). c is measured per run as (verification seconds / draft rows verified) / (decoding seconds / one-token
passes); the ideal speedup 1 / (1 - A/O) is the limit c -> 0.

A drafter that costs time of its own (a draft model) adds d, its seconds per drafted token over a
one-token pass of the target, to every draft row:

    modelled speedup = 1 / ((1 - A/O) + (c + d) * A/O / A/D)

which is the model above with c + d for c (d = 0 for the previous output and the n-gram drafters). The same
question in Leviathan et al.'s terms (Fast Inference from Transformers via Speculative Decoding, ICML 2023,
Theorem 3.8; ../shared/seeds/001): with i.i.d. acceptance alpha per drafted token, K tokens drafted before
each verification pass, and c_L the cost of a draft pass over a target pass, the expected walltime
improvement is

    (1 - alpha^(K + 1)) / ((1 - alpha) * (K * c_L + 1))        ((K + 1) / (K * c_L + 1) at alpha = 1)

It assumes a verification pass costs one target pass, whatever its width; simul's model charges each row c.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from simul.machine.calibration import PassCosts


@dataclass(frozen=True)
class Speed:
    output_tokens: int
    gen_seconds: float
    prompt_seconds: float
    p50_update_ms: float
    p95_update_ms: float
    updates: int

    @property
    def tps(self) -> float:
        return self.output_tokens / self.gen_seconds if self.gen_seconds > 0 else 0.0

    @property
    def tps_e2e(self) -> float:
        """Output tokens per second of whole updates (prompt included): the figure a live system feels."""
        total = self.gen_seconds + self.prompt_seconds
        return self.output_tokens / total if total > 0 else 0.0


def speed(steps: Iterable[tuple[int, float, float]]) -> Speed:
    """From (output tokens, t_prompt, t_gen) per step, times in seconds."""
    tokens = 0
    gen = 0.0
    prompt = 0.0
    updates: list[float] = []
    for output_tokens, t_prompt, t_gen in steps:
        tokens += output_tokens
        gen += t_gen
        prompt += t_prompt
        updates.append(t_prompt + t_gen)
    if updates:
        p50, p95 = (float(x) * 1000.0 for x in np.percentile(np.array(updates), [50, 95]))
    else:
        p50 = p95 = 0.0
    return Speed(
        output_tokens=tokens,
        gen_seconds=gen,
        prompt_seconds=prompt,
        p50_update_ms=p50,
        p95_update_ms=p95,
        updates=len(updates),
    )


def speedup(method_tps: float, rt_tps: float) -> float | None:
    return method_tps / rt_tps if rt_tps > 0 else None


def row_cost(
    verify_seconds: float, verify_rows: int, decode_seconds: float, decode_passes: int
) -> float | None:
    """c: seconds per draft row in verification passes over seconds per one-token decoding pass."""
    if verify_rows <= 0 or decode_passes <= 0 or decode_seconds <= 0:
        return None
    return (verify_seconds / verify_rows) / (decode_seconds / decode_passes)


def modelled_speedup(ad: float, ao: float, c: float) -> float:
    """1 / ((1 - A/O) + c * A/O / A/D), with A/D and A/O as fractions (A/D > 0)."""
    return 1.0 / ((1.0 - ao) + c * ao / ad)


def modelled_speedup_with_draft(ad: float, ao: float, c: float, d: float) -> float:
    """1 / ((1 - A/O) + (c + d) * A/O / A/D): :func:`modelled_speedup` with each drafted token costing a
    verification row (c) and its drafting (d), both in one-token target passes; A/D and A/O as fractions."""
    return modelled_speedup(ad, ao, c + d)


def leviathan_speedup(alpha: float, k: int, c_draft: float) -> float:
    """Leviathan et al. (2023), Theorem 3.8: the expected walltime improvement factor of speculative decoding
    with acceptance rate ``alpha`` per drafted token (i.i.d.), ``k`` tokens drafted per verification pass and
    a draft pass costing ``c_draft`` target passes:

        (1 - alpha^(k + 1)) / ((1 - alpha) * (k * c_draft + 1)),    (k + 1) / (k * c_draft + 1) at alpha = 1
    """
    if not 0.0 <= alpha <= 1.0 or k < 1 or c_draft < 0:
        raise ValueError(f"need 0 <= alpha <= 1, k >= 1, c_draft >= 0; got {alpha}, {k}, {c_draft}")
    tokens = k + 1.0 if alpha == 1.0 else (1.0 - alpha ** (k + 1)) / (1.0 - alpha)
    return tokens / (k * c_draft + 1.0)


def max_row_cost(target: float, ad: float, ao: float) -> float:
    """The largest c at which the model reaches speedup ``target`` (negative: not reachable at any c)."""
    return (1.0 / target - (1.0 - ao)) * ad / ao


def calibrated_bound(
    costs: PassCosts, ad: float, ao: float, pass_rows: Sequence[int] | None = None, draft_cost: float = 0.0
) -> float | None:
    """The speedup the calibrated machine allows at A/D and A/O given in percent (simul.machine.calibration):

        bound_run = modelled_speedup(A/D, A/O, c_run)    c_run = costs.run_row_cost(pass_rows)

    for verification passes of ``pass_rows`` rows (the run's own drafts), or with every pass the
    calibration's DRAFT rows wide when ``pass_rows`` is None, i.e. at c = c_min (``bound``), with
    ``draft_cost`` (d, a draft model's cost per drafted token in one-token passes; 0 for other drafters)
    added to c (:func:`modelled_speedup_with_draft`). None where A/D is 0 or there are no rows."""
    c = costs.run_row_cost(list(pass_rows) if pass_rows is not None else [costs.draft])
    if ad <= 0 or c is None:
        return None
    return modelled_speedup_with_draft(ad / 100.0, ao / 100.0, c, draft_cost)

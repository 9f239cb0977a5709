"""Sweeps over the SSBD bias and over mask-k, reproducing the shape of the paper's Tables 3 and 4.

One process, one model load, one set of streams: every method is decoded stream by stream, interleaved, so
that the speedups are comparable. The run is an ordinary run directory (score, diff and show work on it).
This module parses the sweep's options and lists its methods; the tables and the plot made of the scored
sweep are simul.reports.sweep_tables.
"""

from __future__ import annotations

from collections.abc import Sequence

from simul.common.errors import UsageError
from simul.request.method_settings import MASK_MODES, MaskMode
from simul.request.methods import Method, unique_methods
from simul.request.ngram_settings import NgramDraft


def parse_floats(text: str, option: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"{option} takes comma-separated numbers, e.g. 0,0.1,0.2; got {text!r}") from None
    if not values:
        raise UsageError(f"{option} is empty")
    return values


def parse_ints(text: str, option: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"{option} takes comma-separated integers, e.g. 0,3,5; got {text!r}") from None
    if not values:
        raise UsageError(f"{option} is empty")
    return values


def parse_masks(text: str) -> list[MaskMode]:
    modes: dict[str, MaskMode] = {mode: mode for mode in MASK_MODES}
    masks = [x.strip() for x in text.split(",") if x.strip()]
    if not masks or any(m not in modes for m in masks):
        raise UsageError(f"--mask takes display and/or output, comma-separated; got {text!r}")
    return [modes[m] for m in masks]


def sweep_methods(
    betas: Sequence[float],
    mask_ks: Sequence[int],
    masks: Sequence[MaskMode],
    cd: bool,
    mask_beta: float,
    agreements: Sequence[int] = (),
    tail: NgramDraft | None = None,
) -> list[Method]:
    """RT; SSBD at every beta; CD if asked; SSBD(mask_beta) with every mask-k > 0 in every mask mode, and
    with LocalAgreement-n for every n in ``agreements``. ``tail``: every SSBD row's tail drafter
    (``--tail-draft``), so that the tables sweep SSBD with it."""
    methods = [Method("rt")]
    methods += [Method("ssbd", beta=b, ngram=tail) for b in betas]
    if cd:
        methods.append(Method("cd"))
    for mode in masks:
        for k in mask_ks:
            if k > 0:
                methods.append(Method("ssbd", beta=mask_beta, mask_k=k, mask=mode, ngram=tail))
    for n in agreements:
        methods.append(Method("ssbd", beta=mask_beta, display="local-agreement", agreement=n, ngram=tail))
    return unique_methods(methods)

"""Sweeps over the SSBD bias and over mask-k, reproducing the shape of the paper's Tables 3 and 4.

One process, one model load, one set of streams: every method is decoded stream by stream, interleaved, so
that the speedups are comparable. The run is an ordinary run directory (score, diff and show work on it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

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


def table3_rows(methods: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """RT, SSBD at each beta without masking, and CD, in the paper's order."""
    rows = [m for m in methods if m["name"] == "rt" and not m["mask_k"]]
    ssbd = [
        m for m in methods if m["name"] == "ssbd" and not m["mask_k"] and m.get("ending", "keep") == "keep"
    ]
    rows += sorted(ssbd, key=lambda m: m["beta"])
    rows += [m for m in methods if m["name"] == "cd" and not m["mask_k"]]
    return [{**m, "label": _beta_label(m)} for m in rows]


def _beta_label(m: dict[str, Any]) -> str:
    if m["name"] == "ssbd":
        return f"beta {m['beta']:g}"
    return str(m["name"]).upper()


def table4_rows(methods: Sequence[dict[str, Any]], mask_beta: float) -> list[dict[str, Any]]:
    """SSBD(mask_beta) without masking, then with output mask-k, then with display-only mask-k."""
    base = [
        m
        for m in methods
        if m["name"] == "ssbd"
        and m["beta"] == mask_beta
        and not m["mask_k"]
        and m.get("display", "mask") == "mask"
    ]
    rows = [{**m, "label": "-"} for m in base]
    for mode, title in (("output", "+mask-k"), ("display", "+display-only mask-k")):
        group = [
            m
            for m in methods
            if m["name"] == "ssbd" and m["beta"] == mask_beta and m["mask_k"] and m["mask"] == mode
        ]
        rows += [{**m, "label": f"{title} {m['mask_k']}"} for m in sorted(group, key=lambda m: m["mask_k"])]
    agreeing = [
        m
        for m in methods
        if m["name"] == "ssbd" and m["beta"] == mask_beta and m.get("display") == "local-agreement"
    ]
    rows += [
        {**m, "label": f"+LocalAgreement-{m['agreement']}"}
        for m in sorted(agreeing, key=lambda m: m["agreement"])
    ]
    return rows


def plot_beta(methods: Sequence[dict[str, Any]], out_stem: Path, title: str) -> list[Path]:
    """Speedup, NE, A/D, A/O and quality (COMET when scored, else chrF) against beta; PNG and SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ssbd = sorted(
        (m for m in methods if m["name"] == "ssbd" and not m["mask_k"] and m.get("ending", "keep") == "keep"),
        key=lambda m: m["beta"],
    )
    rt = next((m for m in methods if m["name"] == "rt" and not m["mask_k"]), None)
    cd = next((m for m in methods if m["name"] == "cd" and not m["mask_k"]), None)
    quality = "comet" if ssbd and all(m["metrics"].get("comet") is not None for m in ssbd) else "chrf"
    panels = [
        ("speedup", "Speedup over RT"),
        ("ne", "NE"),
        ("ad", "A/D %"),
        ("ao", "A/O %"),
        (quality, quality.upper() if quality == "comet" else "chrF"),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.4))
    betas = [m["beta"] for m in ssbd]
    for ax, (key, label) in zip(axes, panels, strict=True):
        values = [m["metrics"].get(key) for m in ssbd]
        ax.plot(betas, [v if v is not None else float("nan") for v in values], marker="o", label="SSBD")
        for ref, name, style in ((rt, "RT", "--"), (cd, "CD", ":")):
            value = ref["metrics"].get(key) if ref else None
            if value is not None:
                ax.axhline(value, linestyle=style, color="gray" if name == "RT" else "black", label=name)
        ax.set_xlabel("beta")
        ax.set_title(label)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="best", fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    paths = []
    for suffix in (".png", ".svg"):
        path = out_stem.with_suffix(suffix)
        fig.savefig(path, dpi=120)
        paths.append(path)
    plt.close(fig)
    return paths

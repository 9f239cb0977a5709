"""What `simul sweep` shows of a scored sweep: the rows of the paper's Tables 3 and 4, the plot against beta.

The rows are the methods' records (``methods_json`` of the scored run) picked and ordered as the paper's
tables are, each with the ``label`` its table prints; the plot draws each figure of the SSBD rows against
beta, with RT and CD as reference lines. simul.request.sweep lists the methods a sweep decodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


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

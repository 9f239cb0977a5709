"""The caption lines of methods that draft with a draft model (spec, bild, SSBD's --tail-draft model): where
the time goes (drafting, verifying, decoding), from run.json's counts of the method.

* draft passes per update, and the draft model's seconds per drafted token next to the target's one-token
  pass (decode_seconds / decode_passes);
* the acceptance by draft position (simul.metrics.families.speed.acceptance_by_position);
* Leviathan et al.'s expected walltime improvement (ICML 2023, Theorem 3.8; simul.metrics.speed.
  leviathan_speedup) with the measured acceptance alpha = kept / (kept + rejected drafts) (the maximum
  likelihood estimate of an i.i.d. per-token acceptance from drafts that end at their first rejection),
  K = --draft-max and c_L = the draft model's one-token pass over the target's: calibrated (both measured
  on the run's prompt before decoding, simul.machine.calibration.calibrate_draft) where ``simul bench``
  passes its costs, else the draft model's seconds per pass over the target's per one-token pass of the
  same run (which include the drafter's Python and catch-up passes of several tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simul.common.safe_text import markup
from simul.machine.calibration import PassCosts
from simul.metrics.speed import leviathan_speedup


def draft_model_lines(rows: Sequence[dict[str, Any]], costs: PassCosts | None = None) -> list[str]:
    """One line per method row whose counts hold the draft model's (none for other methods); ``costs``: the
    calibration, whose draft pass gives c_L when it has one."""
    lines = []
    for row in rows:
        counts = row.get("counts") or {}
        if "draft_passes" not in counts:
            continue
        passes, seconds = int(counts["draft_passes"]), float(counts["draft_seconds"])
        drafted, kept = int(counts.get("model_drafted", 0)), int(counts.get("model_accepted", 0))
        steps = int(counts.get("steps", 0))
        parts = [f"{passes / steps:.1f} draft passes per update" if steps else f"{passes} draft passes"]
        one_token = (
            float(counts["decode_seconds"]) / int(counts["decode_passes"])
            if counts.get("decode_passes")
            else 0.0
        )
        if drafted:
            parts.append(
                f"{seconds / drafted * 1000:.2f} ms drafting per drafted token"
                + (f" (target one-token pass {one_token * 1000:.2f} ms)" if one_token else "")
            )
        by_position = counts.get("acceptance_by_position") or []
        if by_position:
            shown = " ".join(f"{rate:.2f}" for rate in by_position[:8])
            parts.append(f"kept by draft position {shown}{' ...' if len(by_position) > 8 else ''}")
        rejections = int(counts.get("model_rejections", 0))
        if drafted and passes and one_token and row.get("draft_max"):
            alpha = kept / (kept + rejections) if kept + rejections else 0.0
            calibrated = costs.c_draft if costs is not None else None
            c_draft = calibrated if calibrated is not None else (seconds / passes) / one_token
            bound = leviathan_speedup(min(alpha, 1.0), int(row["draft_max"]), c_draft)
            parts.append(
                f"Leviathan bound {bound:.2f}x (alpha {alpha:.2f}, K {row['draft_max']}, "
                f"c_L {c_draft:.2f}{' calibrated' if calibrated is not None else ' from the run'})"
            )
        lines.append(markup(f"{row.get('label', row.get('key'))}: " + "; ".join(parts), newlines=False))
    return lines

"""What a metric is, in one record (:class:`MetricInfo`).

A record holds everything the commands need to show, compare and rank a figure: its run.json name, direction,
title, meaning, unit, the number format of the tables, whether it depends on wall-clock time, what kind of
score it is (a quality score of the final outputs; a corpus score that the paired bootstrap recomputes from
sacrebleu's statistics; the mean of segment scores, which it resamples; a learned one), whether it is
relative to RT's speed, whether only methods with a draft model have it, its computation-aware variant, and
what the step records must hold for it. The families of simul.metrics.families define the records beside
their code (simul.metrics.family); simul.metrics.registry lists them, and every table of metric names that
the commands use is read from them.
"""

from __future__ import annotations

from dataclasses import dataclass

# What the step records may lack, as `simul ingest` records it (config.ingest.not_available), and a figure
# that needs it is reported as not available (None), never as zero: the drafts and their acceptance
# ("draft"), the model's output tokens ("model_tokens"), the times ("timing"), the revisions of an output
# ("revisions": append-only logs such as SimulEval's instances.log cannot show an erasure).
RECORD_FIELDS = ("draft", "model_tokens", "timing", "revisions")


@dataclass(frozen=True)
class MetricInfo:
    name: str
    higher_is_better: bool
    title: str
    description: str
    # figures that depend on wall-clock time, not only on the outputs
    timing: bool = False
    # False for diagnostics with no better direction (SWF, EFSW, DSPTV): `simul diff` shows their change
    # but takes no threshold on them, and run.json's ``higher_is_better`` leaves them out
    directional: bool = True
    fmt: str = ".4g"  # the tables' number format
    units: str = ""  # what the figure counts in ("" when it is a score or a ratio without a unit)
    # a quality score of the final outputs against the references: `simul rank --metric` ranks by it, and
    # the kernel noise of an exact-method control is measured on it (simul.reports.engine_notes)
    quality: bool = False
    # a corpus score that the paired bootstrap of `simul diff` and `simul rank` recomputes on each resample
    # of streams from sacrebleu's per-segment statistics (chrF, BLEU; simul.reports.significance)
    corpus_resampled: bool = False
    segment_mean: bool = False  # the system score is the mean of the per-stream (segment) scores
    ca: str | None = None  # the name of its computation-aware variant
    learned: bool = False  # computed by a learned segment scorer (simul.metrics.learned)
    replaces: str | None = None  # the tables show it in this metric's column when a run lacks that one
    # the order in which `simul rank`'s default (``auto``) tries it (1 first; 0: never): the first that
    # every system of a group has from one model, the last one whatever they have
    rank_auto: int = 0
    # relative to RT's speed in the same run: RT's own is 1 by definition, and unreliable when RT's timing is
    relative_to_rt: bool = False
    # present in a method's metrics only when it drafts with a draft model (spec, bild, SSBD's --tail-draft)
    draft_model: bool = False
    # what the records must hold for the figure (of RECORD_FIELDS): None when they do not
    needs: tuple[str, ...] = ()

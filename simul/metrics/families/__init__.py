"""A method's figures, one metric family per module: each computes its own run.json metrics, counts and
per-stream columns from the step records, and no family writes another's (``figures.combine`` refuses a name
given twice). simul.metrics.compute puts them together into a method's report.

Modules: ``figures`` (what a family gives, the RT reference, rounding), ``acceptance`` (A/D, A/O, ideal
speedup, agreement with RT), ``speed`` (TPS, speedups, efficiency, the row cost c, update times),
``stability`` (normalized erasure), ``reader_stability`` (time to final, time-weighted erasure, changes per
minute, changed share: a family that brings its own metric records, simul.metrics.spec.Family, registered by
one line of simul.metrics.registry's ``FAMILIES``), ``quality`` (BLEU, chrF and the learned metrics: COMET,
XCOMET, BLEURT), ``latency`` (LAAL, AL, DAL, YAAL and
their computation-aware forms), ``degeneracy`` (SWF, EFSW, DSPTV), ``longform`` (the talk cost, and quality
and latency of whole talks re-segmented onto their reference segments) and ``drafters`` (A/D and A/O per
drafter, draft tokens and passes per update, for methods whose steps name their drafters).
"""

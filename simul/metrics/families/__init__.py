"""A method's figures, one metric family per module (simul.metrics.family.Family): each defines the records of
its metrics (simul.metrics.spec.MetricInfo) beside the code that computes its run.json metrics, counts and
per-stream columns from the step records, and no family writes another's (``family.combine`` refuses a name
given twice). simul.metrics.registry lists them; simul.metrics.compute puts them together into a method's
report.

Modules: ``quality`` (BLEU, chrF and the learned metrics: COMET, XCOMET, BLEURT), ``stability`` (normalized
erasure), ``acceptance`` (A/D, A/O, ideal speedup, agreement with RT), ``drafters`` (A/D and A/O per
drafter, draft tokens and passes per update, for methods whose steps name their drafters), ``speed`` (TPS,
speedups, efficiency, the row cost c, update times, a draft model's cost), ``latency`` (LAAL, AL, DAL, YAAL
and their computation-aware forms), ``degeneracy`` (SWF, EFSW, DSPTV), ``longform`` (the talk cost, and
quality and latency of whole talks re-segmented onto their reference segments) and ``reader_stability``
(time to final, time-weighted erasure, changes per minute, changed share).
"""

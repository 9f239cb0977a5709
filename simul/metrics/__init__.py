"""Scoring: every metric of every method over decoded streams.

What a metric is: ``spec`` (one record per metric), ``family`` (what a metric family is, reads and gives)
and ``registry`` (the families, and every record). Putting a run's figures together: ``scoring`` (every
method of a run, with the learned scorers, as `simul eval` and `simul score` do), ``compute`` (one method's
report from the families in ``families/``, each with its records) and ``longform/`` (whole talks
re-segmented onto their reference segments, IWSLT 2026). The metrics: ``quality`` (BLEU and chrF with
sacrebleu) and ``sacrebleu_stats`` (their per-segment statistics, for resampling), ``erasure`` (normalized
erasure), ``latency`` and ``delays`` (LAAL, AL, DAL, YAAL), ``degeneracy`` (SWF, EFSW, DSPTV), ``speed``
(TPS, speedups, the row cost), ``acceptance`` (A/D, A/O), ``talk_cost`` (update cost along a talk) and
``bands`` (IWSLT 2026's latency bands). The learned metrics: ``learned`` (the protocol of learned segment
scorers and the rule of which models a run is scored with), ``comet`` and ``comet_model`` (COMET-family
models), ``xcomet`` with ``xcomet_worker`` (XCOMET in a child process) and ``bleurt``. What figures are
counted in and who computed them: ``units``, ``tokenizers`` and ``signatures``.
"""

"""What is made of scored runs for people and other tools.

Tables: ``tables`` (the result tables), ``bench`` and ``bench_tables`` (`simul bench`'s figures and tables),
``drafters`` and ``draft_notes`` (per-drafter lines and draft-model captions), ``engine_notes`` (what quality
differences between methods can be trusted to mean), ``timing_notes`` (which speed figures to mark as
unreliable) and ``run_conditions`` (where and how a run decoded). Comparisons: ``compare`` (two runs, for
`simul diff`), ``rank`` (`simul rank`'s ranking), ``significance`` (the paired bootstraps of both: diff's
one-sided test, rank's two-sided one) and ``agreement`` (batched against one-at-a-time runs). Views:
``show`` (a stream step by step), ``error_spans`` (XCOMET's spans of a stream) and ``talk_plot`` (the cost
along a talk). For other tools: ``export`` and ``export_longform`` (the field's own scorers) and
``eval_json`` (`simul eval --json`).
"""

"""What is made of scored runs for people and other tools: the result tables (tables), the comparison of two
runs (compare), a stream step by step (show), the agreement of batched and one-at-a-time runs (agreement),
the export for the field's own scorers (export), which speed figures to mark as unreliable (timing_notes) and
the --json document of `simul eval` (eval_json)."""

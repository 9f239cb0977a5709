"""What an evaluation is asked to do: the decoding methods (method_settings: their settings and the rules on
which go together; methods: their names, run-file keys and JSON form, and the methods `simul eval` runs), the
prompt templates (templates), the embedded default model (default_model) and the grids of methods a sweep
runs (sweep)."""

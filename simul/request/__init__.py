"""What an evaluation is asked to do: the decoding methods (methods), the prompt templates (templates), the
embedded default model (default_model) and the grids of methods a sweep runs (sweep)."""

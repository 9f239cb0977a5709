"""A run and its directory: one evaluation from streams to a scored run (evaluation), the run directory's
files (directory), what they must hold (schema) and its writer's lock (lock); shards of a run (shard), their
merge (merge) and Ray workers (ray_runner); evaluations taking turns in one process (side_by_side); and run
directories made from other systems' outputs (ingest)."""

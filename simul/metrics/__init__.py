"""Scoring: every metric of every method over decoded streams (scoring; compute, which puts together the
figures of each metric family in families/), quality, latency, erasure, speed and acceptance, the units and
tokenizers they count in, COMET, and the registry of metric names and directions (registry)."""

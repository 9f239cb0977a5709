"""Helpers for tests: small, fast, deterministic stand-ins for real models."""

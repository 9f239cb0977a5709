"""simul: evaluate simultaneous machine translation by re-translation and SSBD on llama.cpp models."""

__version__ = "0.1.0"

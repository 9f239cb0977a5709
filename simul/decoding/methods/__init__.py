"""Decoding methods as parts (docs/methods.md): the interface (protocol.py), the acceptance rules (rules.py),
the drafters (drafters.py), how a step's drafters take turns (chain.py), the display policies (display.py)
and the built-in methods RT, SSBD and CD put together from them (built_in.py).

This file imports nothing; import each name from its module.
"""

"""Decoding streams: the step records (records.py), the stream decoder (stream.py), which runs any method made
of drafters, acceptance rules and a display policy (simul.decoding.methods; RT, SSBD and CD are built from
them), SSBD's acceptance rule (acceptance.py), the draft helpers for --ending and --resync (drafts.py), the
forward passes of many streams together (passes.py, scheduler.py, engine.py) and the decision trace
(trace.py).

What the viewer is shown lives in simul.decoding.display, the llama.cpp model in simul.decoding.backend,
whole talks in simul.decoding.longform.

This file imports nothing: reading the records (``from simul.decoding.records import StepRecord``), as
metrics, runs and reports do, loads neither the decoder nor llama.cpp. Import each name from its module.
"""

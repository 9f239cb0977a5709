"""The figures of a stream's recognizer record that are measured on the machine, not chosen by settings.

Two runs of the same recognizer on the same audio and settings agree on everything in the record but these:
how long the updates took, how far behind the audio they fell and what that changed (updates that started
late, or were stopped). A stream timed by the audio (``--timing audio``) leaves the long-form ones out, and
``simul diff`` lists them apart from the fields that say how a stream was made.
"""

from __future__ import annotations

# the long-form recognizer's figures (simul.streams.asr.talk)
TALK_MEASURED = (
    "compute_s",
    "real_time_factor",
    "update_ms_by_quarter",
    "update_cpu_ms_by_quarter",
    "update_ms_median",
    "updates_over_2x_median",
    "final_lag_s",
    "max_lag_s",
    "keeps_up",
    "late_updates",
    "cancelled_updates",
)
# a per-segment stream's figures (simul.streams.asr.build)
SEGMENT_MEASURED = ("compute_ms", "real_time_factor")
# Every measured name. ``recognitions`` is among them: under ``--timing online`` how many updates ran
# follows from how long each took.
MEASURED = frozenset((*TALK_MEASURED, *SEGMENT_MEASURED, "recognitions"))

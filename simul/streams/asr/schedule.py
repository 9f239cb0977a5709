"""When the recognizer runs on growing audio, and when each result is ready: one schedule for both paths of
`simul streams asr --audio` (a segment's growing audio, simul.streams.asr.growing; a whole recording's
buffer, simul.streams.asr.online).

* :func:`chunk_ends`: the fixed schedule, an update every ``interval_ms`` of audio before the end and one at
  the end (no extra update at the end itself when the interval divides it).
* :func:`emission_times`: computation-aware emission of one recognizer working through the updates in order,
  each starting when its audio is there and the previous one is done:
  ``ready_i = max(audio_i, ready_(i-1)) + compute_i``. Times never decrease.
"""

from __future__ import annotations

from collections.abc import Sequence

from simul.common.errors import UsageError


def chunk_ends(duration_ms: float, interval_ms: float) -> list[float]:
    """Audio times of the updates of the fixed schedule: every interval before the end, then the end."""
    if interval_ms <= 0:
        raise UsageError(f"--interval-ms must be positive, got {interval_ms:g}")
    ends: list[float] = []
    tick = 1
    while tick * interval_ms < duration_ms - 1e-6:
        ends.append(tick * interval_ms)
        tick += 1
    ends.append(duration_ms)
    return ends


def emission_times(audio_ms: Sequence[float], compute_ms: Sequence[float]) -> list[float]:
    """When each update's result is ready (see the module docstring)."""
    times: list[float] = []
    ready = 0.0
    for heard, compute in zip(audio_ms, compute_ms, strict=True):
        ready = max(heard, ready) + compute
        times.append(ready)
    return times

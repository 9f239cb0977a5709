"""When the recognizer runs on growing audio, and when each result is ready: one schedule for both paths of
`simul streams asr --audio` (a segment's growing audio, simul.streams.asr.growing; a whole recording's
buffer, simul.streams.asr.online).

* :func:`chunk_ends`: the fixed schedule, an update every ``interval_ms`` of audio before the end and one at
  the end (no extra update at the end itself when the interval divides it).
* :func:`emission_times`: computation-aware emission of one recognizer working through the updates in order,
  each starting when its audio is there and the previous one is done:
  ``ready_i = max(audio_i, ready_(i-1)) + compute_i``. Times never decrease.
* :class:`Schedule`: where each update of a whole recording ends (in samples), by ``--timing``:

  - ``audio`` and ``measured``: the fixed schedule, whatever the machine's speed, so the transcript is the
    same on a fast and a slow machine; a recognizer slower than the audio falls further behind at every
    update (its lag grows with the recording);
  - ``online``: whisper_streaming's simultaneous mode: an update takes all the audio that arrived while the
    previous one ran, at least one interval more;
  - ``auto``: the fixed schedule while the recognizer keeps up (it is free by the next chunk end: the
    updates are then those of ``measured``), and all the audio that arrived while it ran when it is not, so
    that the lag stays within about one update's compute time. On a machine that keeps up, ``auto`` and
    ``measured`` give the same stream; on one that does not, ``auto`` trades the fixed transcript for a
    bounded lag, and the stream's provenance counts the updates that came late. A late update that the end
    of the recording overtakes (it would be ready after the audio ended) is stopped when the audio ends, as
    a live system stops a recognition that the end of its input made stale, and the final update starts
    at once (simul.streams.asr.online.recognize_recording): without that, the final result came up to two
    updates' compute after the end (3.2 s on the 2-core Zen 3 with Whisper base), with it one. The
    provenance counts these ``cancelled_updates``.
"""

from __future__ import annotations

import math
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


class Schedule:
    """Where the updates of one recording end, in samples (see the module docstring for the timings).

    :meth:`next_end` takes the samples heard so far and when the recognizer is free (ms on the talk's
    clock: the previous update's ready time) and returns the end of the next update's audio; ``late``
    counts the updates that started after their chunk end because the recognizer was still busy.
    """

    def __init__(self, timing: str, samples: int, interval_ms: float, sample_rate: int) -> None:
        self.timing = timing
        self.samples = samples
        self.interval_ms = interval_ms
        self.rate = sample_rate
        duration_ms = 1000.0 * samples / sample_rate
        self._grid = [
            samples if end >= duration_ms else round(end * sample_rate / 1000.0)
            for end in chunk_ends(duration_ms, interval_ms)
        ]
        self._next = 0  # the first grid point not yet passed
        self.late = 0

    def _at(self, ms: float) -> int:
        """The first sample at or after ``ms``: an update never starts before its audio is there."""
        if ms >= 1000.0 * self.samples / self.rate:
            return self.samples
        return min(self.samples, math.ceil(ms * self.rate / 1000.0 - 1e-9))

    def next_end(self, heard: int, ready_ms: float) -> int:
        if self.timing == "online":
            heard_ms = 1000.0 * heard / self.rate
            end = self._at(max(ready_ms, heard_ms + self.interval_ms))
            self.late += ready_ms > heard_ms + self.interval_ms
            return end
        while self._next < len(self._grid) - 1 and self._grid[self._next] <= heard:
            self._next += 1
        grid = self._grid[self._next]
        if self.timing == "auto" and ready_ms > 1000.0 * grid / self.rate:
            self.late += 1
            return max(grid, self._at(ready_ms))
        return grid

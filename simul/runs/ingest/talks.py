"""The long-form facts (``StepRecord.talk``) of an ingested talk's updates, from what its format records.

A long-form stream is a whole talk; every update's ``output`` and ``display`` are the talk-level texts (see
:mod:`simul.decoding.records`). Of the keys of ``StepRecord.talk`` an external system's file can give:

* ``source_words``: whitespace words of the transcript known at the update (the format's position, read
  through the stream file: a time for timed talks, a word count for text documents);
* ``emitted_ms``: the update's time on the talk's clock, computation-unaware (None for text documents);
* ``elapsed_ms``: computation-aware. Stated by the format (OmniSTEval's ``elapsed``), or derived as simul's
  decoder derives it from the update's own computation time c_t (simulstream's ``computation_time``,
  simul's ``seconds``): ``elapsed_t = max(time_t, elapsed_(t-1)) + 1000 c_t`` for timed talks, the
  cumulative ``elapsed_(t-1) + 1000 c_t`` for text documents (simul/decoding/records.py). None when the
  format records neither (SimulStreaming's output);
* ``deleted``: the end of the previous talk-level output that this update took back (after their longest
  common prefix, in characters), when the format records revisions; None for append-only formats;
* ``committed_chars``: characters of the output confirmed for good, when the format says so
  (SimulStreaming's confirmed ``text``);
* ``committed_words``, ``closed``, ``open``, ``prompt_tokens`` describe simul's own windows and prompts: None.

None means "not recorded", so the scorer reports the figure as not available rather than as zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simul.common.sequences import common_prefix_length
from simul.decoding.records import TALK_KEYS
from simul.runs.ingest.system import Update
from simul.streams.format import Stream


def talk_facts(updates: Sequence[Update], stream: Stream, revisions: bool) -> list[dict[str, Any]]:
    """One ``talk`` dict per update (see the module docstring); ``revisions``: the format records them."""
    facts: list[dict[str, Any]] = []
    previous_output = ""
    elapsed: float | None = None
    derivable = True  # elapsed is derived from computation times only while every update has one
    for index, update in enumerate(updates):
        time_ms = update.time_ms if stream.timed else None
        if update.elapsed_ms is not None:
            elapsed = update.elapsed_ms
        elif update.seconds is not None and derivable and (elapsed is not None or index == 0):
            start = elapsed or 0.0
            if time_ms is not None:
                start = max(time_ms, start)
            elapsed = start + 1000.0 * update.seconds
        else:
            derivable = False
            elapsed = None
        deleted = (
            previous_output[common_prefix_length(previous_output, update.output) :] if revisions else None
        )
        fact: dict[str, Any] = dict.fromkeys(TALK_KEYS)
        fact.update(
            source_words=len(update.source.split()),
            emitted_ms=None if time_ms is None else round(time_ms, 3),
            elapsed_ms=None if elapsed is None else round(elapsed, 3),
            deleted=deleted,
            committed_chars=update.committed_chars,
        )
        facts.append(fact)
        previous_output = update.output
    return facts

"""Export a run's displayed stream as a SimulEval ``instances.log``, so other toolkits can rescore it.

SimulEval's log holds one JSON object per instance: ``index``, ``prediction``, ``delays``, ``elapsed``,
``prediction_length``, ``reference``, ``source``, ``source_length``. Its target is append-only, which cannot
show revisions, so the export writes what a viewer ended up with: the final displayed output, each unit with
the delay at which it was displayed for the last time and never changed (see ``metrics/latency.py``).
Units are words for spaced target languages and characters for Chinese, Japanese and Thai (SimulEval's
``--eval-latency-unit word|char``). Delays are source words (characters for unspaced sources) for text
streams and milliseconds for timed streams; ``elapsed`` adds the computation time spent up to the update that
finalised the unit (computation-aware) for timed streams, and is 0 for text streams, as SimulEval does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from simul.decoding import StreamResult
from simul.languages import get_language
from simul.metrics.latency import finalisation_steps, source_positions
from simul.streams.format import Stream


def _units(text: str, by_char: bool) -> list[str]:
    return [ch for ch in text if not ch.isspace()] if by_char else text.split()


def instances(result: StreamResult, stream: Stream, index: int) -> dict[str, Any]:
    tgt = get_language(stream.tgt)
    src = get_language(stream.src)
    by_char = tgt.unspaced
    displays = [_units(s.display, by_char) for s in result.steps]
    positions = source_positions(
        [s.source for s in result.steps], [s.time_ms for s in result.steps], src.unspaced
    )
    timed = stream.timed
    compute_ms: list[float] = []
    total = 0.0
    for s in result.steps:
        total += (s.t_prompt + s.t_gen) * 1000.0
        compute_ms.append(total)
    final = displays[-1]
    finalised_at = finalisation_steps(displays)
    delays = [positions[t] for t in finalised_at]
    elapsed = [positions[t] + compute_ms[t] for t in finalised_at] if timed else [0.0] * len(final)
    return {
        "index": index,
        "prediction": ("" if by_char else " ").join(final),
        "delays": [round(d, 3) for d in delays],
        "elapsed": [round(e, 3) for e in elapsed],
        "prediction_length": len(final),
        "reference": stream.reference or "",
        "source": stream.final_source,
        "source_length": positions[-1],
        "id": stream.id,
        "latency_unit": "char" if by_char else "word",
    }


def simuleval_lines(results: list[StreamResult], streams: dict[str, Stream]) -> Iterator[str]:
    for index, result in enumerate(results):
        yield json.dumps(instances(result, streams[result.stream_id], index), ensure_ascii=False)

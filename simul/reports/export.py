"""Export a run's displayed stream for the field's own scorers: SimulEval and simulstream/OmniSTEval.

**SimulEval** (``instances.log``, SimulEval 1.1.4 ``--score-only``): one JSON object per instance with
``index``, ``prediction``, ``delays``, ``elapsed``, ``prediction_length``, ``reference``, ``source``,
``source_length``. SimulEval's target is append-only and cannot show revisions, so the export writes what a
viewer ended up with: the final display, each unit with the delay at which it was displayed for the last
time and never changed (``metrics/latency.py``).

* ``prediction`` is the final display, unaltered (spaces inside Chinese or Japanese text are kept).
* Units (``metrics/units.py``) are whitespace words, or characters with interior spaces for languages written
  without spaces: score with ``--eval-latency-unit word`` or ``char``. One delay per unit, so SimulEval's
  |Y| (``len(delays)``) and |Y*| (``len(reference.split(" "))`` or ``len(reference.strip())``) are the
  lengths simul uses, and SimulEval's LAAL on the export equals the LAAL in ``run.json``.
* ``delays`` are source words (non-space characters for unspaced sources) for text streams and milliseconds
  for timed streams; ``source_length`` is |X| in the same unit: the segment's duration for timed streams
  that record one (ACL 60/60), else the final step's position.
* ``elapsed`` is computation-aware, in milliseconds: the delay plus the cumulative wall-clock of the updates
  up to the one that finalised the unit, for timed streams; the cumulative wall-clock alone for text
  streams (which have no source clock). SimulEval's computation-aware scores compare ``elapsed`` with
  ``source_length``, which for text streams is in words: use simul's ``*_ca`` figures there instead.
* ``config.yaml`` next to the log gives ``simuleval --score-only`` the source and target types.

**simulstream** (a metrics log as simulstream 1.0.0's server writes it, read by its ``LogReader`` and by
OmniSTEval 0.1.10 ``longform --hypothesis_format simulstream``): per stream a metadata line
``{"id", "metadata": {"wav_name": "<stream id>.wav"}}``, then per update ``{"id", "total_audio_processed",
"computation_time", "generated_tokens", "deleted_tokens"}``. Tokens are the target units; an update deletes
the units of the previous display after its longest common prefix with the new one and generates the new
display's units after it, so simulstream's ``NormalizedErasure`` (deleted / final units) is simul's NE of the
display with ``--ne-tokenizer word`` when the tokens are words. For languages written without spaces the
tokens are characters by default (spaces inside included, so OmniSTEval's character-level latency is
simul's); simulstream's word-level NE then counts the words the deleted characters span, which is not
simul's word NE (an extended last word erases nothing there): export with ``--unit word`` to compare NE in
words. simulstream counts characters with spaces (``list(text)``), simul's ``--ne-tokenizer char``
without. ``total_audio_processed`` is in seconds: the step's time for timed
streams; for text streams one source word is written as one millisecond (the format has no word unit), so
OmniSTEval's millisecond figures read as words. ``computation_time`` is the update's own wall-clock (seconds;
0 for a run that records no update times, such as an ingested SSBD reference output: the format requires
the field).
Next to the log the export writes what OmniSTEval needs: ``eval.yaml`` (simulstream's ``simuleval``
detokenizer with the unit), ``segmentation.yaml`` (one segment per stream: offset 0, duration |X|),
``references.txt`` and ``sources.txt``.

**OmniSTEval short-form** (``omnisteval shortform``, OmniSTEval 0.1.10 ``io.load_shortform_instances``): a
folder with ``instances.jsonl``, one JSON object per stream in the run's order with what that loader reads
(``prediction``, ``delays`` (its default ``--emission_cu_key``), ``source_length``, and ``elapsed`` (its
default ``--emission_ca_key``) for timed streams only) plus ``index``, ``id``, ``reference`` and
``latency_unit`` for people; ``references.txt`` (one reference a line, in the same order; the loader
requires it) and ``sources.txt`` (for ``--comet``). The values are the SimulEval export's, so OmniSTEval's
YAAL, SWF, EFSW, DSPTV and degenerate-policy flag on the export equal ``yaal``, ``swf``, ``efsw``,
``dsptv`` and ``degenerate_policy`` in ``run.json`` (``metrics/degeneracy.py``). ``elapsed`` is left out
for text streams: it is in milliseconds while their ``source_length`` is in words, and OmniSTEval would
mix the two in its computation-aware figures (simul's ``*_ca`` figures are the ones to read there).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from simul.common.languages import get_language
from simul.common.sequences import common_prefix_length
from simul.decoding.records import StreamResult
from simul.metrics.delays import stream_delays
from simul.metrics.latency import source_positions
from simul.metrics.units import target_unit, units
from simul.streams.format import Stream

ExportFormat = Literal["simuleval", "simulstream", "omnisteval"]  # the long-form formats are among them
EXPORT_FORMATS: tuple[ExportFormat, ...] = get_args(ExportFormat)


def instance(result: StreamResult, stream: Stream, index: int) -> dict[str, Any]:
    """One SimulEval instance (see the module docstring)."""
    delays = stream_delays(result, stream)
    final_text = result.steps[-1].display if result.steps else ""
    return {
        "index": index,
        "prediction": final_text,
        "delays": [round(d, 3) for d in delays.delays],
        "elapsed": [round(e, 3) for e in delays.elapsed],
        "prediction_length": len(delays.final_units),
        "reference": stream.reference or "",
        "source": stream.final_source,
        "source_length": round(delays.source_length, 3),
        "id": stream.id,
        "latency_unit": delays.unit,
    }


def simuleval_lines(results: list[StreamResult], streams: dict[str, Stream]) -> Iterator[str]:
    for index, result in enumerate(results):
        yield json.dumps(instance(result, streams[result.stream_id], index), ensure_ascii=False)


def simulstream_records(
    result: StreamResult,
    stream: Stream,
    client: int,
    unit: str | None = None,
    positions: Sequence[float] | None = None,
    compute: Sequence[float] | None = None,
) -> list[dict[str, Any]]:
    """The metrics-log lines of one stream (see the module docstring); tokens in ``unit`` (default: the
    target's latency unit). ``positions`` (ms) and ``compute`` (s) per step replace the source positions
    and the updates' own times (long-form runs give each update's own time and its computation-aware lag)."""
    unit = unit or target_unit(stream.tgt)
    if positions is None:
        positions = source_positions(
            [s.source for s in result.steps],
            [s.time_ms for s in result.steps],
            get_language(stream.src).unspaced,
        )
    if compute is None:
        compute = [s.t_prompt + s.t_gen for s in result.steps]
    lines: list[dict[str, Any]] = [{"id": client, "metadata": {"wav_name": f"{stream.id}.wav"}}]
    previous: list[str] = []
    for step, position, seconds in zip(result.steps, positions, compute, strict=True):
        current = units(step.display, unit)
        keep = common_prefix_length(previous, current)
        lines.append(
            {
                "id": client,
                "total_audio_processed": round(position / 1000.0, 6),
                "computation_time": round(seconds, 6),
                "generated_tokens": current[keep:],
                "deleted_tokens": previous[keep:],
            }
        )
        previous = current
    return lines


@dataclass(frozen=True)
class SimulstreamExport:
    log: str
    eval_config: str
    segmentation: str
    references: str
    sources: str
    unit: str


def simulstream_export(
    results: Sequence[StreamResult], streams: dict[str, Stream], unit: str | None = None
) -> SimulstreamExport:
    """The log and the files OmniSTEval needs next to it; tokens in ``unit`` (default: the target's)."""
    import yaml

    log: list[str] = []
    segments: list[dict[str, Any]] = []
    refs: list[str] = []
    sources: list[str] = []
    chosen = unit or "word"
    for client, result in enumerate(results):
        stream = streams[result.stream_id]
        chosen = unit or target_unit(stream.tgt)
        log.extend(
            json.dumps(r, ensure_ascii=False) for r in simulstream_records(result, stream, client, chosen)
        )
        length = stream_delays(result, stream).source_length
        segments.append({"wav": f"{stream.id}.wav", "offset": 0.0, "duration": round(length / 1000.0, 6)})
        refs.append(_one_line(stream.reference or ""))
        sources.append(_one_line(stream.final_source))
    config = {"detokenizer_type": "simuleval", "latency_unit": chosen}
    return SimulstreamExport(
        log="".join(line + "\n" for line in log),
        eval_config=yaml.safe_dump(config, sort_keys=True),
        segmentation=yaml.safe_dump(segments, sort_keys=False, allow_unicode=True),
        references="".join(r + "\n" for r in refs),
        sources="".join(s + "\n" for s in sources),
        unit=chosen,
    )


@dataclass(frozen=True)
class OmnistevalShortformExport:
    instances: str
    references: str
    sources: str
    unit: str


def omnisteval_shortform_export(
    results: Sequence[StreamResult], streams: dict[str, Stream]
) -> OmnistevalShortformExport:
    """What ``omnisteval shortform`` reads, for a short-form run (see the module docstring)."""
    lines: list[str] = []
    refs: list[str] = []
    sources: list[str] = []
    unit = "word"
    for index, result in enumerate(results):
        stream = streams[result.stream_id]
        row = instance(result, stream, index)
        unit = row["latency_unit"]
        if not stream.timed:
            del row["elapsed"]
        lines.append(json.dumps(row, ensure_ascii=False))
        refs.append(_one_line(stream.reference or ""))
        sources.append(_one_line(stream.final_source))
    return OmnistevalShortformExport(
        instances="".join(line + "\n" for line in lines),
        references="".join(r + "\n" for r in refs),
        sources="".join(s + "\n" for s in sources),
        unit=unit,
    )


def _one_line(text: str) -> str:
    """Line-oriented files cannot hold a newline; a reference that had one is joined with a space."""
    return " ".join(text.splitlines())

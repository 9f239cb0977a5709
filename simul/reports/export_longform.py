"""Export a long-form run (its streams are whole talks) for the field's long-form scorers.

A long-form run's step records hold the talk-level texts after every update and the update's ``talk`` facts
(``simul.decoding.records``). The final output's units and their times come from
``simul.metrics.longform.delays.talk_from_records``: unit j of the final output is delayed to the update from
which it stayed in its final form (simulstream's rule), its delay that update's CU time (``emitted_ms``, or
the source words read for untimed text documents) and its elapsed that update's CA time (``elapsed_ms``).

**omnisteval** (OmniSTEval 0.1.10, ``omnisteval longform --hypothesis_format jsonl``): the files written by
``simul.metrics.longform.omnisteval_files.write_omnisteval_inputs``: ``hypotheses.jsonl`` (one line per
talk: ``source`` = ``<talk id>.wav``, ``prediction``, ``delays``, ``elapsed`` when the run measured
computation, ``source_length``), ``segmentation.yaml`` (the talks' reference segments, seconds),
``references.txt`` (one line per segment; ``references.N.txt`` for further references), ``sources.txt`` and
``command.txt``, the command that scores the folder.

**simulstream** (a metrics log as simulstream 1.0.0's server writes it for whole audio files): per talk a
metadata line naming ``<talk id>.wav``, then per update the units generated and deleted against the previous
talk-level display, ``total_audio_processed`` (the update's time on the talk clock, seconds; source words as
milliseconds for text documents, as the OmniSTEval files count them) and ``computation_time`` (the update's
own wall-clock). ``eval.yaml`` is the configuration simulstream's ``LogReader`` (and OmniSTEval's
``--hypothesis_format simulstream``) needs: its ``simuleval`` detokenizer with the unit. Next to them the
same folder holds the OmniSTEval files above, whose segmentation and references both hypothesis formats are
scored against. simulstream's computation-aware delay is total_audio_processed + computation_time; the log's
computation_time is therefore elapsed_ms - emitted_ms (the update's own time plus any wait behind a slow
earlier update), so the log's computation-aware figures are the run's own; for untimed documents it is the
update's own time.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from simul.common.errors import SimulError
from simul.common.files import write_atomic
from simul.decoding.records import StreamResult
from simul.metrics.longform.delays import talk_from_records
from simul.metrics.longform.omnisteval_files import (
    HYPOTHESES,
    REFERENCES,
    SEGMENTATION,
    OmnistevalFiles,
    moses_lang,
    write_omnisteval_inputs,
)
from simul.metrics.longform.talk import LongformTalk
from simul.metrics.quality import bleu_tokenizer
from simul.metrics.units import target_unit
from simul.reports.export import simulstream_records
from simul.streams.format import Stream

LONGFORM_FORMATS = ("omnisteval", "simulstream")
LOG = "log.jsonl"
EVAL_CONFIG = "eval.yaml"
SIMULSTREAM_COMMAND = "command.simulstream.txt"


def is_longform_run(streams: Mapping[str, Stream]) -> bool:
    """Whether the run's streams are talks; a run mixing talks and sentences is refused."""
    kinds = {s.longform for s in streams.values()}
    if len(kinds) > 1:
        raise SimulError(
            "the run mixes long-form talks and sentence streams; its exports would need two layouts. "
            "Evaluate talks and sentences in separate runs"
        )
    return kinds == {True}


def longform_talks(results: Sequence[StreamResult], streams: Mapping[str, Stream]) -> list[LongformTalk]:
    """Each talk's final units with their CU and CA times (``talk_from_records``)."""
    if not results:
        raise SimulError("the method has no finished talks to export")
    return [talk_from_records(streams[r.stream_id], r.steps) for r in results]


def omnisteval_export(
    results: Sequence[StreamResult], streams: Mapping[str, Stream], folder: Path
) -> OmnistevalFiles:
    """Write OmniSTEval's long-form input files for one method's talks (see the module docstring)."""
    return write_omnisteval_inputs(longform_talks(results, streams), folder)


@dataclass(frozen=True)
class SimulstreamLongform:
    log: Path
    eval_config: Path
    unit: str
    command: tuple[str, ...]
    omnisteval: OmnistevalFiles


def simulstream_command(folder: Path, tgt: str, unit: str) -> tuple[str, ...]:
    """``omnisteval longform --hypothesis_format simulstream`` on the folder's log, with the Moses language
    that simul's own scoring and the JSONL's command use (without it OmniSTEval's SoftSegmenter aligns
    untokenized words, and its figures differ from simul's: issue 41's worked example)."""
    moses = moses_lang(tgt)
    return (
        "omnisteval",
        "longform",
        "--hypothesis_format",
        "simulstream",
        "--hypothesis_file",
        str(folder / LOG),
        "--simulstream_config_file",
        str(folder / EVAL_CONFIG),
        "--speech_segmentation",
        str(folder / SEGMENTATION),
        "--ref_sentences_file",
        str(folder / REFERENCES),
        f"--{unit}_level",
        "--bleu_tokenizer",
        bleu_tokenizer(tgt),
        *(("--lang", moses) if moses else ()),
    )


def _update_times(result: StreamResult) -> tuple[list[float], list[float]]:
    """Per update of a talk: its time (``emitted_ms``; source words as ms for text documents) and the
    computation time to write, so that simulstream's computation-aware time, total_audio_processed +
    computation_time, is the run's own ``elapsed_ms`` (which counts an update queued behind a slow earlier
    one); for text documents, whose elapsed is not on the source axis, the update's own time."""
    positions: list[float] = []
    compute: list[float] = []
    for step in result.steps:
        talk = step.talk or {}
        emitted, elapsed = talk.get("emitted_ms"), talk.get("elapsed_ms")
        own = step.t_prompt + step.t_gen
        if emitted is None:
            positions.append(float(talk.get("source_words") or 0))
            compute.append(own)
        else:
            positions.append(float(emitted))
            compute.append(
                max(0.0, (float(elapsed) - float(emitted)) / 1000.0) if elapsed is not None else own
            )
    return positions, compute


def simulstream_longform_export(
    results: Sequence[StreamResult], streams: Mapping[str, Stream], folder: Path, unit: str | None = None
) -> SimulstreamLongform:
    """Write the simulstream log of one method's talks and the files its scorers need (module docstring)."""
    import yaml

    talks = longform_talks(results, streams)  # refuses what cannot be scored before anything is written
    tgt = talks[0].tgt
    chosen = unit or target_unit(tgt)
    log: list[str] = []
    for client, result in enumerate(results):
        positions, compute = _update_times(result)
        records = simulstream_records(
            result, streams[result.stream_id], client, chosen, positions=positions, compute=compute
        )
        log.extend(json.dumps(r, ensure_ascii=False) for r in records)
    files = write_omnisteval_inputs(talks, folder)
    write_atomic(folder / LOG, "".join(line + "\n" for line in log))
    config = {"detokenizer_type": "simuleval", "latency_unit": chosen}
    write_atomic(folder / EVAL_CONFIG, yaml.safe_dump(config, sort_keys=True))
    command = simulstream_command(folder, tgt, chosen)
    write_atomic(folder / SIMULSTREAM_COMMAND, shlex.join(command) + "\n")
    return SimulstreamLongform(
        log=folder / LOG, eval_config=folder / EVAL_CONFIG, unit=chosen, command=command, omnisteval=files
    )


__all__ = [
    "HYPOTHESES",
    "LONGFORM_FORMATS",
    "SimulstreamLongform",
    "is_longform_run",
    "longform_talks",
    "omnisteval_export",
    "simulstream_longform_export",
]

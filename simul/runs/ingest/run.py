"""Join a system's outputs to a stream file and write a normal, complete, scored run directory.

The run holds one method, ``ext-NAME``. Its step records carry the sources, outputs and displays (and update
times when the format has them); what the format does not record is listed in ``config.ingest.not_available``
and every figure that needs it is reported as not available, never as zero.

COMET (or XCOMET) is loaded once the steps are written: a scorer that fails or whose process is killed
(simul.metrics.xcomet.ScorerKilled) leaves the run ``scoring_failed``, which `simul score` finishes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args

from simul import __version__
from simul.common.errors import SimulError, UsageError
from simul.common.hashing import sha256_file
from simul.decoding.records import StepRecord, StreamResult
from simul.machine.environment import environment, now
from simul.metrics.comet import load_comet
from simul.metrics.learned_models import load_named
from simul.metrics.scoring import Scored, higher_is_better, score
from simul.metrics.tokenizers import ne_tokenizer_record, resolve_ne_tokenizer
from simul.request.method_settings import EXTERNAL
from simul.request.methods import Method
from simul.runs.directory import (
    RUN_FILE,
    SCHEMA_VERSION,
    SCORE_ADVICE,
    STATUS_COMPLETE,
    STATUS_SCORING_FAILED,
    RunWriter,
)
from simul.runs.evaluation import error_line, load_stream_set
from simul.runs.ingest import (
    omnisteval_jsonl,
    simul_outputs,
    simuleval_log,
    simulstream_log,
    simulstreaming,
    ssbd_ref,
)
from simul.runs.ingest.system import SystemOutputs, SystemStream, Update
from simul.runs.ingest.talks import talk_facts
from simul.streams.format import Step, Stream, dumps_stream
from simul.streams.references import segment_times_summary

IngestFormat = Literal["ssbd-ref", "simulstream", "simuleval", "simul", "omnisteval", "simulstreaming"]
INGEST_FORMATS: tuple[IngestFormat, ...] = get_args(IngestFormat)


@dataclass
class IngestRequest:
    path: Path
    format: str
    streams_path: Path
    out: Path
    name: str | None = None
    unit: str | None = None  # simulstream token unit / SimulEval or OmniSTEval latency unit
    ne_tokenizer: str = "auto"
    comet_model: str = "Unbabel/wmt22-comet-da"
    comet_batch_size: int = 16
    overwrite: bool = False
    hardware: str | None = None  # what the system ran on, as its authors say (`simul rank` shows it)
    # the models of learned metrics with an option of their own (option -> model or None: --bleurt-model,
    # a local BLEURT checkpoint), each loaded by its record (simul.metrics.learned_models.load_named)
    learned_models: Mapping[str, str | None] = field(default_factory=dict)


@dataclass
class IngestOutcome:
    run: dict[str, Any]
    scored: Scored
    streams: int
    left_out: int


def read_outputs(request: IngestRequest, streams: Mapping[str, Stream]) -> SystemOutputs:
    if request.format == "ssbd-ref":
        return ssbd_ref.read(request.path)
    if request.format == "simulstream":
        return simulstream_log.read(request.path, streams, request.unit or "word")
    if request.format == "simuleval":
        return simuleval_log.read(request.path, streams, request.unit)
    if request.format == "simul":
        return simul_outputs.read(request.path)
    if request.format == "omnisteval":
        return omnisteval_jsonl.read(request.path, streams, request.unit)
    if request.format == "simulstreaming":
        if request.unit is not None:
            raise UsageError("--unit does not apply to --format simulstreaming (its output is text)")
        return simulstreaming.read(request.path, streams)
    raise UsageError(f"unknown --format {request.format!r}; choose one of: {', '.join(INGEST_FORMATS)}")


def _input_sha256(path: Path) -> str:
    """SHA-256 of the ingested file; for a folder of files (SimulStreaming, one per talk), of the names and
    SHA-256 of its .jsonl files in name order."""
    if not path.is_dir():
        return sha256_file(path)
    listing = "".join(
        f"{p.name}\t{sha256_file(p)}\n"
        for p in sorted(path.iterdir())
        if p.suffix == ".jsonl" and p.is_file()
    )
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


def _normal(text: str) -> str:
    return " ".join(text.split())


def joined(outputs: SystemOutputs, streams: Mapping[str, Stream], streams_path: Path) -> list[SystemStream]:
    """The system's streams, checked against the stream file: known ids, no duplicates, same sources."""
    seen: dict[str, str] = {}
    for system in outputs.streams:
        stream = streams.get(system.id)
        if stream is None:
            raise SimulError(
                f"{system.where}: id {system.id!r} is not in {streams_path}; outputs are joined to sources "
                "and "
                "references by id, so a mismatch is an error (build the outputs from the same stream file)"
            )
        if system.id in seen:
            raise SimulError(f"{system.where}: id {system.id!r} appears again (first at {seen[system.id]})")
        seen[system.id] = system.where
        if system.source is not None and _normal(system.source) != _normal(stream.final_source):
            raise SimulError(
                f"{system.where}: the source of {system.id!r} differs from the one in {streams_path}; "
                "the files "
                "do not describe the same streams"
            )
        if not system.updates:
            raise SimulError(f"{system.where}: {system.id!r} has no outputs")
    return outputs.streams


def step_records(system: SystemStream, stream: Stream, revisions: bool = True) -> list[StepRecord]:
    """Step records of one stream; a last update made before the source was complete is followed by one at
    the complete source with the same output (the output the system ended with). The records of a
    long-form stream carry its ``talk`` facts (:mod:`simul.runs.ingest.talks`); ``revisions``: the format
    records revisions (else ``deleted`` is not available)."""
    updates = list(system.updates)
    last = updates[-1]
    complete = (
        last.time_ms is not None
        and stream.steps[-1].time_ms is not None
        and last.time_ms >= stream.steps[-1].time_ms
        if stream.timed
        else _normal(last.source) == _normal(stream.final_source)
    )
    if not complete:
        end_ms = stream.steps[-1].time_ms if stream.timed else None
        elapsed = last.elapsed_ms
        if elapsed is not None and end_ms is not None:
            elapsed = max(elapsed, end_ms)
        updates.append(
            Update(
                source=stream.final_source,
                output=last.output,
                time_ms=end_ms,
                display=last.display,
                seconds=0.0 if last.seconds is not None else None,
                elapsed_ms=elapsed,
                committed_chars=last.committed_chars,
            )
        )
    talk = talk_facts(updates, stream, revisions) if stream.longform else None
    records = []
    for index, update in enumerate(updates):
        record = StepRecord(
            step=index,
            source=update.source,
            final=index == len(updates) - 1,
            time_ms=update.time_ms if stream.timed else None,
            prompt_tokens=0,
            reused_tokens=0,
            processed_tokens=0,
            draft_tokens=0,
            accepted=0,
            output_ids=[],
            output=update.output,
            display=update.output if update.display is None else update.display,
            accepted_chars=0,
            stop="external",
            t_prompt=0.0,
            t_gen=update.seconds or 0.0,
            talk=None if talk is None else talk[index],
        )
        # as it reads back from steps.jsonl (rounded), so `simul score` recomputes the same figures
        records.append(StepRecord.from_json(record.to_json()))
    return records


def as_updated(stream: Stream, records: list[StepRecord], where: str) -> Stream:
    """The stream with one step per update of the system (its source and time then), all else kept.

    A run holds one record per step of its stream, and an external system updates when it does, not when the
    stream file's source grows; so the run's copy of a talk, or of a sentence whose outputs do not fall on
    its steps, has the system's updates as its steps. A step cannot be empty: an update made before any
    source was known shows the first step's source (its record keeps the empty source)."""
    first = stream.steps[0].source
    steps = tuple(Step(source=r.source or first, final=r.final, time_ms=r.time_ms) for r in records)
    updated = replace(stream, steps=steps, provenance={**stream.provenance, "steps": "the system's updates"})
    try:
        updated.validate()
    except ValueError as exc:
        raise SimulError(f"{where}: {exc}; the updates must be in the order the system made them") from None
    return updated


def ingest(request: IngestRequest) -> IngestOutcome:
    all_streams = load_stream_set(request.streams_path, None)
    by_id = {s.id: s for s in all_streams}
    outputs = read_outputs(request, by_id)
    systems = {s.id: s for s in joined(outputs, by_id, request.streams_path)}
    if not systems:
        raise SimulError(f"{request.path} holds no outputs")
    streams = [s for s in all_streams if s.id in systems]
    name = request.name or request.path.stem.replace(" ", "_")
    method = Method(name=EXTERNAL, system=name)
    tgt = streams[0].tgt
    ne_tok = resolve_ne_tokenizer(request.ne_tokenizer, tgt)
    learned, learned_fields = load_named(request.learned_models, request.comet_batch_size)
    file_sha = _input_sha256(request.path)
    config: dict[str, Any] = {
        "streams": {
            "path": str(request.streams_path),
            "sha256": sha256_file(request.streams_path),
            "limit": None,
            "count": len(streams),
            "src": streams[0].src,
            "tgt": tgt,
            **({"segment_times": derived} if (derived := segment_times_summary(streams)) else {}),
        },
        "methods": [method.to_json()],
        "model": {"name": name, "file": request.path.name, "sha256": file_sha},
        "model_sha256": file_sha,
        "template": None,
        "n_ctx": None,
        "threads": None,
        "ne_tokenizer": ne_tok,
        "comet_model": request.comet_model,
        "comet_batch_size": request.comet_batch_size,
        **learned_fields,
        "resolved": {"ne_tokenizer": ne_tokenizer_record(request.ne_tokenizer, ne_tok)},
        "ingest": {
            "format": request.format,
            "file": str(request.path),
            "sha256": file_sha,
            "unit": request.unit,
            "not_available": sorted(outputs.not_available),
            "notes": outputs.notes,
            "streams_without_outputs": len(all_streams) - len(streams),
            **({"hardware": request.hardware} if request.hardware else {}),
        },
    }
    run: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "simul", "version": __version__},
        "config": config,
        "environment": {**environment(0), "started": now()},
        "higher_is_better": higher_is_better(),
    }
    # every record is built (and every problem found) before anything is written
    revisions = "revisions" not in outputs.not_available
    results: dict[str, list[StreamResult]] = {method.key: []}
    # The streams the system was given, as an evaluation would write them: their hash is what `simul diff`
    # compares, also when the run's copy gets a step per system update below.
    given = "".join(dumps_stream(s) + "\n" for s in streams).encode("utf-8")
    rewritten = False
    for index, stream in enumerate(streams):
        records = step_records(systems[stream.id], stream, revisions)
        if stream.longform or len(records) != len(stream.steps):
            streams[index] = as_updated(stream, records, systems[stream.id].where)
            rewritten = True
        results[method.key].append(StreamResult(stream.id, method, records))
    writer = RunWriter.create(request.out, run, streams, overwrite=request.overwrite)
    if rewritten:
        run["config"]["streams"]["evaluated_sha256"] = hashlib.sha256(given).hexdigest()
    for result in results[method.key]:
        writer.append(result.stream_id, [result])
    try:
        comet, comet_reason = load_comet(request.comet_model, request.comet_batch_size)
        scored = score(
            [method],
            results,
            {s.id: s for s in streams},
            ne_tok,
            [comet, *learned],
            comet_reason,
            frozenset(outputs.not_available),
        )
    except Exception as exc:  # any scorer's failure: the steps are kept and the run says so
        reason = error_line(exc)
        run["status"] = STATUS_SCORING_FAILED
        run["streams_done"] = len(streams)
        run["scoring_error"] = {"error": type(exc).__name__, "message": reason}
        writer.run = run
        writer.save()
        raise SimulError(
            f"scoring failed after the outputs were ingested: {reason}. The steps are kept in {request.out} "
            f"({RUN_FILE} status {STATUS_SCORING_FAILED}); " + SCORE_ADVICE.format(path=request.out)
        ) from None
    run["status"] = STATUS_COMPLETE
    run["streams_done"] = len(streams)
    run["environment"]["finished"] = now()
    scored.attach(run)
    writer.run = run
    writer.write_per_stream(scored.per_stream_rows())
    writer.write_error_spans(scored.error_span_rows())
    writer.save()
    return IngestOutcome(
        run=run, scored=scored, streams=len(streams), left_out=len(all_streams) - len(streams)
    )

"""What the files of a run directory must hold for `score`, `diff`, `show` and `export` to read them.

A run directory may come from another machine, another simul version, or a hand edit. Its files are checked
on reading so that a damaged one gets an error naming the file, the line or field, and what to do, instead of
a ``KeyError`` or ``TypeError`` deep inside a metric:

* ``run.json``: ``config`` with ``methods`` (each a valid method), ``streams`` and ``model`` objects and the
  ``ne_tokenizer`` name; when present, ``methods`` (the scored rows: ``key``, ``label``, ``metrics`` with
  numbers or null), ``signatures`` and ``status``.
* ``steps.jsonl``: one object per line with the fields of a step record, each of its type (counts are
  whole numbers from 0 to 2**53, times finite numbers >= 0).
* ``per_stream.jsonl``: one object per line with ``method`` and ``stream`` names; ``comet``, ``xcomet`` and
  ``bleurt`` a number or null; a talk's ``segments`` each with an ``index``, a ``hypothesis``, its
  ``references`` and the same learned scores (:func:`check_per_stream_row`).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError
from simul.common.limits import as_float, parse_json
from simul.common.safe_text import excerpt
from simul.decoding.records import StepRecord, StreamResult
from simul.metrics.registry import names
from simul.metrics.tokenizers import NE_TOKENIZER_CHOICES
from simul.request.methods import Method
from simul.streams.format import Stream


class RecordError(ValueError):
    """A step or per-stream record that does not have the expected shape (the message names the field)."""


# Counts beyond 2**53 are not counts of anything simul decodes (and a float cannot hold them exactly).
MAX_COUNT = 2**53


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def _seconds(value: Any) -> bool:
    number = as_float(value)
    return math.isfinite(number) and number >= 0


Check = Callable[[Any], bool]


def _validator(kind: Any) -> Check:
    """A fast check for values of a step record field's type (built once per field)."""
    if kind is bool:
        return lambda v: isinstance(v, bool)
    if kind is int:
        return _count
    if kind is float:
        return _seconds
    if kind is str:
        return lambda v: isinstance(v, str)
    origin = typing.get_origin(kind)
    if origin is dict:
        key, value = (_validator(k) for k in typing.get_args(kind))
        return lambda v: isinstance(v, dict) and all(key(k) and value(x) for k, x in v.items())
    if origin is list:
        item = _validator(typing.get_args(kind)[0])
        return lambda v: isinstance(v, list) and all(item(x) for x in v)
    if origin in (typing.Union, types.UnionType):
        options = [_validator(k) for k in typing.get_args(kind)]
        return lambda v: any(check(v) for check in options)
    if kind is type(None):
        return lambda v: v is None
    return lambda v: True  # a field type this check does not know: leave it to the record


@cache
def _step_fields() -> dict[str, tuple[Any, bool, Check]]:
    """Field name -> (type, required, check) of a step record, from the dataclass itself."""
    hints = typing.get_type_hints(StepRecord)
    return {
        f.name: (
            hints[f.name],
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            _validator(hints[f.name]),
        )
        for f in dataclasses.fields(StepRecord)
    }


_KIND_NAMES = {
    bool: "true or false",
    int: "a whole number from 0 to 2**53",
    float: "a finite number >= 0",
    str: "a string",
}


def _kind_name(kind: Any) -> str:
    if kind in _KIND_NAMES:
        return _KIND_NAMES[kind]
    if typing.get_origin(kind) is list:
        return f"a list of {_kind_name(typing.get_args(kind)[0])}s"
    if typing.get_origin(kind) is dict:
        return f"an object whose every value is {_kind_name(typing.get_args(kind)[1])}"
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    if len(args) == 1:
        return f"{_kind_name(args[0])} or null"
    return str(kind)


def check_step_record(obj: Mapping[str, Any]) -> None:
    """Raise RecordError naming the first field of a step record that is missing or of the wrong type."""
    for name, (kind, required, valid) in _step_fields().items():
        if name not in obj:
            if required:
                raise RecordError(f"missing field {name!r}")
            continue
        if not valid(obj[name]):
            raise RecordError(f"field {name!r} must be {_kind_name(kind)}")
    # the drafters of a method with an n-gram drafter (docs/methods.md, "What is recorded"): one per token
    drafted_by = obj.get("drafted_by")
    if drafted_by is not None and len(drafted_by) != len(obj.get("output_ids") or []):
        raise RecordError(
            f"field 'drafted_by' names {len(drafted_by)} drafters for {len(obj.get('output_ids') or [])} "
            "output tokens"
        )


def step_fields(raw: bytes) -> tuple[str, str, dict[str, Any]]:
    """``(method key, stream id, fields)`` of one steps.jsonl line, not yet checked (its timings may still
    have to be joined from timings.jsonl); ValueError says what is wrong."""
    obj = parse_json(raw.decode("utf-8"), allow_constants=True)
    if not isinstance(obj, dict):
        raise RecordError("expected a JSON object")
    key, stream_id = obj.pop("method", None), obj.pop("stream", None)
    if not isinstance(key, str) or not isinstance(stream_id, str):
        raise RecordError("fields 'method' and 'stream' must be strings")
    return key, stream_id, obj


def step_record(obj: Mapping[str, Any]) -> StepRecord:
    """The checked step record of a steps.jsonl line's fields (timings joined)."""
    check_step_record(obj)
    return StepRecord.from_json(dict(obj))


def check_results(
    results: Mapping[str, Sequence[StreamResult]], streams: Mapping[str, Stream], steps_file: Path
) -> None:
    """Each finished stream's records must be its steps, in order: one per step, the last one final."""
    for key, stream_results in results.items():
        for result in stream_results:
            stream = streams[result.stream_id]
            records = result.steps
            where = f"{steps_file}: stream {excerpt(result.stream_id)}, method {excerpt(key)}"
            if len(records) != len(stream.steps):
                raise SimulError(
                    f"{where}: {len(records)} step records for a stream of {len(stream.steps)} steps; the "
                    "file is damaged (lines lost or repeated). Re-create the run with `simul eval --out`"
                )
            for index, record in enumerate(records):
                if record.step != index or record.final != (index == len(records) - 1):
                    raise SimulError(
                        f"{where}: record {index + 1} is step {record.step}"
                        f"{' (final)' if record.final else ''}; the records are out of order or damaged. "
                        "Re-create the run with `simul eval --out`"
                    )


PER_STREAM_LEARNED = names(lambda m: m.learned)  # learned segment scores, where a row carries them


def _check_learned(obj: Mapping[str, Any], where: str) -> None:
    for name in PER_STREAM_LEARNED:
        value = obj.get(name)
        if value is not None and not math.isfinite(as_float(value)):
            raise RecordError(f"field {where + name!r} must be a finite number or null")


def check_per_stream_row(row: Any) -> None:
    """One row of per_stream.jsonl, as `diff` and `rank` read it: ``method`` and ``stream`` names, learned
    scores numbers or null, and a talk's ``segments`` (re-segmented reference segments) each with its
    ``index``, ``hypothesis``, ``references`` and learned scores. RecordError names the field."""
    if not isinstance(row, dict):
        raise RecordError("expected a JSON object")
    for key in ("method", "stream"):
        if not isinstance(row.get(key), str):
            raise RecordError(f"field {key!r} must be a string")
    _check_learned(row, "")
    segments = row.get("segments")
    if segments is None:
        return
    if not isinstance(segments, list):
        raise RecordError("field 'segments' must be a list")
    for i, seg in enumerate(segments):
        where = f"segments[{i}]"
        if not isinstance(seg, dict):
            raise RecordError(f"{where} must be an object")
        if not _count(seg.get("index")):
            raise RecordError(f"field '{where}.index' must be a whole number >= 0")
        if not isinstance(seg.get("hypothesis"), str):
            raise RecordError(f"field '{where}.hypothesis' must be a string")
        refs = seg.get("references")
        if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
            raise RecordError(f"field '{where}.references' must be a non-empty list of strings")
        _check_learned(seg, f"{where}.")


def _object(obj: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    value = obj.get(key)
    if not isinstance(value, dict):
        raise SimulError(f"{where}: field {key!r} must be an object")
    return value


def check_run_json(run: dict[str, Any], run_file: Path) -> None:
    """Check the parts of run.json that the readers rely on; errors name the file and the field."""
    hint = "the file is damaged or was not written by simul; re-create the run with `simul eval --out`"
    where = str(run_file)
    try:
        config = _object(run, "config", where)
        methods = config.get("methods")
        if not isinstance(methods, list) or not methods:
            raise SimulError(f"{where}: field 'config.methods' must be a non-empty list")
        keys = {method_from_json(m, f"{where}: config.methods[{i}]").key for i, m in enumerate(methods)}
        for key in ("streams", "model"):
            _object(config, key, f"{where}: config")
        if config["streams"].get("references") is not None:
            _object(config["streams"], "references", f"{where}: config.streams")
        if "ingest" in config:
            ingest = _object(config, "ingest", f"{where}: config")
            missing = ingest.get("not_available", [])
            if not isinstance(missing, list) or not all(isinstance(x, str) for x in missing):
                raise SimulError(f"{where}: field 'config.ingest.not_available' must be a list of names")
        tokenizer = config.get("ne_tokenizer")
        if not isinstance(tokenizer, str) or tokenizer not in NE_TOKENIZER_CHOICES:
            raise SimulError(
                f"{where}: field 'config.ne_tokenizer' must be one of {', '.join(NE_TOKENIZER_CHOICES)}"
            )
        if "comet_model" in config and not isinstance(config["comet_model"], str):
            raise SimulError(f"{where}: field 'config.comet_model' must be a string")
        batch = config.get("comet_batch_size", 16)
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
            raise SimulError(f"{where}: field 'config.comet_batch_size' must be a whole number >= 1")
        if "status" in run and not isinstance(run["status"], str):
            raise SimulError(f"{where}: field 'status' must be a string")
        for key in ("signatures", "environment", "tool", "throughput", "comet"):
            if key in run:
                _object(run, key, where)
        if "cpu_usage" in run.get("environment", {}):
            _check_cpu_usage(run["environment"]["cpu_usage"], f"{where}: field 'environment.cpu_usage")
        if "methods" in run:
            _check_rows(run["methods"], where, keys)
    except SimulError as exc:
        raise SimulError(f"{exc}; {hint}") from None


# environment.cpu_usage.methods.<key>: the fields simul.machine.cpu_usage writes and reads back, each a
# number (counts whole), null where the record allows it.
_CPU_NUMBERS = {
    "calls": (_count, False),
    "wall_seconds": (_seconds, False),
    "cpu_seconds": (_seconds, False),
    "runqueue_seconds": (_seconds, True),
    "load1_mean": (_seconds, True),
    "load1_max": (_seconds, True),
    "cpu_per_wall": (_seconds, True),
    "cpu_share": (_seconds, True),
}


def _check_cpu_usage(usage: Any, field: str) -> None:
    """The CPU record of run.json (``field`` is its name, with an open quote): an object whose ``threads``
    is a whole number >= 1 and whose ``methods`` map names to records of numbers (simul.machine.cpu_usage);
    `score` and `diff` print from it and `eval --resume` continues its sums."""
    if not isinstance(usage, dict):
        raise SimulError(f"{field}' must be an object")
    threads = usage.get("threads")
    if threads is not None and not (_count(threads) and threads >= 1):
        raise SimulError(f"{field}.threads' must be a whole number >= 1")
    if "min_share" in usage and not _seconds(usage["min_share"]):
        raise SimulError(f"{field}.min_share' must be a number >= 0")
    records = usage.get("methods", {})
    if not isinstance(records, dict):
        raise SimulError(f"{field}.methods' must be an object")
    for key, record in records.items():
        at = f"{field}.methods.{excerpt(key)}"
        if not isinstance(record, dict):
            raise SimulError(f"{at}' must be an object")
        for name, (check, nullable) in _CPU_NUMBERS.items():
            value = record.get(name)
            if not (
                (value is None and (nullable or name not in record)) or (value is not None and check(value))
            ):
                raise SimulError(f"{at}.{name}' must be a number >= 0{' or null' if nullable else ''}")
        if "reliable" in record and not isinstance(record["reliable"], bool):
            raise SimulError(f"{at}.reliable' must be true or false")
        if "basis" in record and not isinstance(record["basis"], str):
            raise SimulError(f"{at}.basis' must be a string")


def method_from_json(obj: Any, where: str) -> Method:
    """A method of run.json's config; its errors (an unknown name, a beta out of range) name ``where``."""
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        raise SimulError(f"{where}: a method must be an object with a 'name'")
    for key in ("mask_k", "resync"):
        if key in obj and not _count(obj[key]):
            raise SimulError(f"{where}: {key!r} must be a whole number from 0 to 2**53")
    beta = obj.get("beta")
    if beta is not None and not math.isfinite(as_float(beta)):
        raise SimulError(f"{where}: 'beta' must be a number or null")
    for key in ("mask", "ending"):
        if key in obj and not isinstance(obj[key], str):
            raise SimulError(f"{where}: {key!r} must be a string")
    for key in ("plugin", "module"):  # a method from outside simul (read without importing it)
        if obj.get(key) is not None and not isinstance(obj[key], str):
            raise SimulError(f"{where}: {key!r} must be a string")
    try:
        return Method.from_json(obj)
    except SimulError as exc:
        raise SimulError(f"{where}: {exc}") from None


def _check_rows(rows: Any, where: str, keys: set[str]) -> None:
    if not isinstance(rows, list):
        raise SimulError(f"{where}: field 'methods' must be a list")
    for index, row in enumerate(rows):
        at = f"{where}: methods[{index}]"
        if not isinstance(row, dict):
            raise SimulError(f"{at} must be an object")
        for key in ("key", "label"):
            if not isinstance(row.get(key), str):
                raise SimulError(f"{at}: field {key!r} must be a string")
        if row["key"] not in keys:
            raise SimulError(f"{at}: key {excerpt(row['key'])} is not one of the methods in config.methods")
        metrics = row.get("metrics")
        if not isinstance(metrics, dict):
            raise SimulError(f"{at}: field 'metrics' must be an object")
        if "counts" in row and not isinstance(row["counts"], dict):
            raise SimulError(f"{at}: field 'counts' must be an object")
        for name, value in metrics.items():
            # an int too large for a float (10**400) would overflow the deltas of `simul diff`
            if value is not None and not (isinstance(value, float) or math.isfinite(as_float(value))):
                raise SimulError(f"{at}: metric {name!r} must be a number or null")

"""The run directory: everything needed to trust, rescore and compare a run.

    run.json        schema version, tool version, resolved config, hashes, environment, signatures, metrics
    streams.jsonl   the streams that were evaluated (references included), so the directory stands alone
    steps.jsonl     one line per method, stream and step, written as each stream finishes
    timings.jsonl   the wall-clock fields of those steps (every ``t_*`` field), keyed by method, stream, step
    per_stream.jsonl  per method and stream: sentence chrF, COMET, erasure, latency (for paired comparisons);
                    :meth:`RunWriter.write_per_stream` writes it, :func:`read_per_stream` reads and checks it
    error_spans.jsonl runs scored with XCOMET: per method and segment, the error spans XCOMET found in the
                    hypothesis, the segment's score, and whether the model's input was cut at its token limit
    .lock           present while a process writes the directory (see :mod:`simul.runs.lock`)

JSON is written with sorted keys and rounded floats. Wall-clock figures live apart: the step timings in
``timings.jsonl`` and the machine in ``run.json``'s ``environment``, so that ``steps.jsonl`` and
``per_stream.jsonl`` of two runs with the same settings are byte-identical and diff cleanly. Readers join
``timings.jsonl`` back onto the steps; run directories written before the split (timings inside
``steps.jsonl``) still load. Each stream's timings are written before its steps, so a stream whose steps
are all in ``steps.jsonl`` has its timings too.

``run.json`` carries a ``status``: ``running`` while decoding, ``interrupted`` when stopped early,
``failed`` when a method from outside simul failed while decoding (``failure`` says how; the streams
finished before are kept and `simul eval --resume` continues), ``scoring_failed`` when every stream was
decoded and written but scoring failed (``scoring_error`` says how; `simul score RUN_DIR` finishes it),
``complete`` only once every stream of every method is written and scored. Nothing treats a run that is not
complete as complete. One process at a time writes a run directory: writers hold its lock.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError, UsageError
from simul.common.files import os_error_message
from simul.common.files import write_atomic as write_atomic
from simul.common.hashing import sha256_file
from simul.common.limits import STEPS, as_float, binary_lines, parse_json
from simul.common.safe_text import excerpt
from simul.decoding.records import StepRecord, StreamResult
from simul.request.method_settings import EXTERNAL, METHOD_NAMES, PLUGIN
from simul.request.methods import Method
from simul.runs.conditions import decoding_differences
from simul.runs.lock import writer_of
from simul.runs.schema import check_per_stream_row, check_results, check_run_json, step_fields, step_record
from simul.streams.format import Stream, dumps_stream, iter_streams

SCHEMA_VERSION = 1
RUN_FILE = "run.json"
STEPS_FILE = "steps.jsonl"
STREAMS_FILE = "streams.jsonl"
PER_STREAM_FILE = "per_stream.jsonl"
ERROR_SPANS_FILE = "error_spans.jsonl"
TIMINGS_FILE = "timings.jsonl"
TIMING_PREFIX = "t_"  # step fields measured in wall-clock time go to TIMINGS_FILE
STEP_KEYS = ("method", "stream", "step")

STATUS_RUNNING = "running"
STATUS_INTERRUPTED = "interrupted"
STATUS_COMPLETE = "complete"
STATUS_SCORING_FAILED = "scoring_failed"  # decoded and written, not scored: `simul score RUN_DIR` finishes it
STATUS_FAILED = "failed"  # a plug-in method failed while decoding; the finished streams are kept (--resume)

RESUME_ADVICE = "Re-run with `simul eval --resume --out DIR` to recompute what is missing"
SCORE_ADVICE = "Every stream was decoded: finish the run with `simul score {path}` once the cause is fixed"
REDO_ADVICE = (
    "The run says it is complete, so --resume will not touch it: run it again with --overwrite "
    "(or restore the directory from a copy)"
)


def dump_json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def step_lines(method_key: str, stream_id: str, record: StepRecord) -> tuple[str, str]:
    """The record's line in steps.jsonl (no wall-clock field) and its line in timings.jsonl."""
    obj = record.to_json()
    obj["method"] = method_key
    obj["stream"] = stream_id
    timing = {k: obj.pop(k) for k in list(obj) if k.startswith(TIMING_PREFIX)}
    timing.update({k: obj[k] for k in STEP_KEYS})
    return (
        json.dumps(obj, ensure_ascii=False, sort_keys=True),
        json.dumps(timing, ensure_ascii=False, sort_keys=True),
    )


StepKey = tuple[str, str, int]


def _timing_key(obj: dict[str, Any]) -> StepKey:
    """(method, stream, step) of a timing record, removed from it; ValueError when a field is not that."""
    method, stream, step = obj.pop("method", None), obj.pop("stream", None), obj.pop("step", None)
    if not isinstance(method, str) or not isinstance(stream, str):
        raise ValueError("fields 'method' and 'stream' must be text")
    if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step < STEPS.value():
        raise ValueError(f"field 'step' must be a whole number from 0 to {STEPS.value() - 1}")
    return method, stream, step


def _seconds(value: Any) -> bool:
    return value is None or (
        isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < float("inf")
    )


def _read_timings(path: Path, strict: bool) -> dict[StepKey, dict[str, Any]]:
    """timings.jsonl by (method, stream, step); a damaged line ends the reading (an error with ``strict``)."""
    timings: dict[StepKey, dict[str, Any]] = {}
    if not path.exists():
        return timings
    with path.open("rb") as handle:
        for number, raw in binary_lines(handle, path):
            try:
                if not raw.endswith(b"\n"):
                    raise ValueError("the line is cut short (the run was interrupted while writing)")
                obj = parse_json(raw.decode("utf-8"), allow_constants=True)
                if not isinstance(obj, dict):
                    raise ValueError("expected a JSON object")
                key = _timing_key(obj)
                if key in timings:
                    raise ValueError(
                        f"a second timing record for method {excerpt(key[0])}, stream {excerpt(key[1])}, "
                        f"step {key[2]} (two processes wrote this run at once)"
                    )
                if any(not k.startswith(TIMING_PREFIX) for k in obj):
                    raise ValueError("a timing record holds fields other than t_*")
                if any(not _seconds(v) for v in obj.values()):
                    raise ValueError("a timing (t_*) must be a finite number of seconds, 0 or more, or null")
            except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
                if strict:
                    raise SimulError(
                        f"{path}:{number}: unreadable timing record ({exc}); the file is damaged"
                    ) from None
                break
            timings[key] = obj
    return timings


@dataclass
class LoadedSteps:
    """steps.jsonl read back: results per method key, in stream order, and the streams complete for all."""

    results: dict[str, list[StreamResult]]
    complete: list[str]
    good_bytes: int  # length of the file prefix that holds complete streams only
    problem: str | None  # why the rest was not usable (a truncated or malformed line), if anything


def read_steps(path: Path, methods: Sequence[Method], strict: bool, fix: str = RESUME_ADVICE) -> LoadedSteps:
    """Read steps.jsonl, joined with timings.jsonl next to it. With ``strict`` any damage is an error naming
    the line and ending with ``fix``; otherwise the damaged tail (an interrupted write) and any stream not
    finished by every method are left out. A step record seen twice (two writers at once) is damage."""
    by_key = {m.key: m for m in methods}
    per_stream: dict[str, dict[str, list[StepRecord]]] = {}
    order: list[str] = []
    line_end: dict[str, int] = {}
    seen: dict[StepKey, int] = {}
    problem = None
    offset = 0
    if not path.exists():
        if strict:
            raise SimulError(f"{path} is missing; the run directory is incomplete")
        return LoadedSteps({k: [] for k in by_key}, [], 0, None)
    timings = _read_timings(path.with_name(TIMINGS_FILE), strict)
    with path.open("rb") as handle:
        for number, raw in binary_lines(handle, path):
            where = f"{path}:{number}"
            try:
                if not raw.endswith(b"\n"):
                    raise ValueError("the line is cut short (the run was interrupted while writing)")
                key, stream_id, obj = step_fields(raw)
                if key not in by_key:
                    raise ValueError(f"method {excerpt(key)} is not one of this run's methods")
                if len(per_stream.get(stream_id, {}).get(key, ())) >= STEPS.value():
                    raise ValueError(f"more than {STEPS.value()} steps for one stream; {STEPS.hint()}")
                step = obj.get("step")
                if not isinstance(step, int):
                    raise ValueError("field 'step' must be a whole number")
                step_key = (key, stream_id, step)
                if step_key in seen:
                    raise ValueError(
                        f"duplicate step record: method {excerpt(key)}, stream {excerpt(stream_id)}, "
                        f"step {step} is also on line {seen[step_key]} "
                        "(two processes wrote this run at once)"
                    )
                seen[step_key] = number
                if "t_prompt" not in obj:  # written since the timing split: join its timings
                    timing = timings.get(step_key)
                    if timing is None:
                        raise ValueError(f"its timings are missing from {TIMINGS_FILE}")
                    obj.update(timing)
                record = step_record(obj)
            except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
                problem = f"{where}: {exc}"
                if strict:
                    raise SimulError(
                        f"{where}: unreadable step record ({exc}); the file is damaged. {fix}"
                    ) from None
                break
            offset += len(raw)
            if stream_id not in per_stream:
                per_stream[stream_id] = {}
                order.append(stream_id)
            per_stream[stream_id].setdefault(key, []).append(record)
            line_end[stream_id] = offset
    complete = []
    good_bytes = 0
    for stream_id in order:
        methods_done = per_stream[stream_id]
        finished = all(
            key in methods_done and methods_done[key] and methods_done[key][-1].final for key in by_key
        )
        if not finished:
            if strict:
                raise SimulError(
                    f"{path}: stream {stream_id!r} is not finished by every method; the run is incomplete. "
                    f"{fix}"
                )
            break
        complete.append(stream_id)
        good_bytes = line_end[stream_id]
    results: dict[str, list[StreamResult]] = {k: [] for k in by_key}
    for stream_id in complete:
        for key, method in by_key.items():
            results[key].append(StreamResult(stream_id, method, per_stream[stream_id][key]))
    return LoadedSteps(results, complete, good_bytes, problem)


def timing_lines(results: Iterable[StreamResult]) -> list[str]:
    return [step_lines(r.method.key, r.stream_id, s)[1] for r in results for s in r.steps]


class RunWriter:
    """Writes a run directory as the run goes."""

    def __init__(self, path: Path, run: dict[str, Any]) -> None:
        self.path = path
        self.run = run
        self._steps = None

    @classmethod
    def create(
        cls,
        path: Path,
        run: dict[str, Any],
        streams: Sequence[Stream],
        overwrite: bool,
        option: str = "--out",
    ) -> RunWriter:
        """Start the run directory ``path`` (``option`` names the command's option for it in messages)."""
        if path.exists() and not path.is_dir():
            raise SimulError(f"{option} {path} exists and is not a directory")
        if (path / RUN_FILE).exists() and not overwrite:
            status = _peek_status(path)
            hint = (
                "pass --resume to continue it"
                if status != STATUS_COMPLETE
                else "pass --overwrite to replace it"
            )
            raise SimulError(
                f"{path} already holds a run ({excerpt(status)}); {hint}, or choose another {option}"
            )
        path.mkdir(parents=True, exist_ok=True)
        for name in (STEPS_FILE, TIMINGS_FILE, PER_STREAM_FILE, ERROR_SPANS_FILE):
            (path / name).unlink(missing_ok=True)
        write_atomic(path / STREAMS_FILE, "".join(dumps_stream(s) + "\n" for s in streams))
        run["config"]["streams"]["evaluated_sha256"] = sha256_file(path / STREAMS_FILE)
        run["status"] = STATUS_RUNNING
        writer = cls(path, run)
        writer.save()
        (path / TIMINGS_FILE).touch()
        (path / STEPS_FILE).touch()
        return writer

    @classmethod
    def resume(
        cls, path: Path, run: dict[str, Any], streams: Sequence[Stream], methods: Sequence[Method]
    ) -> tuple[RunWriter, LoadedSteps]:
        old = load_run_json(path)
        mismatch = _config_mismatch(old.get("config", {}), run["config"])
        if mismatch:
            raise UsageError(
                f"cannot resume {path}: {mismatch} differs from the run being resumed; use the same options, "
                "or start a new run with another --out"
            )
        changes = decoding_differences(old, run)
        if changes:
            listed = "; ".join(
                f"{c.field} was {c.first} when the run started and is {c.second} now ({c.fix})"
                for c in changes
            )
            raise UsageError(
                f"cannot resume {path}: its finished streams were decoded under other conditions: {listed}; "
                "or start a new run with another --out"
            )
        if old.get("status") == STATUS_COMPLETE:
            raise SimulError(
                f"{path} is already complete; nothing to resume (pass --overwrite to run it again)"
            )
        run["config"]["streams"]["evaluated_sha256"] = old["config"]["streams"].get("evaluated_sha256")
        steps_path = path / STEPS_FILE
        loaded = read_steps(steps_path, methods, strict=False)
        # Drop a damaged tail and half-finished streams, so the files hold whole streams only.
        if steps_path.exists() and steps_path.stat().st_size != loaded.good_bytes:
            with steps_path.open("r+b") as handle:
                handle.truncate(loaded.good_bytes)
        kept = [r for rs in zip(*loaded.results.values(), strict=True) for r in rs]
        write_atomic(path / TIMINGS_FILE, "".join(line + "\n" for line in timing_lines(kept)))
        run["status"] = STATUS_RUNNING
        writer = cls(path, run)
        writer.save()
        return writer, loaded

    def append(self, stream_id: str, results: Iterable[StreamResult]) -> None:
        """Add one finished stream: its timings first, then its steps (which make it count as done)."""
        pairs = [step_lines(r.method.key, stream_id, s) for r in results for s in r.steps]
        for name, lines in ((TIMINGS_FILE, [t for _, t in pairs]), (STEPS_FILE, [q for q, _ in pairs])):
            target = self.path / name
            try:
                with target.open("a", encoding="utf-8") as handle:
                    handle.write("\n".join(lines) + "\n")
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError as exc:
                raise SimulError(
                    f"{os_error_message(exc, target)}. The streams finished before are kept: continue with "
                    f"`simul eval --resume --out {self.path}` (same options) once that is fixed"
                ) from None

    def save(self) -> None:
        try:
            write_atomic(self.path / RUN_FILE, dump_json(self.run))
        except SimulError as exc:
            if not (self.path / RUN_FILE).exists():
                raise
            raise SimulError(
                f"{exc}. {RUN_FILE} keeps its last state ({excerpt(_peek_status(self.path))}) and the "
                f"streams finished are kept: continue with `simul eval --resume --out {self.path}` "
                "(same options) once that is fixed"
            ) from None

    def write_per_stream(self, rows: Iterable[Mapping[str, Any]]) -> None:
        write_atomic(
            self.path / PER_STREAM_FILE,
            "".join(json.dumps(dict(r), ensure_ascii=False, sort_keys=True) + "\n" for r in rows),
        )

    def write_error_spans(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """XCOMET's error spans (simul.metrics.scoring.Scored.error_span_rows); a run scored without XCOMET
        has no such file (one left by an earlier scoring is removed)."""
        target = self.path / ERROR_SPANS_FILE
        if not rows:
            target.unlink(missing_ok=True)
            return
        write_atomic(
            target, "".join(json.dumps(dict(r), ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
        )


SEVERITIES = ("minor", "major", "critical")


def _check_span_line(obj: Any) -> None:
    """One line of error_spans.jsonl, checked (ValueError naming the field)."""
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object")
    for key in ("method", "stream", "hypothesis"):
        if not isinstance(obj.get(key), str):
            raise ValueError(f"field {key!r} must be text")
    segment = obj.get("segment")
    if segment is not None and (not isinstance(segment, int) or isinstance(segment, bool) or segment < 0):
        raise ValueError("field 'segment' must be a whole number >= 0 or null")
    if not isinstance(obj.get("truncated"), bool):
        raise ValueError("field 'truncated' must be true or false")
    score = obj.get("xcomet")  # the segment's XCOMET score, which `simul show` prints beside its spans
    if score is not None and not math.isfinite(as_float(score)):
        raise ValueError("field 'xcomet' must be a finite number or null")
    spans = obj.get("spans")
    if not isinstance(spans, list):
        raise ValueError("field 'spans' must be a list")
    length = len(obj["hypothesis"])
    for span in spans:
        if not isinstance(span, dict) or span.get("severity") not in SEVERITIES:
            raise ValueError(f"a span must be an object with a 'severity' of {', '.join(SEVERITIES)}")
        start, end = span.get("start"), span.get("end")
        if (
            not (isinstance(start, int) and isinstance(end, int))
            or isinstance(start, bool)
            or isinstance(end, bool)
        ):
            raise ValueError("a span's 'start' and 'end' must be whole numbers")
        if not 0 <= start <= end <= length:
            raise ValueError(
                f"a span's offsets {start}-{end} are outside its hypothesis ({length} characters)"
            )


def read_error_spans(path: Path) -> list[dict[str, Any]]:
    """error_spans.jsonl of a run directory (empty when it has none); a damaged line is an error naming it."""
    target = path / ERROR_SPANS_FILE
    if not target.exists():
        return []
    lines = []
    with target.open("rb") as handle:
        for number, raw in binary_lines(handle, target):
            try:
                obj = parse_json(raw.decode("utf-8"), allow_constants=False)
                _check_span_line(obj)
            except (ValueError, UnicodeDecodeError) as exc:
                raise SimulError(
                    f"{target}:{number}: unreadable error-span line ({exc}); rescore the run with "
                    f"`simul score {path} --comet-model MODEL --update` to write it again"
                ) from None
            lines.append(obj)
    return lines


PerStreamRows = dict[tuple[str, str], dict[str, Any]]


def read_per_stream(path: Path) -> PerStreamRows:
    """per_stream.jsonl of a run directory (what :meth:`RunWriter.write_per_stream` wrote), by (method key,
    stream id); empty when the run has none. Every row is checked (simul.runs.schema.check_per_stream_row),
    and a second row for the same method and stream is refused: a bad row is an error naming the file, the
    line and how to write the file again."""
    target = path / PER_STREAM_FILE
    rows: PerStreamRows = {}
    if not target.exists():
        return rows
    fix = (
        f"write it again from the run's steps with `simul score {path} --update` (with the --comet-model "
        "and --bleurt-model the run was scored with)"
    )
    with target.open("rb") as handle:
        for number, raw in binary_lines(handle, target):
            try:
                row = parse_json(raw.decode("utf-8"), allow_constants=True)
                check_per_stream_row(row)
            except ValueError as exc:  # JSONProblem, RecordError and UnicodeDecodeError are ValueErrors
                raise SimulError(f"{target}:{number}: unreadable per-stream row ({exc}); {fix}") from None
            key = (row["method"], row["stream"])
            if key in rows:
                raise SimulError(
                    f"{target}:{number}: a second row for method {excerpt(key[0])}, stream "
                    f"{excerpt(key[1])}; {fix}"
                )
            rows[key] = row
    return rows


def run_status(path: Path) -> str | None:
    """A run directory's status as its run.json says, without checking the rest; None when unreadable."""
    if not (path / RUN_FILE).is_file():
        return None
    status = _peek_status(path)
    return None if status == "unreadable" else status


def _peek_status(path: Path) -> str:
    try:
        run = parse_json((path / RUN_FILE).read_text(encoding="utf-8"), allow_constants=True)
        return str(run.get("status", "unknown"))
    except (OSError, ValueError, AttributeError):
        return "unreadable"


# Parts of the config that must be identical for a run to be resumed.
_RESUME_KEYS = (
    "methods",
    "model_sha256",
    "template",
    "n_ctx",
    "max_len_ratio",
    "max_len_slack",
    "ne_tokenizer",
    "fuse",
    "verify_chunk",
    "shard",
    "longform",
    "draft_model_sha256",
    "exact",
)


def _config_mismatch(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    if old.get("streams", {}).get("sha256") != new.get("streams", {}).get("sha256"):
        return "the streams file"
    if old.get("streams", {}).get("limit") != new.get("streams", {}).get("limit"):
        return "--limit"
    for key in _RESUME_KEYS:
        if old.get(key) != new.get(key):
            return key.replace("_", " ")
    return None


def load_run_json(path: Path) -> dict[str, Any]:
    """run.json of a run directory (or the file itself), with clear errors."""
    run_file = path / RUN_FILE if path.is_dir() else path
    if not path.exists():
        raise SimulError(f"run directory {path} does not exist")
    if not run_file.exists():
        raise SimulError(f"{path} is not a run directory: it has no {RUN_FILE}")
    try:
        obj = parse_json(run_file.read_text(encoding="utf-8"), allow_constants=True)
    except (OSError, ValueError) as exc:
        raise SimulError(f"{run_file} is not readable JSON ({exc})") from None
    if not isinstance(obj, dict) or obj.get("schema_version") != SCHEMA_VERSION:
        version = obj.get("schema_version") if isinstance(obj, dict) else "?"
        raise SimulError(
            f"{run_file} has schema version {excerpt(str(version))}; "
            f"this simul reads version {SCHEMA_VERSION}"
        )
    problem = _run_json_problem(obj)
    if problem:
        raise SimulError(
            f"{run_file}: {problem}; the file is damaged or was not written by simul "
            "(run the evaluation again with --overwrite)"
        )
    check_run_json(obj, run_file)
    return obj


def _run_json_problem(run: Mapping[str, Any]) -> str | None:
    """What is missing from a run.json for the readers (score, diff, show, export, resume), if anything."""
    config = run.get("config")
    if not isinstance(config, dict):
        return "it has no 'config' object"
    for key, kind in (("streams", dict), ("model", dict), ("methods", list), ("ne_tokenizer", str)):
        if not isinstance(config.get(key), kind):
            return f"'config' has no valid {key!r}"
    for index, method in enumerate(config["methods"]):
        if not isinstance(method, dict) or method.get("name") not in (*METHOD_NAMES, EXTERNAL, PLUGIN):
            names = ", ".join((*METHOD_NAMES, EXTERNAL, PLUGIN))
            return f"config method {index + 1} has no valid 'name' (one of {names})"
    scored = run.get("methods")
    if scored is not None:
        if not isinstance(scored, list):
            return "'methods' is not a list"
        for index, method in enumerate(scored):
            if not isinstance(method, dict) or not all(k in method for k in ("name", "key", "label")):
                return f"scored method {index + 1} lacks 'name', 'key' or 'label'"
            if not isinstance(method.get("metrics"), dict):
                return f"scored method {index + 1} has no 'metrics' object"
    return None


def _scoring_error(run: Mapping[str, Any]) -> str:
    """The one-line reason a ``scoring_failed`` run records (``scoring_error.message``)."""
    error = run.get("scoring_error")
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else "no reason recorded"


@dataclass
class LoadedRun:
    path: Path
    run: dict[str, Any]
    methods: list[Method]
    streams: dict[str, Stream]
    results: dict[str, list[StreamResult]]
    complete: list[str] = field(default_factory=list)  # ids of the streams finished by every method
    being_written: str | None = None  # who is writing the directory now (only with allow_incomplete)


def refuse_if_written(path: Path) -> None:
    """A reader that needs a finished run refuses a directory another process is writing."""
    holder = writer_of(path)
    if holder is not None:
        raise SimulError(f"{path} is being written by {holder}; wait until it finishes, then try again")


def load_run(
    path: Path, allow_incomplete: bool = False, can_allow: bool = True, unscored: bool = False
) -> LoadedRun:
    """Read a whole run directory back; a run that is not complete is refused unless asked for.

    A run another process is writing is refused too, unless ``allow_incomplete`` (then ``being_written``
    says who, for a warning). ``can_allow`` says whether the command has --allow-incomplete to suggest.
    ``unscored``: a run whose scoring failed is read like a complete one (`simul score` finishes it)."""
    holder = writer_of(path) if path.is_dir() else None
    if holder is not None and not allow_incomplete:
        refuse_if_written(path)
    run = load_run_json(path)
    status = run.get("status")
    decoded = status == STATUS_COMPLETE or (unscored and status == STATUS_SCORING_FAILED)
    if status == STATUS_SCORING_FAILED and not decoded and not allow_incomplete:
        raise SimulError(
            f"{path} is not a complete run: its scoring failed ({excerpt(_scoring_error(run))}). "
            + SCORE_ADVICE.format(path=path)
        )
    if not decoded and not allow_incomplete:
        alternative = " or pass --allow-incomplete" if can_allow else ""
        raise SimulError(
            f"{path} is not a complete run (status: {excerpt(str(status))}); finish it with "
            f"`simul eval --resume --out {path}` (same options as the run){alternative}"
        )
    try:
        methods = [Method.from_json(m) for m in run["config"]["methods"]]
    except (SimulError, ValueError, TypeError) as exc:
        raise SimulError(f"{path / RUN_FILE}: a method in 'config' is invalid ({exc})") from None
    streams_path = path / STREAMS_FILE
    if not streams_path.exists():
        raise SimulError(f"{streams_path} is missing; the run directory is incomplete")
    streams = {s.id: s for s in iter_streams(streams_path)}
    fix = REDO_ADVICE if status == STATUS_COMPLETE else RESUME_ADVICE
    loaded = read_steps(path / STEPS_FILE, methods, strict=not allow_incomplete, fix=fix)
    unknown = [sid for sid in loaded.complete if sid not in streams]
    if unknown:
        raise SimulError(
            f"{path / STEPS_FILE} has stream {excerpt(unknown[0])}, which is not in {STREAMS_FILE}"
        )
    check_results(loaded.results, streams, path / STEPS_FILE)
    if decoded and len(loaded.complete) != len(streams) and not allow_incomplete:
        raise SimulError(
            f"{path} says it is {'complete' if status == STATUS_COMPLETE else 'decoded'} but {STEPS_FILE} "
            f"holds {len(loaded.complete)} of {len(streams)} streams. {fix}"
        )
    return LoadedRun(
        path=path,
        run=run,
        methods=methods,
        streams=streams,
        results=loaded.results,
        complete=loaded.complete,
        being_written=holder,
    )

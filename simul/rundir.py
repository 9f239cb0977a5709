"""The run directory: everything needed to trust, rescore and compare a run.

    run.json        schema version, tool version, resolved config, hashes, environment, signatures, metrics
    streams.jsonl   the streams that were evaluated (references included), so the directory stands alone
    steps.jsonl     one line per method, stream and step, written as each stream finishes
    per_stream.jsonl  per method and stream: sentence chrF, COMET, erasure, latency (for paired comparisons)

JSON is written with sorted keys and rounded floats; wall-clock figures live in their own fields
(``t_prompt``, ``t_gen``; ``environment``) so two runs diff cleanly. ``run.json`` carries a ``status``:
``running`` while decoding, ``interrupted`` when stopped early, ``complete`` only once every stream of every
method is written and scored. Nothing treats a run that is not complete as complete.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simul.decoding import StepRecord, StreamResult
from simul.errors import SimulError
from simul.hashing import sha256_file
from simul.limits import STEPS, binary_lines, parse_json
from simul.methods import Method
from simul.run_schema import check_results, check_run_json, step_from_line
from simul.safe_text import excerpt
from simul.streams.format import Stream, dumps_stream, iter_streams

SCHEMA_VERSION = 1
RUN_FILE = "run.json"
STEPS_FILE = "steps.jsonl"
STREAMS_FILE = "streams.jsonl"
PER_STREAM_FILE = "per_stream.jsonl"

STATUS_RUNNING = "running"
STATUS_INTERRUPTED = "interrupted"
STATUS_COMPLETE = "complete"


def dump_json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def step_line(method_key: str, stream_id: str, record: StepRecord) -> str:
    obj = record.to_json()
    obj["method"] = method_key
    obj["stream"] = stream_id
    return json.dumps(obj, ensure_ascii=False, sort_keys=True)


@dataclass
class LoadedSteps:
    """steps.jsonl read back: results per method key, in stream order, and the streams complete for all."""

    results: dict[str, list[StreamResult]]
    complete: list[str]
    good_bytes: int  # length of the file prefix that holds complete streams only
    problem: str | None  # why the rest was not usable (a truncated or malformed line), if anything


def read_steps(path: Path, methods: Sequence[Method], strict: bool) -> LoadedSteps:
    """Read steps.jsonl. With ``strict`` any damage is an error naming the line; otherwise the damaged tail
    (an interrupted write) and any stream not finished by every method are left out."""
    by_key = {m.key: m for m in methods}
    per_stream: dict[str, dict[str, list[StepRecord]]] = {}
    order: list[str] = []
    line_end: dict[str, int] = {}
    problem = None
    offset = 0
    if not path.exists():
        if strict:
            raise SimulError(f"{path} is missing; the run directory is incomplete")
        return LoadedSteps({k: [] for k in by_key}, [], 0, None)
    with path.open("rb") as handle:
        for number, raw in binary_lines(handle, path):
            where = f"{path}:{number}"
            try:
                if not raw.endswith(b"\n"):
                    raise ValueError("the line is cut short (the run was interrupted while writing)")
                key, stream_id, record = step_from_line(raw)
                if key not in by_key:
                    raise ValueError(f"method {excerpt(key)} is not one of this run's methods")
                if len(per_stream.get(stream_id, {}).get(key, ())) >= STEPS.value():
                    raise ValueError(f"more than {STEPS.value()} steps for one stream; {STEPS.hint()}")
            except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
                problem = f"{where}: {exc}"
                if strict:
                    raise SimulError(
                        f"{where}: unreadable step record ({exc}); the file is damaged. Re-run with "
                        "`simul eval --resume --out DIR` to recompute what is missing"
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
                    "Re-run with `simul eval --resume --out DIR`"
                )
            break
        complete.append(stream_id)
        good_bytes = line_end[stream_id]
    results: dict[str, list[StreamResult]] = {k: [] for k in by_key}
    for stream_id in complete:
        for key, method in by_key.items():
            results[key].append(StreamResult(stream_id, method, per_stream[stream_id][key]))
    return LoadedSteps(results, complete, good_bytes, problem)


class RunWriter:
    """Writes a run directory as the run goes."""

    def __init__(self, path: Path, run: dict[str, Any]) -> None:
        self.path = path
        self.run = run
        self._steps = None

    @classmethod
    def create(cls, path: Path, run: dict[str, Any], streams: Sequence[Stream], overwrite: bool) -> RunWriter:
        if path.exists() and not path.is_dir():
            raise SimulError(f"--out {path} exists and is not a directory")
        if (path / RUN_FILE).exists() and not overwrite:
            status = _peek_status(path)
            hint = (
                "pass --resume to continue it"
                if status != STATUS_COMPLETE
                else "pass --overwrite to replace it"
            )
            raise SimulError(f"{path} already holds a run ({status}); {hint}, or choose another --out")
        path.mkdir(parents=True, exist_ok=True)
        for name in (STEPS_FILE, PER_STREAM_FILE):
            (path / name).unlink(missing_ok=True)
        write_atomic(path / STREAMS_FILE, "".join(dumps_stream(s) + "\n" for s in streams))
        run["config"]["streams"]["evaluated_sha256"] = sha256_file(path / STREAMS_FILE)
        run["status"] = STATUS_RUNNING
        writer = cls(path, run)
        writer.save()
        (path / STEPS_FILE).touch()
        return writer

    @classmethod
    def resume(
        cls, path: Path, run: dict[str, Any], streams: Sequence[Stream], methods: Sequence[Method]
    ) -> tuple[RunWriter, LoadedSteps]:
        old = load_run_json(path)
        mismatch = _config_mismatch(old.get("config", {}), run["config"])
        if mismatch:
            raise SimulError(
                f"cannot resume {path}: {mismatch} differs from the run being resumed; use the same options, "
                "or start a new run with another --out"
            )
        if old.get("status") == STATUS_COMPLETE:
            raise SimulError(
                f"{path} is already complete; nothing to resume (pass --overwrite to run it again)"
            )
        run["config"]["streams"]["evaluated_sha256"] = old["config"]["streams"].get("evaluated_sha256")
        steps_path = path / STEPS_FILE
        loaded = read_steps(steps_path, methods, strict=False)
        # Drop a damaged tail and half-finished streams, so the file holds whole streams only.
        if steps_path.exists() and steps_path.stat().st_size != loaded.good_bytes:
            with steps_path.open("r+b") as handle:
                handle.truncate(loaded.good_bytes)
        run["status"] = STATUS_RUNNING
        writer = cls(path, run)
        writer.save()
        return writer, loaded

    def append(self, stream_id: str, results: Iterable[StreamResult]) -> None:
        lines = [step_line(r.method.key, stream_id, s) for r in results for s in r.steps]
        with (self.path / STEPS_FILE).open("a", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def save(self) -> None:
        write_atomic(self.path / RUN_FILE, dump_json(self.run))

    def write_per_stream(self, rows: Iterable[Mapping[str, Any]]) -> None:
        write_atomic(
            self.path / PER_STREAM_FILE,
            "".join(json.dumps(dict(r), ensure_ascii=False, sort_keys=True) + "\n" for r in rows),
        )


def _peek_status(path: Path) -> str:
    try:
        run = parse_json((path / RUN_FILE).read_text(encoding="utf-8"), allow_constants=True)
        return excerpt(str(run.get("status", "unknown")))
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
    check_run_json(obj, run_file)
    return obj


@dataclass
class LoadedRun:
    path: Path
    run: dict[str, Any]
    methods: list[Method]
    streams: dict[str, Stream]
    results: dict[str, list[StreamResult]]


def load_run(path: Path, allow_incomplete: bool = False) -> LoadedRun:
    """Read a whole run directory back; a run that is not complete is refused unless asked for."""
    run = load_run_json(path)
    status = run.get("status")
    if status != STATUS_COMPLETE and not allow_incomplete:
        raise SimulError(
            f"{path} is not a complete run (status: {status}); finish it with "
            f"`simul eval --resume --out {path}` "
            "or pass --allow-incomplete"
        )
    methods = [Method.from_json(m) for m in run["config"]["methods"]]
    streams_path = path / STREAMS_FILE
    if not streams_path.exists():
        raise SimulError(f"{streams_path} is missing; the run directory is incomplete")
    streams = {s.id: s for s in iter_streams(streams_path)}
    loaded = read_steps(path / STEPS_FILE, methods, strict=not allow_incomplete)
    unknown = [sid for sid in loaded.complete if sid not in streams]
    if unknown:
        raise SimulError(
            f"{path / STEPS_FILE} has stream {excerpt(unknown[0])}, which is not in {STREAMS_FILE}"
        )
    check_results(loaded.results, streams, path / STEPS_FILE)
    if status == STATUS_COMPLETE and len(loaded.complete) != len(streams):
        raise SimulError(
            f"{path} says it is complete but {STEPS_FILE} holds {len(loaded.complete)} "
            f"of {len(streams)} streams"
        )
    return LoadedRun(path=path, run=run, methods=methods, streams=streams, results=loaded.results)

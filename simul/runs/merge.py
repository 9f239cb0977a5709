"""Merge shard runs (``--shard K/N``) into one run directory that reads as if one process had decoded it.

The shards must belong together: the same stream file (SHA-256) and ``--limit``, the same model (SHA-256),
the same configuration apart from what is per machine (paths), the same simul version, the same decoding
conditions (thread count, llama-cpp-python version and CPU instruction sets: simul.runs.conditions), the
same metric signatures, one shard count, disjoint stream sets that cover the whole set, and every shard
complete. Anything else is refused with every reason named (:class:`MergeRefused`, exit 2).

The merged directory holds the streams and their step records in the single-process order, and is scored
from them with the same code as `simul eval`, so every quality figure equals a single-process run's. Speed is
aggregated from the steps (TPS = all output tokens / all generation seconds), never averaged across shards;
each stream's methods ran on one worker, so RT and SSBD time the same streams on the same machine. COMET is
computed here, once, over all streams. Each shard's machine and its own timing figures are kept under
``shards`` in ``run.json``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simul import __version__
from simul.common.errors import SimulError, UsageError
from simul.decoding.records import StreamResult
from simul.machine.environment import now
from simul.metrics.comet import load_comet
from simul.metrics.intervals import run_intervals
from simul.metrics.registry import DRAFT_MODEL_METRICS, METRICS
from simul.metrics.scoring import DEFAULT_RESEGMENT, Scored, higher_is_better, score
from simul.runs.conditions import decoding_differences
from simul.runs.directory import (
    RUN_FILE,
    SCHEMA_VERSION,
    STATUS_COMPLETE,
    LoadedRun,
    RunWriter,
    load_run,
    load_run_json,
)
from simul.runs.evaluation import EvalOutcome, _attach_scores
from simul.runs.shard import Shard, shard_of
from simul.streams.format import Stream

# Configuration that legitimately differs between the machines of one run, and what the merge rewrites.
PER_SHARD_CONFIG = frozenset(
    {
        "shard",
        "threads",
        "model.path",
        "streams.path",
        "streams.count",
        "streams.evaluated_sha256",
        "draft_model.path",
        "draft_model.threads",
    }
)  # threads: compared by simul.runs.conditions, with the other decoding conditions; the draft model's own
# threads may differ as the target's do (its file is compared by SHA-256, below)
SIGNATURE_KEYS = ("ne_tokenizer", "bleu", "chrf")


class MergeRefused(UsageError):
    """The shards do not make one run; ``reasons`` says why (the CLI exits 2)."""

    def __init__(self, reasons: Sequence[str]) -> None:
        super().__init__("cannot merge: " + "; ".join(reasons))
        self.reasons = list(reasons)


@dataclass
class ShardRun:
    path: Path
    run: dict[str, Any]
    shard: Shard
    positions: list[int]
    total: int
    loaded: LoadedRun | None = None  # read only once every shard passed the checks on run.json

    @property
    def name(self) -> str:
        return f"{self.path} (shard {self.shard.label})"


@dataclass
class MergeOutcome:
    outcome: EvalOutcome
    shards: list[ShardRun]


def read_shard(path: Path) -> ShardRun:
    """run.json of one shard directory, refused when it is not a finished shard run."""
    try:
        run = load_run_json(path)
    except SimulError as exc:
        raise MergeRefused([str(exc)]) from None
    info = run.get("config", {}).get("shard")
    if not isinstance(info, dict):
        raise MergeRefused(
            [f"{path} is not a shard run (its config has no shard); shards are written by --shard K/N"]
        )
    try:
        shard = Shard(int(info["index"]), int(info["count"]))
        positions = [int(p) for p in info["positions"]]
        total = int(info["streams_total"])
    except (KeyError, TypeError, ValueError, UsageError) as exc:
        raise MergeRefused([f"{path / RUN_FILE}: unreadable config.shard ({exc})"]) from None
    return ShardRun(path=path, run=run, shard=shard, positions=positions, total=total)


def check_shards(shards: Sequence[ShardRun]) -> list[str]:
    """Every reason why these shards are not one complete run (empty when they are)."""
    reasons: list[str] = []
    for s in shards:
        status = s.run.get("status")
        if status != STATUS_COMPLETE:
            done = s.run.get("streams_done")
            progress = f", {done} of {len(s.positions)} streams" if done is not None else ""
            reasons.append(
                f"{s.name} is not complete (status {status}{progress}); finish it by running its command "
                "again with --resume"
            )
    first = shards[0]
    counts = sorted({s.shard.count for s in shards})
    if len(counts) > 1:
        listed = ", ".join(f"{s.path} is {s.shard.label}" for s in shards)
        reasons.append(f"the shards were cut into different numbers of shards ({listed})")
    seen: dict[int, ShardRun] = {}
    for s in shards:
        if s.shard.index in seen:
            reasons.append(f"shard {s.shard.label} is given twice: {seen[s.shard.index].path} and {s.path}")
        seen.setdefault(s.shard.index, s)
    for s in shards[1:]:
        reasons += _differences(first, s)
    if reasons:
        return reasons
    covered: dict[int, ShardRun] = {}
    for s in shards:
        for p in s.positions:
            if p in covered:
                reasons.append(f"{covered[p].name} and {s.name} both hold stream number {p + 1}")
                break
            covered[p] = s
    missing = first.total - len(covered)
    if missing > 0 and not reasons:
        absent = [k for k in range(1, first.shard.count + 1) if k not in seen]
        which = ", ".join(f"{k}/{first.shard.count}" for k in absent) or "none"
        reasons.append(
            f"{missing} of {first.total} streams are in no shard given (missing shards: {which}); "
            "pass every shard's run directory"
        )
    return reasons


def _differences(a: ShardRun, b: ShardRun) -> list[str]:
    out = []
    ca, cb = a.run.get("config", {}), b.run.get("config", {})
    sa, sb = ca.get("streams", {}), cb.get("streams", {})
    if sa.get("sha256") != sb.get("sha256"):
        out.append(
            f"different stream files: {a.name} has {sa.get('path')} (sha256 {str(sa.get('sha256'))[:12]}), "
            f"{b.name} has {sb.get('path')} (sha256 {str(sb.get('sha256'))[:12]})"
        )
    if ca.get("model_sha256") != cb.get("model_sha256"):
        out.append(
            f"different models: {a.name} has {ca.get('model', {}).get('file')} "
            f"(sha256 {str(ca.get('model_sha256'))[:12]}), {b.name} has {cb.get('model', {}).get('file')} "
            f"(sha256 {str(cb.get('model_sha256'))[:12]})"
        )
    if ca.get("draft_model_sha256") != cb.get("draft_model_sha256"):
        out.append(
            f"different draft models: {a.name} has {ca.get('draft_model', {}).get('file')} "
            f"(sha256 {str(ca.get('draft_model_sha256'))[:12]}), {b.name} has "
            f"{cb.get('draft_model', {}).get('file')} (sha256 {str(cb.get('draft_model_sha256'))[:12]})"
        )
    if out:
        return out
    if a.total != b.total:
        out.append(f"different stream sets: {a.name} is cut from {a.total} streams, {b.name} from {b.total}")
    fa, fb = _flatten(ca), _flatten(cb)
    for key in sorted(fa.keys() | fb.keys()):
        if key in PER_SHARD_CONFIG or key.split(".")[0] in PER_SHARD_CONFIG:
            continue
        if fa.get(key) != fb.get(key):
            va, vb = _short(fa.get(key)), _short(fb.get(key))
            out.append(f"different config.{key}: {va} in {a.name}, {vb} in {b.name}")
    va, vb = a.run.get("tool", {}).get("version"), b.run.get("tool", {}).get("version")
    if va != vb:
        out.append(f"different tool.version: {va} in {a.name}, {vb} in {b.name}")
    for change in decoding_differences(a.run, b.run):
        out.append(
            f"different {change.field}: {change.first} in {a.name}, {change.second} in {b.name} "
            f"({change.fix} for every shard)"
        )
    sig_a, sig_b = a.run.get("signatures", {}), b.run.get("signatures", {})
    for key in SIGNATURE_KEYS:
        if sig_a.get(key) != sig_b.get(key):
            out.append(
                f"different {key} signature: {sig_a.get(key)} in {a.name}, {sig_b.get(key)} in {b.name}"
            )
    return out


def _flatten(obj: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def merge_shards(
    paths: Sequence[Path],
    out: Path,
    overwrite: bool = False,
    comet_model: str | None = None,
    comet_batch_size: int | None = None,
    require_comet: bool = False,
    on_comet_loading: Callable[[], None] | None = None,
) -> MergeOutcome:
    """Check the shards, write the merged run directory to ``out`` and score it (COMET included)."""
    if not paths:
        raise UsageError("simul merge needs at least one shard directory")
    resolved = [p.resolve() for p in paths]
    if out.resolve() in resolved:
        raise UsageError(f"the merged run cannot be written into a shard directory ({out})")
    shards = [read_shard(p) for p in paths]
    reasons = check_shards(shards)
    if reasons:
        raise MergeRefused(reasons)
    for s in shards:
        try:
            s.loaded = load_run(s.path)
        except SimulError as exc:
            raise MergeRefused([str(exc)]) from None
        reasons += _stream_check(s)
    if reasons:
        raise MergeRefused(reasons)

    first = shards[0]
    config = copy.deepcopy(first.run["config"])
    comet_name = comet_model if comet_model is not None else str(config.get("comet_model", "none"))
    batch = comet_batch_size or int(config.get("comet_batch_size", 16))
    config["comet_model"] = comet_name
    config["comet_batch_size"] = batch
    comet = None
    reason: str | None = None
    if require_comet:
        comet, reason = load_comet(comet_name, batch)
        if comet is None:
            raise SimulError(f"COMET is required (--require-comet) but unavailable: {reason}")

    # The single-process order: every stream at its position in the full set.
    methods = first.loaded.methods if first.loaded else []
    placed: dict[int, tuple[Stream, list[StreamResult]]] = {}
    for s in shards:
        assert s.loaded is not None
        by_key = {key: {r.stream_id: r for r in rs} for key, rs in s.loaded.results.items()}
        for position, (sid, stream) in zip(s.positions, s.loaded.streams.items(), strict=True):
            placed[position] = (stream, [by_key[m.key][sid] for m in methods])
    streams = [placed[p][0] for p in sorted(placed)]
    results: dict[str, list[StreamResult]] = {
        m.key: [placed[p][1][i] for p in sorted(placed)] for i, m in enumerate(methods)
    }

    del config["shard"]
    config["streams"].pop("total", None)
    config["streams"]["count"] = len(streams)
    run: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "simul", "version": first.run.get("tool", {}).get("version", __version__)},
        "config": config,
        "environment": _merged_environment(shards),
        "higher_is_better": higher_is_better(),
        "shards": [_shard_summary(s) for s in sorted(shards, key=lambda s: s.shard.index)],
    }
    writer = RunWriter.create(out, run, streams, overwrite=overwrite)
    stream_map = {st.id: st for st in streams}
    for i, stream in enumerate(streams):
        writer.append(stream.id, [results[m.key][i] for m in methods])
    if comet is None and not require_comet:
        if on_comet_loading:
            on_comet_loading()
        comet, reason = load_comet(comet_name, batch)
    scored: Scored = score(
        methods,
        results,
        stream_map,
        config["ne_tokenizer"],
        [comet],
        reason,
        resegment=config.get("resegment", DEFAULT_RESEGMENT),
    )
    run["status"] = STATUS_COMPLETE
    run["streams_done"] = len(streams)
    run["environment"]["finished"] = now()
    _attach_scores(run, scored)
    run["speed_intervals"] = run_intervals(methods, [results])
    writer.run = run
    writer.write_per_stream(scored.per_stream_rows())
    writer.write_error_spans(scored.error_span_rows())
    writer.save()
    outcome = EvalOutcome(run, scored, True, len(streams), len(streams), out)
    return MergeOutcome(outcome=outcome, shards=shards)


def _stream_check(s: ShardRun) -> list[str]:
    """The shard's streams are the ones its config says it holds (guards against edited directories)."""
    assert s.loaded is not None
    ids = list(s.loaded.streams)
    if len(ids) != len(s.positions):
        return [f"{s.name} holds {len(ids)} streams but its config lists {len(s.positions)} positions"]
    strangers = [sid for sid in ids if shard_of(sid, s.shard.count) != s.shard.index]
    if strangers:
        return [
            f"{s.name} holds stream {strangers[0]!r}, which belongs to shard "
            f"{shard_of(strangers[0], s.shard.count)}/{s.shard.count}"
        ]
    return []


def _merged_environment(shards: Sequence[ShardRun]) -> dict[str, Any]:
    """Facts shared by every shard's machine; those that differ are marked and kept per shard."""
    envs = [s.run.get("environment", {}) for s in shards]
    keys = sorted(set().union(*envs) - {"started", "finished", "stopped"})
    merged: dict[str, Any] = {}
    for key in keys:
        values = [e.get(key) for e in envs]
        merged[key] = values[0] if all(v == values[0] for v in values) else "mixed (see shards)"
    usage = _merged_cpu_usage([e.get("cpu_usage") for e in envs])
    if usage is not None:
        merged["cpu_usage"] = usage
    starts = [str(e["started"]) for e in envs if e.get("started")]
    if starts:
        merged["started"] = min(starts)
    merged["merged"] = now()
    return merged


def _merged_cpu_usage(usages: Sequence[Any]) -> dict[str, Any] | None:
    """Per method, the shard records of CPU use (simul.machine.cpu_usage) in a list, and unreliable if any
    shard's timing was: a merged speed figure is only as good as its worst shard."""
    if not all(isinstance(u, dict) for u in usages) or not usages:
        return None
    threads = {u.get("threads") for u in usages}
    methods: dict[str, Any] = {}
    for u in usages:
        for key, record in (u.get("methods") or {}).items():
            if not isinstance(record, dict):
                continue
            entry = methods.setdefault(key, {**record, "reliable": True, "shards": []})
            entry["shards"].append(record)
            if record.get("reliable") is False:
                entry.update({**record, "reliable": False, "shards": entry["shards"]})
    return {"threads": threads.pop() if len(threads) == 1 else None, "methods": methods}


def _shard_summary(s: ShardRun) -> dict[str, Any]:
    """What a shard ran on and how fast: its machine and its own timing figures per method."""
    config = s.run.get("config", {})
    timing = {
        m["key"]: {
            **{
                name: m["metrics"].get(name)
                for name, info in METRICS.items()
                if info.timing and (name in m["metrics"] or name not in DRAFT_MODEL_METRICS)
            },
            **{k: m.get("counts", {}).get(k) for k in ("gen_seconds", "prompt_seconds", "output_tokens")},
        }
        for m in s.run.get("methods", [])
    }
    return {
        "index": s.shard.index,
        "count": s.shard.count,
        "path": str(s.path),
        "streams": len(s.positions),
        "threads": config.get("threads"),
        "model_path": config.get("model", {}).get("path"),
        "environment": s.run.get("environment", {}),
        "timing": timing,
    }

"""One evaluation: decode streams with a set of methods on one model, write the run, score it.

`simul eval`, `simul sweep` and `simul bench` all go through here, so their numbers come from one code path.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simul import __version__
from simul.decoding import StepRecord, StreamResult
from simul.engine import Engine, EngineSettings
from simul.environment import environment, now
from simul.errors import SimulError
from simul.hashing import sha256_file
from simul.methods import Method
from simul.metrics.comet import CometScorer, load_comet
from simul.metrics.tokenizers import resolve_ne_tokenizer
from simul.rundir import (
    SCHEMA_VERSION,
    STATUS_COMPLETE,
    STATUS_INTERRUPTED,
    RunWriter,
)
from simul.scoring import Scored, higher_is_better, score
from simul.streams.format import Stream, read_streams


@dataclass
class EvalRequest:
    streams_path: Path
    methods: list[Method]
    engine: EngineSettings = field(default_factory=EngineSettings)
    limit: int | None = None
    out: Path | None = None
    resume: bool = False
    overwrite: bool = False
    ne_tokenizer: str = "auto"
    comet_model: str = "Unbabel/wmt22-comet-da"
    comet_batch_size: int = 16
    require_comet: bool = False


@dataclass
class EvalOutcome:
    run: dict[str, Any]
    scored: Scored
    complete: bool
    streams_done: int
    streams_total: int
    run_dir: Path | None


ProgressHook = Callable[[int, int], None]  # (done, total)


@dataclass
class Throughput:
    """Evaluation throughput of this process: updates and output tokens per second of wall time.

    Under ``parallel`` N > 1 this is the figure that matters; per-update times are then batched (each
    update shares its forward passes with other streams) and are not single-user latencies.
    """

    parallel: int
    started: float = field(default_factory=time.perf_counter)
    updates: int = 0
    output_tokens: int = 0
    streams: int = 0

    def add(self, results: list[StreamResult]) -> None:
        self.streams += 1
        for result in results:
            self.updates += len(result.steps)
            self.output_tokens += sum(len(s.output_ids) for s in result.steps)

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started

    @property
    def updates_per_second(self) -> float:
        elapsed = self.seconds
        return self.updates / elapsed if elapsed > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        elapsed = self.seconds
        return {
            "parallel": self.parallel,
            "streams": self.streams,
            "wall_seconds": round(elapsed, 3),
            "updates": self.updates,
            "output_tokens": self.output_tokens,
            "updates_per_second": round(self.updates / elapsed, 3) if elapsed > 0 else 0.0,
            "output_tokens_per_second": round(self.output_tokens / elapsed, 3) if elapsed > 0 else 0.0,
        }


def load_stream_set(path: Path, limit: int | None) -> list[Stream]:
    if limit is not None and limit < 1:
        raise SimulError(f"--limit must be at least 1, got {limit}")
    streams = read_streams(path, limit)
    pairs = sorted({(s.src, s.tgt) for s in streams})
    if len(pairs) > 1:
        shown = ", ".join(f"{a}->{b}" for a, b in pairs[:4])
        raise SimulError(
            f"{path} mixes language pairs ({shown}); corpus scores need one pair per run: split the file"
        )
    return streams


def normalise(result: StreamResult) -> StreamResult:
    """The result as it reads back from steps.jsonl (rounded timings), so eval and score agree exactly."""
    return StreamResult(
        result.stream_id, result.method, [StepRecord.from_json(s.to_json()) for s in result.steps]
    )


def run_evaluation(
    request: EvalRequest,
    engine: Engine | None = None,
    progress: ProgressHook | None = None,
    on_comet_loading: Callable[[], None] | None = None,
    on_throughput: Callable[[Throughput], None] | None = None,
) -> EvalOutcome:
    """Decode, write and score. KeyboardInterrupt marks the run interrupted and is re-raised as
    :class:`Interrupted` carrying the partial outcome."""
    streams = load_stream_set(request.streams_path, request.limit)
    keys = [m.key for m in request.methods]
    if len(set(keys)) != len(keys):
        raise SimulError("the same method setting is listed twice")
    tgt = streams[0].tgt
    ne_tok = resolve_ne_tokenizer(request.ne_tokenizer, tgt)

    comet: CometScorer | None = None
    comet_reason: str | None = None
    if request.require_comet:
        comet, comet_reason = load_comet(request.comet_model, request.comet_batch_size)
        if comet is None:
            raise SimulError(f"COMET is required (--require-comet) but unavailable: {comet_reason}")

    own_engine = engine is None
    engine = engine or Engine(request.engine)
    try:
        engine.preflight(streams)
        model = engine.describe(streams[0])
        config: dict[str, Any] = {
            "streams": {
                "path": str(request.streams_path),
                "sha256": sha256_file(request.streams_path),
                "limit": request.limit,
                "count": len(streams),
                "src": streams[0].src,
                "tgt": tgt,
            },
            "methods": [m.to_json() for m in request.methods],
            "model": model,
            "model_sha256": model["sha256"],
            "template": engine.template.name,
            "n_ctx": engine.backend.n_ctx,
            "threads": engine.backend.n_threads,
            "max_len_ratio": engine.settings.max_len_ratio,
            "max_len_slack": engine.settings.max_len_slack,
            "fuse": engine.settings.fuse,
            "verify_chunk": engine.settings.verify_chunk,
            "n_gpu_layers": engine.backend.n_gpu_layers,
            "parallel": engine.backend.n_seq,
            "ne_tokenizer": ne_tok,
            "comet_model": request.comet_model,
            "comet_batch_size": request.comet_batch_size,
        }
        run: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "simul", "version": __version__},
            "config": config,
            "environment": {
                **environment(engine.backend.n_threads),
                "hardware": engine.backend.describe_hardware(),
                "started": now(),
            },
            "higher_is_better": higher_is_better(),
        }

        results: dict[str, list[StreamResult]] = {m.key: [] for m in request.methods}
        done: set[str] = set()
        writer: RunWriter | None = None
        if request.out is not None:
            if request.resume and (request.out / "run.json").exists():
                writer, loaded = RunWriter.resume(request.out, run, streams, request.methods)
                for key, rs in loaded.results.items():
                    results[key].extend(rs)
                done.update(loaded.complete)
            else:
                writer = RunWriter.create(
                    request.out, run, streams, overwrite=request.overwrite or request.resume
                )
        elif request.resume:
            raise SimulError("--resume needs --out DIR (the run directory to continue)")

        todo = [s for s in streams if s.id not in done]
        stream_map = {s.id: s for s in streams}
        finished = len(streams) - len(todo)
        if progress:
            progress(finished, len(streams))

        meter = Throughput(parallel=engine.backend.n_seq)
        run["throughput"] = meter.to_json()

        def on_stream(stream: Stream, stream_results: list[StreamResult]) -> None:
            nonlocal finished
            meter.add(stream_results)
            run["throughput"] = meter.to_json()
            if on_throughput:
                on_throughput(meter)
            normalised = [normalise(r) for r in stream_results]
            if writer is not None:
                writer.append(stream.id, normalised)
            for r in normalised:
                results[r.method.key].append(r)
            finished += 1
            if progress:
                progress(finished, len(streams))

        try:
            engine.run(todo, request.methods, on_stream)
        except KeyboardInterrupt:
            run["status"] = STATUS_INTERRUPTED
            run["streams_done"] = finished
            run["environment"]["stopped"] = now()
            if writer is not None:
                writer.run = run
                writer.save()
            partial = _partial_outcome(
                run, request, results, stream_map, ne_tok, finished, len(streams), writer
            )
            raise Interrupted(partial) from None
    finally:
        if own_engine:
            engine.close()

    if comet is None and not request.require_comet:
        if on_comet_loading:
            on_comet_loading()
        comet, comet_reason = load_comet(request.comet_model, request.comet_batch_size)
    scored = score(request.methods, results, stream_map, ne_tok, comet, comet_reason)
    run["status"] = STATUS_COMPLETE
    run["streams_done"] = finished
    run["environment"]["finished"] = now()
    _attach_scores(run, scored)
    if writer is not None:
        writer.run = run
        writer.write_per_stream(scored.per_stream_rows())
        writer.save()
    return EvalOutcome(run, scored, True, finished, len(streams), request.out)


def _attach_scores(run: dict[str, Any], scored: Scored) -> None:
    run["signatures"] = scored.signatures
    run["comet"] = scored.comet
    run["methods"] = scored.methods_json()


def _partial_outcome(
    run: dict[str, Any],
    request: EvalRequest,
    results: dict[str, list[StreamResult]],
    streams: dict[str, Stream],
    ne_tok: str,
    done: int,
    total: int,
    writer: RunWriter | None,
) -> EvalOutcome:
    complete_ids = (
        set.intersection(*(set(r.stream_id for r in rs) for rs in results.values())) if results else set()
    )
    trimmed = {k: [r for r in rs if r.stream_id in complete_ids] for k, rs in results.items()}
    if not complete_ids:
        scored = Scored(reports=[], signatures={"ne_tokenizer": ne_tok})
    else:
        scored = score(request.methods, trimmed, streams, ne_tok, None, "skipped: run interrupted")
    return EvalOutcome(run, scored, False, done, total, request.out)


class Interrupted(Exception):
    """The run was stopped by the user; ``outcome`` holds what was finished (and written)."""

    def __init__(self, outcome: EvalOutcome) -> None:
        super().__init__("interrupted")
        self.outcome = outcome


def methods_for(
    method: str,
    beta: float,
    mask_k: int,
    mask: str,
    baseline: bool,
    ending: str = "keep",
    resync: int = 0,
    display: str = "mask",
    agreement: int = 2,
) -> list[Method]:
    """The methods of `simul eval`: the chosen one, preceded by plain RT when a baseline is wanted."""
    chosen = Method(
        name=method,  # type: ignore[arg-type]
        beta=beta if method == "ssbd" else None,
        mask_k=mask_k,
        mask=mask,  # type: ignore[arg-type]
        ending=ending,  # type: ignore[arg-type]
        resync=resync,
        display=display,  # type: ignore[arg-type]
        agreement=agreement,
    )
    methods: list[Method] = []
    if baseline and chosen != Method("rt"):
        methods.append(Method("rt"))
    methods.append(chosen)
    return methods


def method_rows(outcome: EvalOutcome) -> list[dict[str, Any]]:
    return outcome.scored.methods_json()


def summary_json(outcome: EvalOutcome) -> dict[str, Any]:
    """The --json document of eval: the spec'd shape plus context."""
    return {
        "methods": [
            {k: m[k] for k in ("name", "beta", "mask_k", "mask", "key", "label", "metrics")}
            for m in outcome.scored.methods_json()
        ],
        "run_dir": str(outcome.run_dir) if outcome.run_dir else None,
        "status": STATUS_COMPLETE if outcome.complete else STATUS_INTERRUPTED,
        "streams": outcome.streams_done,
        "streams_total": outcome.streams_total,
        "signatures": outcome.scored.signatures,
        "comet": outcome.scored.comet,
        "model": outcome.run["config"]["model"]["name"],
        "throughput": outcome.run.get("throughput"),
    }

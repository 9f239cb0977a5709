"""One evaluation: decode streams with a set of methods on one model, write the run, score it.

`simul eval`, `simul sweep` and `simul bench` all go through here, so their numbers come from one code path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simul import __version__
from simul.common.errors import SimulError, UsageError
from simul.common.hashing import sha256_file
from simul.decoding.backend import ContextOverflowError
from simul.decoding.draft_model import attach_draft
from simul.decoding.engine import Engine, EngineSettings, engine_record
from simul.decoding.methods.plugins import PluginFailed, check_plugins, plugin_records
from simul.decoding.records import StepRecord, StreamResult
from simul.decoding.rollback import check_rollback
from simul.machine import clock, openmp
from simul.machine.cpu_usage import CpuMeter
from simul.machine.environment import environment, now
from simul.metrics.comet import load_comet
from simul.metrics.comet_model import CometLike
from simul.metrics.intervals import run_intervals
from simul.metrics.scoring import DEFAULT_RESEGMENT, Scored, higher_is_better, score
from simul.metrics.tokenizers import NE_TOKENIZER_CHOICES, ne_tokenizer_record, resolve_ne_tokenizer
from simul.request.methods import Method
from simul.runs.directory import (
    RUN_FILE,
    SCHEMA_VERSION,
    SCORE_ADVICE,
    STATUS_COMPLETE,
    STATUS_FAILED,
    STATUS_INTERRUPTED,
    STATUS_SCORING_FAILED,
    RunWriter,
    load_run_json,
)
from simul.runs.lock import locked_run_dir
from simul.runs.shard import Shard, ShardSelection, select, shard_config
from simul.streams.format import Stream, read_streams
from simul.streams.references import reference_summary, segment_times_summary, testset_summary
from simul.streams.scorable import check_longform_scoring
from simul.testing.hold import hold, hold_after

# Why a shard run has no COMET: it is computed once, over all streams, when the shards are merged.
COMET_AT_MERGE = "deferred: COMET is computed by `simul merge` over all shards"


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
    resegment: str = DEFAULT_RESEGMENT  # long-form scoring (simul.metrics.scoring)
    shard: Shard | None = None  # decode only this share of the streams (simul/runs/shard.py)
    extra_config: dict[str, Any] = field(default_factory=dict)  # recorded in config (e.g. the sweep's)
    out_option: str = "--out"  # the command's option that named ``out``, for messages about it

    def __post_init__(self) -> None:
        # the draft model, if any, is named in the keys of the methods that draft with it (usage errors when
        # a method needs one and none is given, or one is given for no method)
        self.methods = attach_draft(self.methods, self.engine.draft)


@dataclass
class EvalOutcome:
    run: dict[str, Any]
    scored: Scored
    complete: bool
    streams_done: int
    streams_total: int
    run_dir: Path | None
    stage: str = "decoding"  # what was under way when an interrupted run stopped: decoding or scoring
    results: dict[str, list[StreamResult]] = field(default_factory=dict)  # a complete run's, per method key


ProgressHook = Callable[[int, int], None]  # (done, total)


@dataclass
class Throughput:
    """Evaluation throughput of this process: updates and output tokens per second of wall time.

    Under ``parallel`` N > 1 this is the figure that matters; per-update times are then batched (each
    update shares its forward passes with other streams) and are not single-user latencies.
    """

    parallel: int
    started: float = field(default_factory=clock.wall)
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
        return clock.wall() - self.started

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
        raise UsageError(f"--limit must be at least 1, got {limit}")
    streams = read_streams(path, limit)
    pairs = sorted({(s.src, s.tgt) for s in streams})
    if len(pairs) > 1:
        shown = ", ".join(f"{a}->{b}" for a, b in pairs[:4])
        raise SimulError(
            f"{path} mixes language pairs ({shown}); corpus scores need one pair per run: split the file"
        )
    timed = next((s for s in streams if s.timed), None)
    untimed = next((s for s in streams if not s.timed), None)
    if timed is not None and untimed is not None:
        raise SimulError(
            f"{path} mixes timed and untimed streams (stream {timed.id!r} has time_ms on its steps, "
            f"stream {untimed.id!r} has none): latency would average milliseconds with source words. "
            "Give time_ms to every stream or to none, e.g. split the file into timed and untimed streams"
        )
    check_longform_scoring(streams, str(path))  # before any model is loaded: never decode, then fail
    return streams


def context_advice(exc: ContextOverflowError, n_ctx_train: int) -> SimulError:
    """The context-overflow error, with advice that can work: a larger --n-ctx only up to the model's
    training length (which caps n_ctx); past it, say so and suggest splitting the stream instead."""
    return SimulError(exc.advice(n_ctx_train))


def check_request(request: EvalRequest) -> None:
    """Option combinations that cannot work, refused before anything is loaded (usage errors)."""
    if request.resume and request.out is None:
        raise UsageError("--resume needs --out DIR (the run directory to continue)")
    if request.limit is not None and request.limit < 1:
        raise UsageError(f"--limit must be at least 1, got {request.limit}")
    if request.ne_tokenizer not in NE_TOKENIZER_CHOICES:
        raise UsageError(
            f"unknown --ne-tokenizer {request.ne_tokenizer!r}; "
            f"choose one of {', '.join(NE_TOKENIZER_CHOICES)}"
        )
    check_plugins(request.methods)  # a plug-in simul cannot use is refused before the model loads


def carry_over(earlier: Mapping[str, Any], run: dict[str, Any]) -> None:
    """What a resumed run keeps of the run it continues: the failure of a method from outside simul that
    stopped it (``failed_earlier``), and, where a plug-in was changed in between (fixed, say), the records of
    the plug-ins its finished streams were decoded with (``plugins_earlier``; ``config.plugins`` holds this
    process's)."""
    failure = (
        earlier.get("failure") if earlier.get("status") == STATUS_FAILED else earlier.get("failed_earlier")
    )
    if isinstance(failure, dict):
        run["failed_earlier"] = failure
    before = earlier.get("plugins_earlier", earlier.get("config", {}).get("plugins"))
    if isinstance(before, dict) and before != run["config"].get("plugins", {}):
        run["plugins_earlier"] = before  # the first records that differ, when it changed more than once


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
    :class:`Interrupted` carrying the partial outcome. The run directory, if any, is locked throughout."""
    check_request(request)
    streams = load_stream_set(request.streams_path, request.limit)
    with locked_run_dir(request.out, request.out_option):
        return _evaluate(request, streams, engine, progress, on_comet_loading, on_throughput)


def _evaluate(
    request: EvalRequest,
    streams: list[Stream],
    engine: Engine | None,
    progress: ProgressHook | None,
    on_comet_loading: Callable[[], None] | None,
    on_throughput: Callable[[Throughput], None] | None,
) -> EvalOutcome:
    every_stream = streams  # what the run's config describes, whatever share of it this process decodes
    selection = select(streams, request.shard) if request.shard is not None else None
    if selection is not None:
        streams = selection.streams
    keys = [m.key for m in request.methods]
    if len(set(keys)) != len(keys):
        raise SimulError("the same method setting is listed twice")
    # Every tokenizer the scores need is loaded now (a missing or damaged model file, a missing MeCab), so
    # that it fails before the streams are decoded: NE's, and BLEU's, the target language's own.
    ne_tok = resolve_ne_tokenizer(request.ne_tokenizer, streams[0].tgt)
    resolve_ne_tokenizer("auto", streams[0].tgt)
    comet, comet_reason = _required_comet(request)

    own_engine = engine is None
    engine = engine or Engine(request.engine)
    try:
        check_memory(request.methods, engine)
        try:
            engine.preflight(streams)
        except ContextOverflowError as exc:
            raise context_advice(exc, engine.backend.info.n_ctx_train) from None
        if engine.settings.calibrate and engine.pass_costs is None:
            engine.calibrate(streams[0])
        config = _run_config(request, engine, streams, every_stream, selection, ne_tok)
        decoding = _Decoding(request, _new_run(config, engine), streams, engine, progress, on_throughput)
        decoding.decode(engine, ne_tok)
    finally:
        if own_engine:
            engine.close()
    return _score_run(request, decoding, ne_tok, comet, comet_reason, on_comet_loading)


def check_memory(methods: list[Method], engine: Engine) -> None:
    """Refuse the methods that roll back on a model (or draft model) whose memory cannot (simul.decoding.
    rollback), before any stream is decoded."""
    info = engine.backend.info
    check_rollback(methods, info.memory, info.architecture, engine.model_path.name)
    if engine.draft is not None:
        draft = engine.draft.backend.info
        check_rollback(methods, draft.memory, draft.architecture, f"the draft model {engine.draft.path.name}")


def _required_comet(request: EvalRequest) -> tuple[CometLike | None, str | None]:
    """COMET loaded before decoding when the run requires it (so that a missing COMET fails early)."""
    if request.require_comet and request.shard is not None:
        raise SimulError("--require-comet applies to `simul merge`: a shard run leaves COMET to the merge")
    if not request.require_comet:
        return None, None
    comet, comet_reason = load_comet(request.comet_model, request.comet_batch_size)
    if comet is None:
        raise SimulError(f"COMET is required (--require-comet) but unavailable: {comet_reason}")
    return comet, comet_reason


def _run_config(
    request: EvalRequest,
    engine: Engine,
    streams: list[Stream],
    every_stream: list[Stream],
    selection: ShardSelection | None,
    ne_tok: str,
) -> dict[str, Any]:
    """The run's ``config``: the streams, methods, model and settings it was decoded with."""
    model = engine.describe(streams[0])
    config: dict[str, Any] = {
        "streams": {
            "path": str(request.streams_path),
            "sha256": sha256_file(request.streams_path),
            "limit": request.limit,
            "count": len(streams),
            "src": streams[0].src,
            "tgt": streams[0].tgt,
            "references": reference_summary(every_stream),
            **({"testsets": testsets} if (testsets := testset_summary(every_stream)) else {}),
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
        # exact mode: each row's logits those of a one-token pass (environment.engine has the self-check)
        "exact": engine.exact,
        "ne_tokenizer": ne_tok,
        "comet_model": request.comet_model,
        "comet_batch_size": request.comet_batch_size,
        # what each "auto" (and every other option simul resolves) became, and why; the same on every
        # machine (the threads and the OpenMP wait policy, which are not, are in environment.thread_choice
        # and environment.openmp; COMET's checkpoint in run.json's comet)
        "resolved": {
            "ne_tokenizer": ne_tokenizer_record(request.ne_tokenizer, ne_tok),
            "template": {
                "given": engine.settings.template,
                "used": engine.template.name,
                "rule": engine.template_rule,
            },
        },
        **request.extra_config,
    }
    if engine.draft is not None:  # only then, so that the config of other runs keeps its keys
        config["draft_model"] = engine.draft.describe()
        config["draft_model_sha256"] = config["draft_model"]["sha256"]
    plugins = plugin_records(request.methods)
    if plugins:  # where each method from outside simul came from and what it was made with
        config["plugins"] = plugins
    if any(stream.longform for stream in every_stream):
        if (derived := segment_times_summary(every_stream)) is not None:
            config["streams"]["segment_times"] = derived
        config["longform"] = engine.settings.window.to_json()
        config["resegment"] = request.resegment
    if selection is not None and request.shard is not None:
        config["streams"]["total"] = selection.total
        config["shard"] = shard_config(request.shard, selection)
    return config


def _new_run(config: dict[str, Any], engine: Engine) -> dict[str, Any]:
    """run.json as a run starts: its config, the machine and software, and which way each metric is better."""
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "simul", "version": __version__},
        "config": config,
        "environment": {
            **environment(engine.backend.n_threads),
            "thread_choice": engine.threads.to_json(),
            "openmp": openmp.record(),
            "hardware": engine.backend.describe_hardware(),
            "engine": engine_record(engine),
            "kv_cache": engine.backend.kv_cache_record(),
            **({"pass_costs": engine.pass_costs.to_json()} if engine.pass_costs is not None else {}),
            "started": now(),
        },
        "higher_is_better": higher_is_better(),
    }


class _Decoding:
    """The decoding part of one evaluation: the results so far per method, the run directory they are
    written to as each stream finishes, throughput and CPU use, and the progress hooks."""

    def __init__(
        self,
        request: EvalRequest,
        run: dict[str, Any],
        streams: list[Stream],
        engine: Engine,
        progress: ProgressHook | None,
        on_throughput: Callable[[Throughput], None] | None,
    ) -> None:
        self.request = request
        self.run = run
        self.total = len(streams)
        self.progress = progress
        self.on_throughput = on_throughput
        self.meter = CpuMeter(engine.backend.n_threads)
        self.results: dict[str, list[StreamResult]] = {m.key: [] for m in request.methods}
        self.writer: RunWriter | None = None
        self.follower = engine.follower
        self.changes_before = len(engine.follower.changes) if engine.follower is not None else 0
        self.earlier_changes: list[Any] = []  # of the run this one resumes
        done = self._open_run_dir(streams)
        self.todo = [s for s in streams if s.id not in done]
        self.stream_map = {s.id: s for s in streams}
        self.finished = len(streams) - len(self.todo)
        if progress:
            progress(self.finished, self.total)
        self.rate = Throughput(parallel=engine.backend.n_seq)
        run["throughput"] = self.rate.to_json()
        self.hold_after = hold_after()  # tests only (simul.testing.hold); None in real runs

    def _open_run_dir(self, streams: list[Stream]) -> set[str]:
        """Create or resume the run directory, if any; the ids of the streams it already holds."""
        request = self.request
        if request.out is None:
            return set()
        if request.resume and (request.out / "run.json").exists():
            earlier = load_run_json(request.out)
            self.meter.resume(earlier.get("environment", {}).get("cpu_usage"))
            changes = earlier.get("environment", {}).get("thread_changes")
            self.earlier_changes = changes if isinstance(changes, list) else []
            carry_over(earlier, self.run)
            self.writer, loaded = RunWriter.resume(request.out, self.run, streams, request.methods)
            for key, rs in loaded.results.items():
                self.results[key].extend(rs)
            return set(loaded.complete)
        self.writer = RunWriter.create(
            request.out,
            self.run,
            streams,
            overwrite=request.overwrite or request.resume,
            option=request.out_option,
        )
        return set()

    def record_threads(self) -> None:
        """The thread changes of this run so far (exact mode's load following, simul.machine.load_following;
        an engine that decodes several runs keeps one follower), after those of the run it resumes."""
        if self.follower is None:
            return
        changes = self.earlier_changes + self.follower.to_json()[self.changes_before :]
        if changes:
            self.run["environment"]["thread_changes"] = changes

    def on_stream(self, stream: Stream, stream_results: list[StreamResult]) -> None:
        """A stream is decoded with every method: count it, write it and keep its results."""
        self.record_threads()
        self.rate.add(stream_results)
        self.run["throughput"] = self.rate.to_json()
        if self.on_throughput:
            self.on_throughput(self.rate)
        normalised = [normalise(r) for r in stream_results]
        if self.writer is not None:
            self.writer.append(stream.id, normalised)
        for r in normalised:
            self.results[r.method.key].append(r)
        self.finished += 1
        if self.progress:
            self.progress(self.finished, self.total)
        if self.finished == self.hold_after:
            hold(self.finished)

    def decode(self, engine: Engine, ne_tok: str) -> None:
        """Decode the streams not done yet; on Ctrl-C save the run as interrupted and raise
        :class:`Interrupted` with what was finished."""
        try:
            engine.run(self.todo, self.request.methods, self.on_stream, self.meter)
        except PluginFailed as exc:
            raise self.failed(exc) from exc
        except KeyboardInterrupt as stop:
            self.mark_stopped()
            self.run["environment"]["cpu_usage"] = self.meter.to_json()
            self.save()
            partial = _partial_outcome(
                self.run,
                self.request,
                self.results,
                self.stream_map,
                ne_tok,
                self.finished,
                self.total,
                self.writer,
            )
            raise Interrupted(partial, stop) from None
        self.run["environment"]["cpu_usage"] = self.meter.to_json()
        self.record_threads()

    def scoring_failed(self, exc: Exception) -> SimulError:
        """Record in run.json that every stream was decoded and written but scoring failed, and how; the
        error for the user, with what to do (one message, no traceback)."""
        reason = error_line(exc)
        self.run["status"] = STATUS_SCORING_FAILED
        self.run["streams_done"] = self.finished
        self.run["scoring_error"] = {"error": type(exc).__name__, "message": reason}
        self.run["environment"]["finished"] = now()
        if self.writer is None:
            return SimulError(f"scoring failed after all {self.finished} streams were decoded: {reason}")
        self.save()
        return SimulError(
            f"scoring failed after all {self.finished} streams were decoded: {reason}. The decoded steps are "
            f"kept in {self.writer.path} ({RUN_FILE} status {STATUS_SCORING_FAILED}); "
            + SCORE_ADVICE.format(path=self.writer.path)
        )

    def failed(self, exc: PluginFailed) -> SimulError:
        """A method from outside simul failed while decoding: record in run.json that the run failed, and
        how, keeping the streams finished before; the error for the user, with what to do."""
        self.mark_stopped()
        self.run["status"] = STATUS_FAILED
        self.run["failure"] = {"stage": "decoding", "message": str(exc)}
        self.run["environment"]["cpu_usage"] = self.meter.to_json()
        self.save()
        if self.writer is None:
            return SimulError(f"{exc}. The run stopped after {self.finished} of {self.total} streams")
        return SimulError(
            f"{exc}. The run stopped: the {self.finished} of {self.total} streams finished before are kept "
            f"in {self.writer.path} ({RUN_FILE} status {STATUS_FAILED}); fix the plug-in and continue with "
            f"`simul eval --resume --out {self.writer.path}` (same options)"
        )

    def mark_stopped(self) -> None:
        self.record_threads()
        self.run["status"] = STATUS_INTERRUPTED
        self.run["streams_done"] = self.finished
        self.run["environment"]["stopped"] = now()

    def save(self) -> None:
        if self.writer is not None:
            self.writer.run = self.run
            self.writer.save()


def _score_run(
    request: EvalRequest,
    decoding: _Decoding,
    ne_tok: str,
    comet: CometLike | None,
    comet_reason: str | None,
    on_comet_loading: Callable[[], None] | None,
) -> EvalOutcome:
    """Score the decoded streams (loading COMET now unless it was required up front or this is a shard),
    write the scores and return the outcome; Ctrl-C while scoring saves the run as interrupted."""
    run, finished, total = decoding.run, decoding.finished, decoding.total
    try:
        if request.shard is not None:
            comet_reason = COMET_AT_MERGE
        elif comet is None and not request.require_comet:
            if on_comet_loading:
                on_comet_loading()
            comet, comet_reason = load_comet(request.comet_model, request.comet_batch_size)
        scored = score(
            request.methods,
            decoding.results,
            decoding.stream_map,
            ne_tok,
            [comet],
            comet_reason,
            resegment=request.resegment,
        )
    except KeyboardInterrupt as stop:
        decoding.mark_stopped()
        decoding.save()
        empty = Scored(reports=[], signatures={"ne_tokenizer": ne_tok})
        stopped = EvalOutcome(run, empty, False, finished, total, request.out, stage="scoring")
        raise Interrupted(stopped, stop) from None
    except Exception as exc:  # any scorer's failure: the decoded streams are kept and the run says so
        raise decoding.scoring_failed(exc) from None
    run["status"] = STATUS_COMPLETE
    run["streams_done"] = finished
    run["environment"]["finished"] = now()
    _attach_scores(run, scored)
    run["speed_intervals"] = run_intervals(request.methods, [decoding.results])
    if decoding.writer is not None:
        decoding.writer.run = run
        decoding.writer.write_per_stream(scored.per_stream_rows())
        decoding.writer.write_error_spans(scored.error_span_rows())
        decoding.writer.save()
    return EvalOutcome(run, scored, True, finished, total, request.out, results=decoding.results)


def error_line(exc: BaseException) -> str:
    """An exception in one line: a SimulError's own message (it says what to do), anything else's type and
    the first line of its message (sentencepiece's RuntimeError, a scorer's bug)."""
    text = str(exc).strip()
    if isinstance(exc, SimulError):
        return text
    first = text.splitlines()[0][:300] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _attach_scores(run: dict[str, Any], scored: Scored) -> None:
    scored.attach(run)


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
        scored = score(
            request.methods,
            trimmed,
            streams,
            ne_tok,
            [],
            "skipped: run interrupted",
            resegment=request.resegment,
        )
    return EvalOutcome(run, scored, False, done, total, request.out)


class Interrupted(Exception):
    """The run was stopped by the user (Ctrl-C, or SIGTERM as :class:`simul.common.errors.Terminated`);
    ``outcome`` holds what was finished (and written), ``cause`` the interruption."""

    def __init__(self, outcome: EvalOutcome, cause: KeyboardInterrupt | None = None) -> None:
        super().__init__("interrupted")
        self.outcome = outcome
        self.cause = cause if cause is not None else KeyboardInterrupt()

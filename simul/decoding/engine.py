"""The evaluation loop: one model, several methods, the same streams, interleaved per stream.

Methods are interleaved stream by stream (RT on stream 1, then SSBD on stream 1, then RT on stream 2, ...)
so that slow drifts of the machine (heat, other load) fall on every method alike and the speedup stays fair.
With ``parallel`` N > 1, N streams are decoded at once, each on its own sequence of one context, every
method in turn on it, and their forward passes are batched (simul.decoding.scheduler); results are still
handed on in stream order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError, UsageError
from simul.common.hashing import cached_sha256
from simul.common.languages import get_language
from simul.decoding.backend import ContextOverflowError, LlamaBackend
from simul.decoding.backend.exactness import DEFAULT_EXACT, ExactSupport
from simul.decoding.backend.invariance import InvarianceReport, self_check
from simul.decoding.backend.llama import engine_exact_support, pass_hook_suspended
from simul.decoding.backend.sequence import KVSequence
from simul.decoding.draft_model import DraftModel, DraftSettings, load_draft, pair
from simul.decoding.longform import WindowPolicy
from simul.decoding.passes import Passes
from simul.decoding.records import StreamResult
from simul.decoding.scheduler import BatchScheduler
from simul.decoding.stream import MAX_LEN_RATIO, MAX_LEN_SLACK, StreamDecoder
from simul.machine import clock
from simul.machine.calibration import PassCosts, calibrate, calibrate_draft
from simul.machine.cpu_usage import CpuMeter
from simul.machine.load_following import LoadFollower
from simul.machine.threads import choose_threads
from simul.request.default_model import DEFAULT_TEMPLATE, default_model_path, is_default_model
from simul.request.methods import Method
from simul.request.templates import PRESETS, SOURCE_SLOT, Template, chat_template, get_template
from simul.streams.format import Stream


@dataclass(frozen=True)
class EngineSettings:
    model: Path | None = None  # None: the embedded default
    template: str = "auto"
    n_ctx: int = 2048
    threads: int | None = None
    max_len_ratio: float = MAX_LEN_RATIO
    max_len_slack: int = MAX_LEN_SLACK
    fuse: bool = False  # evaluate the rest of the prompt and the draft in one forward pass
    verify_chunk: int = 0  # verify drafts in chunks of this many tokens (0: whole drafts)
    n_gpu_layers: int | None = None  # None: all layers when llama.cpp can offload, else 0
    parallel: int = 1  # streams decoded at once, their forward passes batched
    calibrate: bool = False  # measure the forward-pass costs first (simul.machine.calibration; bench does)
    window: WindowPolicy = field(default_factory=WindowPolicy)  # long-form streams (simul.decoding.longform)
    draft: DraftSettings | None = None  # a draft model beside the target (simul.decoding.draft_model)
    # every row of a pass with the logits of a one-token pass (simul.decoding.backend.exactness); None: the
    # default, exact where this llama.cpp can be, else fast (and the run says why)
    exact: bool | None = None


def resolve_exact(asked: bool | None, support: ExactSupport) -> tuple[bool, str | None]:
    """Exact mode or not, and why not when the default would have it: ``--exact`` where this llama.cpp cannot
    is a usage error; the default falls back to fast mode and says why."""
    if asked is True and not support.available:
        raise UsageError(f"--exact: {support.reason}")
    if asked is None:
        if not DEFAULT_EXACT:
            return False, None
        return support.available, None if support.available else support.reason
    return asked, None


def engine_record(engine: Engine) -> dict[str, Any]:
    """How the run's forward passes compute (environment.engine in run.json): the mode, the switches behind
    it, and the start-up self-check (max |logit difference| between a row decoded alone and inside wider
    passes; 0 in exact mode)."""
    out: dict[str, Any] = {**engine.backend.describe_engine(), "self_check": engine.invariance.to_json()}
    if engine.exact_note:
        out["fast_because"] = engine.exact_note
    return out


def resolve_template(name: str, backend: LlamaBackend, default_model: bool) -> Template:
    """``auto``: fewshot for the embedded base model, else the GGUF's chat template if any, else fewshot."""
    if name == "auto":
        if default_model or not backend.info.chat_template:
            return PRESETS[DEFAULT_TEMPLATE]
        name = "chat"
    if name == "chat":
        if not backend.info.chat_template:
            raise SimulError(
                f"{backend.model_path.name} has no chat template (tokenizer.chat_template); "
                "pass --template fewshot (base models), tower or qwen3"
            )
        return chat_template(backend.info.chat_template, backend.info.bos_token, backend.info.eos_token)
    return get_template(name)


def template_rule(name: str, backend: LlamaBackend, default_model: bool) -> str:
    """Why :func:`resolve_template` chose what it chose, in words (recorded in run.json); it depends on the
    model file alone."""
    if name != "auto":
        return "as given"
    if default_model:
        return "auto: the embedded default model is a base model (fewshot)"
    if not backend.info.chat_template:
        return "auto: the model has no chat template (fewshot)"
    return "auto: the model's own chat template (tokenizer.chat_template)"


class Engine:
    """A loaded model and template, ready to decode streams with any method."""

    def __init__(self, settings: EngineSettings) -> None:
        self.settings = settings
        path = settings.model if settings.model is not None else default_model_path()
        self.model_path = path
        self.threads = choose_threads(settings.threads, model=path)
        self.exact, self.exact_note = resolve_exact(
            settings.exact, engine_exact_support(settings.n_gpu_layers, self.threads)
        )
        self.backend = LlamaBackend(
            path,
            n_ctx=settings.n_ctx,
            n_threads=self.threads.threads,
            n_gpu_layers=settings.n_gpu_layers,
            thread_choice=self.threads,
            exact=self.exact,
        )
        self.backend.warm_up()
        self.draft: DraftModel | None = None
        if settings.draft is not None:
            try:
                self.draft = load_draft(
                    settings.draft, self.backend, path, self.threads, settings.n_gpu_layers, self.exact
                )
            except BaseException:
                self.backend.close()
                raise
            pair(self.backend.sequences, self.draft.backend.sequences)
        # decode a short probe both ways, off the clocks: what this run's rows depend on, in run.json
        try:
            with clock.untimed(), pass_hook_suspended():
                self.invariance: InvarianceReport = self_check(self.backend)
        except BaseException:
            self.close()
            raise
        self.pass_costs: PassCosts | None = None
        self.follower = self._load_follower()
        self.is_default = settings.model is None or is_default_model(path)
        self.template = resolve_template(settings.template, self.backend, self.is_default)
        self.template_rule = template_rule(settings.template, self.backend, self.is_default)

    def _load_follower(self) -> LoadFollower | None:
        """In exact mode with automatic threads on the CPU: a follower that changes the thread count between
        forward passes when the load changes (simul.machine.load_following; the rows do not depend on the
        threads there). Fast mode keeps the count chosen at start: there it can change outputs."""
        backend = self.backend
        if not self.exact or self.threads.source != "auto" or backend.n_threads < 2:
            return None
        if backend.gpu_offload and backend.n_gpu_layers != 0:
            return None
        draft = self.draft

        def apply(n: int) -> None:
            backend.set_threads(n)
            if draft is not None:
                draft.backend.set_threads(n)

        follower = LoadFollower(backend.n_threads, apply, cpus=self.threads.cpus)
        backend.follower = follower
        return follower

    def calibrate(self, sample: Stream) -> PassCosts:
        """Measure the forward-pass costs (simul.machine.calibration) after this engine's prompt for
        ``sample``'s whole source, before any stream is decoded; the cache is cleared after, so what follows
        is unchanged."""
        on_cpu = not self.backend.gpu_offload or self.backend.n_gpu_layers == 0
        decoder = self.decoder(Method("rt"))
        source = sample.steps[-1].source if sample.steps else ""
        prompt = decoder.tokenize_prompt(decoder.prompt_for(sample, source))
        # in one piece and off the clocks: under `simul bench --parallel` the N = 1 lane's wall time is
        # what its decoding took, and the calibration's passes are timed without the other lane's turns
        with clock.untimed(), pass_hook_suspended(), self._follower_paused():
            costs = calibrate(self.backend, single_thread=on_cpu, prompt_tokens=prompt)
            if self.draft is not None:  # c_L of Leviathan et al.: the same prompt, the same vocabulary
                costs = calibrate_draft(costs, self.draft.backend, prompt)
        self.pass_costs = costs
        if self.follower is not None:
            calibrated = {costs.threads: costs.one_token_ms / 1000.0}
            if costs.one_token_single_ms is not None:
                calibrated[1] = costs.one_token_single_ms / 1000.0
            self.follower.calibrated(calibrated)
        return costs

    @contextmanager
    def _follower_paused(self) -> Iterator[None]:
        """The calibration sets the threads itself; afterwards the follower's count is back in force."""
        follower = self.follower
        if follower is None:
            yield
            return
        follower.paused = True
        try:
            yield
        finally:
            follower.paused = False
            self.backend.set_threads(follower.threads)

    def close(self) -> None:
        if self.draft is not None:
            self.draft.close()
        self.backend.close()

    def decoder(self, method: Method) -> StreamDecoder:
        return StreamDecoder(
            self.backend,
            self.template,
            method,
            max_len_ratio=self.settings.max_len_ratio,
            max_len_slack=self.settings.max_len_slack,
            fuse=self.settings.fuse,
            verify_chunk=self.settings.verify_chunk,
            window=self.settings.window,
        )

    def preflight(self, streams: Sequence[Stream]) -> None:
        """Check, before decoding anything, that every step of every stream fits the context window, and with
        ``parallel`` N > 1 make the context N sequences, each as long as the longest stream needs (rounded up
        to 256 positions, at most --n-ctx); this fails with a clear message when the memory is not there.

        A step needs its prompt plus the output length cap (``max_len_ratio`` x source tokens +
        ``max_len_slack``): that is all that can be known before decoding. Every stream that does not fit is
        named, with the positions it needs, and the ``--n-ctx`` (a power of two) that would fit them all.
        """
        if self.settings.parallel < 1:
            raise UsageError(f"--parallel must be 1 or more, got {self.settings.parallel}")
        decoder = self.decoder(Method("rt"))
        n_ctx = self.backend.n_ctx
        too_long: list[tuple[str, int]] = []
        longest = 0
        for stream in streams:
            need = decoder.positions_needed(stream)
            longest = max(longest, need)
            if need > n_ctx:
                too_long.append((stream.id, need))
        if too_long:
            most = max(need for _, need in too_long)
            shown = ", ".join(f"{sid} ({need})" for sid, need in too_long[:10])
            more = f" and {len(too_long) - 10} more" if len(too_long) > 10 else ""
            cap = f"{self.settings.max_len_ratio:g} x source tokens + {self.settings.max_len_slack}"
            raise ContextOverflowError(
                f"{len(too_long)} of {len(streams)} streams do not fit the context window of {n_ctx} "
                f"positions (prompt plus up to {cap} output tokens; positions needed in brackets): "
                f"{shown}{more}",
                needed=most,
                remedy=", or leave those streams out (split long segments)",
            )
        if self.draft is not None and longest > self.draft.backend.n_ctx:
            raise ContextOverflowError(
                f"the draft model's context window of {self.draft.backend.n_ctx} positions cannot hold the "
                f"longest stream's {longest}; pass --draft-n-ctx {1 << max(longest - 1, 0).bit_length()}"
            )
        n_seq = min(self.settings.parallel, len(streams))
        if n_seq > 1:
            self.backend.configure(n_seq, min(n_ctx, -(-longest // 256) * 256))
            if self.draft is not None:
                draft = self.draft.backend
                draft.configure(n_seq, min(draft.n_ctx, -(-longest // 256) * 256))
                pair(self.backend.sequences, draft.sequences)

    def run(
        self,
        streams: Iterable[Stream],
        methods: Sequence[Method],
        on_stream: Callable[[Stream, list[StreamResult]], None],
        meter: CpuMeter | None = None,
    ) -> None:
        decoders = [self.decoder(method) for method in methods]
        if self.backend.n_seq == 1:
            for stream in streams:
                results = []
                for method, decoder in zip(methods, decoders, strict=True):
                    with meter.measure(method.key) if meter is not None else nullcontext():
                        results.append(decoder.decode(stream))
                on_stream(stream, results)
            return
        # Batched, the methods share every forward pass: each is measured over the whole run (the CPU/wall
        # ratio that marks unreliable timings is the same for all of them).
        with ExitStack() as measuring:
            if meter is not None:
                for method in methods:
                    measuring.enter_context(meter.measure(method.key))
            self._run_batched(list(streams), decoders, on_stream)

    def _run_batched(
        self,
        streams: list[Stream],
        decoders: list[StreamDecoder],
        on_stream: Callable[[Stream, list[StreamResult]], None],
    ) -> None:
        def job(stream: Stream) -> Callable[[KVSequence], Passes[list[StreamResult]]]:
            def machine(seq: KVSequence) -> Passes[list[StreamResult]]:
                results = []
                for decoder in decoders:
                    results.append((yield from decoder.stream_steps(stream, seq)))
                return results

            return machine

        # Streams finish out of order; they are handed on in order, so run files read as with N = 1.
        done: dict[int, list[StreamResult]] = {}
        next_index = 0

        def on_done(index: int, results: list[StreamResult]) -> None:
            nonlocal next_index
            done[index] = results
            while next_index in done:
                on_stream(streams[next_index], done.pop(next_index))
                next_index += 1

        scheduler: BatchScheduler[int, list[StreamResult]] = BatchScheduler(self.backend)
        scheduler.run(((i, job(s)) for i, s in enumerate(streams)), on_done)

    def describe(self, sample: Stream | None = None) -> dict[str, Any]:
        """What a run records about the model and prompt."""
        info = self.backend.info
        out: dict[str, Any] = {
            "path": str(self.model_path),
            "file": self.model_path.name,
            "sha256": cached_sha256(self.model_path),
            "name": info.name,
            "architecture": info.architecture,
            "n_params": info.n_params,
            "n_vocab": info.n_vocab,
            "n_ctx": info.n_ctx,
            "default": self.is_default,
            "template": self.template.name,
        }
        if sample is not None:
            prompt = self.template.render(get_language(sample.src), get_language(sample.tgt), SOURCE_SLOT)
            out["prompt"] = prompt.text
        return out

"""The evaluation loop: one model, several methods, the same streams, interleaved per stream.

Methods are interleaved stream by stream (RT on stream 1, then SSBD on stream 1, then RT on stream 2, ...)
so that slow drifts of the machine (heat, other load) fall on every method alike and the speedup stays fair.
With ``parallel`` N > 1, N streams are decoded at once, each on its own sequence of one context, every
method in turn on it, and their forward passes are batched (simul.scheduler); results are still handed on
in stream order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simul.backend import LlamaBackend, default_threads
from simul.backend.sequence import KVSequence
from simul.decoding import StreamDecoder, StreamResult
from simul.decoding.passes import Passes
from simul.default_model import DEFAULT_TEMPLATE, default_model_path, is_default_model
from simul.errors import SimulError, UsageError
from simul.hashing import cached_sha256
from simul.languages import get_language
from simul.methods import Method
from simul.scheduler import BatchScheduler
from simul.streams.format import Stream
from simul.templates import PRESETS, Template, chat_template, get_template


@dataclass(frozen=True)
class EngineSettings:
    model: Path | None = None  # None: the embedded default
    template: str = "auto"
    n_ctx: int = 2048
    threads: int | None = None
    max_len_ratio: float = 2.0
    max_len_slack: int = 10
    fuse: bool = False  # evaluate the rest of the prompt and the draft in one forward pass
    verify_chunk: int = 0  # verify drafts in chunks of this many tokens (0: whole drafts)
    n_gpu_layers: int | None = None  # None: all layers when llama.cpp can offload, else 0
    parallel: int = 1  # streams decoded at once, their forward passes batched


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


class Engine:
    """A loaded model and template, ready to decode streams with any method."""

    def __init__(self, settings: EngineSettings) -> None:
        self.settings = settings
        path = settings.model if settings.model is not None else default_model_path()
        self.model_path = path
        self.backend = LlamaBackend(
            path,
            n_ctx=settings.n_ctx,
            n_threads=settings.threads or default_threads(),
            n_gpu_layers=settings.n_gpu_layers,
        )
        self.backend.warm_up()
        self.is_default = settings.model is None or is_default_model(path)
        self.template = resolve_template(settings.template, self.backend, self.is_default)

    def close(self) -> None:
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
        )

    def preflight(self, streams: Sequence[Stream]) -> None:
        """Check every stream fits the context before spending time on any of them, and with ``parallel``
        N > 1 make the context N sequences, each as long as the longest stream needs (rounded up to 256
        positions, at most --n-ctx); this fails with a clear message when the memory is not there."""
        if self.settings.parallel < 1:
            raise UsageError(f"--parallel must be 1 or more, got {self.settings.parallel}")
        decoder = self.decoder(Method("rt"))
        need = 0
        for stream in streams:
            decoder.check_fits(stream)
            need = max(need, decoder.positions_needed(stream))
        n_seq = min(self.settings.parallel, len(streams))
        if n_seq > 1:
            self.backend.configure(n_seq, min(self.backend.n_ctx, -(-need // 256) * 256))

    def run(
        self,
        streams: Iterable[Stream],
        methods: Sequence[Method],
        on_stream: Callable[[Stream, list[StreamResult]], None],
    ) -> None:
        decoders = [self.decoder(method) for method in methods]
        if self.backend.n_seq == 1:
            for stream in streams:
                on_stream(stream, [decoder.decode(stream) for decoder in decoders])
            return
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
            prompt = self.template.render(get_language(sample.src), get_language(sample.tgt), "{source}")
            out["prompt"] = prompt.text
        return out

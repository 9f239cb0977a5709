"""A draft model loaded beside the target (``--draft-model PATH.gguf``, or ``--draft-layers L``: an early-exit
copy of the target, simul.decoding.early_exit): its settings, loading it, and pairing its sequences with the
target's.

The draft model has a context of its own, with as many sequences as the target's (``--parallel``): the
engine pairs the i-th sequence of each (``KVSequence.partner``), so that the stream decoded on a target
sequence drafts on its partner. The partner starts every stream from the same canonical state as the target
(the template text before the source, evaluated on its own: KVSequence.start_from) and keeps the longest
common prefix of its cache from one draft to the next, across steps, as the target does.

The draft's vocabulary must be the target's (simul.decoding.backend.vocabulary, llama.cpp's rules): a draft
token is verified as the target token of the same id.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simul.common.errors import UsageError
from simul.common.hashing import cached_sha256
from simul.decoding.backend import LlamaBackend
from simul.decoding.backend.sequence import KVSequence
from simul.decoding.backend.vocabulary import first_difference
from simul.decoding.early_exit import EarlyExit, early_exit_copy, read_early_exit
from simul.machine.threads import ThreadChoice
from simul.request.methods import Method


@dataclass(frozen=True)
class DraftSettings:
    """Which draft model, and how it runs. ``model``: a GGUF file; ``layers``: instead, the early-exit copy
    of the target that keeps its first ``layers`` blocks. ``threads``, ``n_ctx`` and ``n_gpu_layers`` are
    the draft context's own (None: the target's threads and context size; the GPU rule of --n-gpu-layers)."""

    model: Path | None = None
    layers: int | None = None
    threads: int | None = None
    n_ctx: int | None = None
    n_gpu_layers: int | None = None

    def check(self) -> None:
        """Usage errors, before anything is loaded."""
        if (self.model is None) == (self.layers is None):
            raise UsageError(
                "give the draft model once: --draft-model PATH.gguf (a model of the target's vocabulary) or "
                "--draft-layers L (the target's first L blocks)"
            )
        if self.layers is not None and self.layers < 1:
            raise UsageError(
                f"--draft-layers must be 1 or more (blocks of the target kept), got {self.layers}"
            )
        if self.threads is not None and self.threads < 0:
            raise UsageError(f"--draft-threads must be 0 (the target's) or more, got {self.threads}")
        if self.n_ctx is not None and self.n_ctx < 1:
            raise UsageError(f"--draft-n-ctx must be a positive number of tokens, got {self.n_ctx}")

    def identity(self) -> str:
        """How method keys name this draft: ``exitL`` for the target's early-exit copy, else the first 12 hex
        digits of the draft file's SHA-256."""
        if self.layers is not None:
            return f"exit{self.layers}"
        assert self.model is not None
        if not self.model.is_file():
            raise UsageError(f"draft model {self.model} does not exist; pass --draft-model PATH.gguf")
        return cached_sha256(self.model)[:12]


@dataclass
class DraftModel:
    """The loaded draft: its backend, its file and, for an early-exit copy, what it was cut from."""

    backend: LlamaBackend
    path: Path
    early_exit: EarlyExit | None

    def describe(self) -> dict[str, Any]:
        """What a run records about the draft model (config.draft_model)."""
        backend = self.backend
        out: dict[str, Any] = {
            "path": str(self.path),
            "file": self.path.name,
            "sha256": cached_sha256(self.path),
            "name": backend.info.name,
            "architecture": backend.info.architecture,
            "n_params": backend.info.n_params,
            "n_layers": backend.n_layers,
            "n_vocab": backend.n_vocab,
            "n_ctx": backend.n_ctx,
            "threads": backend.n_threads,
            "n_gpu_layers": backend.n_gpu_layers,
        }
        if self.early_exit is not None:
            out["early_exit"] = self.early_exit.to_json()
        return out

    def close(self) -> None:
        self.backend.close()


def load_draft(
    settings: DraftSettings,
    target: LlamaBackend,
    target_path: Path,
    threads: ThreadChoice,
    target_gpu_layers: int | None = None,
    exact: bool = False,
) -> DraftModel:
    """Load the draft model beside ``target`` (building the early-exit copy first, once, for --draft-layers)
    and refuse it, naming the first difference, when its vocabulary is not the target's. Without
    --draft-n-gpu-layers the draft offloads as --n-gpu-layers (``target_gpu_layers``) asks. ``exact``: the
    draft runs in exact mode too (its drafts then do not depend on the batches it shares)."""
    settings.check()
    if settings.layers is not None:
        early: EarlyExit | None = early_exit_copy(target_path, settings.layers)
        assert early is not None
        path = early.path
        option = f"--draft-layers {settings.layers}"
    else:
        assert settings.model is not None
        path = settings.model
        early = read_early_exit(path) if path.is_file() else None
        option = f"--draft-model {path}"
    backend = LlamaBackend(
        path,
        n_ctx=settings.n_ctx or target.n_ctx,
        n_threads=settings.threads or threads.threads,
        n_gpu_layers=settings.n_gpu_layers if settings.n_gpu_layers is not None else target_gpu_layers,
        thread_choice=threads,
        exact=exact,
    )
    difference = first_difference(target, backend)
    if difference is not None:
        backend.close()
        raise UsageError(
            f"{option}: its vocabulary is not the one of {target_path.name}, so its tokens cannot be "
            f"verified as the target's (llama.cpp's speculative decoding refuses such a pair too): "
            f"{difference}. Use a draft of the same model family, or --draft-layers L"
        )
    backend.warm_up()
    return DraftModel(backend, path, early)


def pair(targets: Sequence[KVSequence], drafts: Sequence[KVSequence]) -> None:
    """Give each target sequence the draft sequence of the same index as its partner."""
    if len(targets) != len(drafts):
        raise ValueError(f"{len(targets)} target sequences but {len(drafts)} draft sequences")
    for target, draft in zip(targets, drafts, strict=True):
        target.partner = draft


def attach_draft(methods: Sequence[Method], settings: DraftSettings | None) -> list[Method]:
    """``methods`` with the draft model named in the keys of those that draft with it; a usage error when a
    method needs a draft model and none is given, or one is given and no method uses it."""
    users = [m for m in methods if m.uses_draft_model]
    if settings is None:
        if users:
            raise UsageError(
                f"--method {users[0].name} drafts with a draft model: pass --draft-model PATH.gguf (a model "
                "with the target's vocabulary) or --draft-layers L (the target's first L blocks)"
            )
        return list(methods)
    if not users:
        raise UsageError(
            "--draft-model, --draft-layers and the --draft-* options give a draft model, and no method here "
            "drafts with one: pass --method spec or bild, or drop them"
        )
    settings.check()
    name = settings.identity()
    out = []
    for method in methods:
        if method.uses_draft_model and method.draft != name:
            if method.draft is not None:
                raise UsageError(
                    f"method {method.key} names draft model {method.draft}, but the draft is {name}"
                )
            method = dataclasses.replace(method, draft=name)
        out.append(method)
    return out

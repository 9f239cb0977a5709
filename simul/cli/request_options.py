"""The decoding and scoring options of `simul eval`, `sweep` and `bench`, and the evaluation request they
make.

One group (:class:`RequestOptions`, given to a command by simul.cli.option_groups.with_group) holds every
option of the request but the methods: the streams, the engine, the run directory and the scoring. The three
commands take it whole, so each offers every option that applies to it and checks it the same way; bench
leaves out the ones that do not apply to a speed measurement (:data:`NOT_FOR_BENCH`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from simul.cli.common import (
    CometModelOpt,
    NeTokenizerOpt,
    OverwriteOpt,
    err_console,
    one_of,
    out_option,
)
from simul.cli.running import engine_settings
from simul.cli.scoring_options import RequireCometOpt, ResegmentOpt
from simul.common.errors import UsageError
from simul.common.paths import default_streams_file
from simul.decoding.draft_model import DraftSettings
from simul.decoding.engine import EngineSettings
from simul.decoding.longform import WindowPolicy
from simul.decoding.stream import MAX_LEN_RATIO, MAX_LEN_SLACK
from simul.metrics.comet import DEFAULT_COMET_MODEL, NO_COMET
from simul.metrics.scoring import DEFAULT_RESEGMENT
from simul.request.methods import Method
from simul.request.model_catalog import resolve_model_option
from simul.request.templates import TEMPLATE_NAMES
from simul.runs.evaluation import EvalRequest

if TYPE_CHECKING:
    TemplateName = str
else:
    TemplateName = one_of(TEMPLATE_NAMES)

DEFAULT_COMET_BATCH_SIZE = 16


@dataclass(frozen=True)
class RequestOptions:
    """Every option of an evaluation request but its methods, as eval, sweep and bench get them."""

    streams: Annotated[
        Path | None,
        typer.Option("--streams", help="Stream file (JSONL). Default: the shipped FLORES en->de sample."),
    ] = None
    limit: Annotated[int | None, typer.Option("--limit", help="Evaluate only the first N streams.")] = None
    model: Annotated[
        Path | None,
        typer.Option(
            "--model",
            help="A GGUF model file, or a model name (`simul models list`: qwen2.5-coder-1.5b, "
            "qwen2.5-coder-0.5b, gemma-3-270m). Default: the embedded gemma-3-270m.",
        ),
    ] = None
    template: Annotated[TemplateName, typer.Option("--template", help="Prompt template.")] = "auto"
    threads: Annotated[
        int | None,
        typer.Option(
            "--threads",
            help="CPU threads for llama.cpp (0 or unset: auto, the physical cores this process may use, "
            "within its cgroup CPU quota, at most 8 and one per 16 MiB of model, chosen at start. In exact "
            "mode auto threads then follow "
            "the load between forward passes (down to 1 when passes slow down, back when the load ends; "
            "outputs stay the same, each change is in run.json). Fast mode keeps the start's count, since "
            "there the thread count can change outputs.)",
        ),
    ] = None
    n_ctx: Annotated[
        int,
        typer.Option(
            "--n-ctx", help="Context window in tokens (at most the model's training length, which caps it)."
        ),
    ] = 2048
    max_len_ratio: Annotated[
        float,
        typer.Option(
            "--max-len-ratio",
            help="Each update's output length cap: this many tokens per source token, plus --max-len-slack "
            "(decoding stops there or at the model's end of turn).",
        ),
    ] = MAX_LEN_RATIO
    max_len_slack: Annotated[
        int,
        typer.Option(
            "--max-len-slack",
            help="Tokens added to the length cap (--max-len-ratio 0 --max-len-slack N: N tokens an update, "
            "whatever the source, as llama.cpp's -n N).",
        ),
    ] = MAX_LEN_SLACK
    fuse: Annotated[
        bool,
        typer.Option(
            "--fuse/--no-fuse",
            help="Evaluate the rest of the prompt and the draft in one forward pass (the pass then counts as "
            "generation time).",
        ),
    ] = False
    verify_chunk: Annotated[
        int,
        typer.Option(
            "--verify-chunk", help="Verify drafts in chunks of N tokens, stopping at a rejection (0: whole)."
        ),
    ] = 0
    max_window: Annotated[
        int,
        typer.Option(
            "--max-window",
            help="Long-form streams (whole talks): cut the source into windows at sentence ends, and after "
            "this many words when none comes; only the open window is re-translated.",
        ),
    ] = 30
    context_sentences: Annotated[
        int,
        typer.Option(
            "--context-sentences",
            help="Long-form streams: committed sentence pairs put before the open window in the prompt.",
        ),
    ] = 1
    n_gpu_layers: Annotated[
        int | None,
        typer.Option(
            "--n-gpu-layers",
            help="Model layers to offload to the GPU (-1: all, 0: CPU only). Default: all when this "
            "llama-cpp-python build supports GPU offload, else 0.",
        ),
    ] = None
    exact: Annotated[
        bool | None,
        typer.Option(
            "--exact/--no-exact",
            help="Exact mode: every forward pass gives each row the logits a one-token pass gives it, so "
            "methods that keep only the model's greedy tokens reproduce re-translation and --parallel keeps "
            "outputs (needs simul's patched llama.cpp on the CPU). Default: exact where it can be had, else "
            "fast, with the reason in run.json.",
        ),
    ] = None
    parallel: Annotated[
        int,
        typer.Option(
            "--parallel",
            help="Decode N streams at once, their forward passes batched in one context (per-update times "
            "are then batched; throughput is reported). 1 keeps single-stream decoding.",
        ),
    ] = 1
    draft_model: Annotated[
        Path | None,
        typer.Option(
            "--draft-model",
            help="A draft model (a GGUF file or a model name, as --model) with the model's vocabulary, "
            "loaded beside it for --method spec.",
        ),
    ] = None
    draft_layers: Annotated[
        int | None,
        typer.Option(
            "--draft-layers",
            help="Draft with the model's own first L blocks, final norm and output head (an early-exit copy, "
            "made once and cached by the model's SHA-256) instead of --draft-model.",
        ),
    ] = None
    draft_threads: Annotated[
        int | None,
        typer.Option("--draft-threads", help="CPU threads of the draft model (0 or unset: --threads')."),
    ] = None
    draft_n_ctx: Annotated[
        int | None,
        typer.Option("--draft-n-ctx", help="The draft model's context window (default: the model's)."),
    ] = None
    draft_n_gpu_layers: Annotated[
        int | None,
        typer.Option(
            "--draft-n-gpu-layers",
            help="Draft model layers to offload to the GPU (-1: all, 0: CPU only; default: as "
            "--n-gpu-layers).",
        ),
    ] = None
    out: Annotated[
        Path | None, out_option("Write the run directory here (without it the run is not kept).")
    ] = None
    resume: Annotated[
        bool, typer.Option("--resume/--no-resume", help="Continue an unfinished run in -o/--out.")
    ] = False
    overwrite: OverwriteOpt = False
    ne_tokenizer: NeTokenizerOpt = "auto"
    resegment: ResegmentOpt = DEFAULT_RESEGMENT
    comet_model: CometModelOpt = DEFAULT_COMET_MODEL
    # None tells "given" from the default, for the warning about a batch size without COMET
    comet_batch_size: Annotated[
        int | None,
        typer.Option("--comet-batch-size", help=f"COMET batch size (default {DEFAULT_COMET_BATCH_SIZE})."),
    ] = None
    require_comet: RequireCometOpt = False

    def engine(self) -> EngineSettings:
        """The engine settings, checked before anything is loaded (usage errors)."""
        return engine_settings(
            resolve_model_option(self.model),
            self.template,
            self.n_ctx,
            self.threads,
            self.fuse,
            self.verify_chunk,
            self.n_gpu_layers,
            self.parallel,
            window=WindowPolicy(self.max_window, self.context_sentences),
            draft=self.draft(),
            exact=self.exact,
            max_len=(self.max_len_ratio, self.max_len_slack),
        )

    def draft(self) -> DraftSettings | None:
        """The draft model's settings (None without --draft-model or --draft-layers; its own options are then
        refused, never ignored)."""
        if self.draft_model is None and self.draft_layers is None:
            given = [
                option
                for option, value in (
                    ("--draft-threads", self.draft_threads),
                    ("--draft-n-ctx", self.draft_n_ctx),
                    ("--draft-n-gpu-layers", self.draft_n_gpu_layers),
                )
                if value is not None
            ]
            if given:
                raise UsageError(
                    f"{', '.join(given)} set(s) how the draft model runs, and there is none: pass "
                    "--draft-model PATH.gguf or --draft-layers L, or drop them"
                )
            return None
        settings = DraftSettings(
            resolve_model_option(self.draft_model, "--draft-model"),
            self.draft_layers,
            self.draft_threads,
            self.draft_n_ctx,
            self.draft_n_gpu_layers,
        )
        settings.check()
        return settings

    def request(
        self, methods: list[Method], engine: EngineSettings | None = None, **extra: Any
    ) -> EvalRequest:
        """The evaluation request of ``methods`` (``engine``: settings made from these options, changed);
        ``extra`` sets the other fields of EvalRequest (the sweep's extra_config)."""
        if self.comet_batch_size is not None and self.comet_model.strip().lower() in NO_COMET:
            err_console.print("[yellow]warning:[/] --comet-batch-size does nothing with --comet-model none")
        batch = DEFAULT_COMET_BATCH_SIZE if self.comet_batch_size is None else self.comet_batch_size
        same = (
            "limit",
            "out",
            "resume",
            "overwrite",
            "ne_tokenizer",
            "comet_model",
            "require_comet",
            "resegment",
        )
        return EvalRequest(
            streams_path=self.streams or default_streams_file(),
            methods=methods,
            engine=engine or self.engine(),
            comet_batch_size=batch,
            **{name: getattr(self, name) for name in same},  # the fields of EvalRequest of the same name
            **extra,
        )

    def without_comet(self) -> RequestOptions:
        """These options with COMET left out (bench: a speed measurement; `simul score --comet-model` adds
        it to the run directory later)."""
        return dataclasses.replace(self, comet_model="none", comet_batch_size=None, require_comet=False)


# What does not apply to `simul bench`: its timings come from one process (no --resume), and COMET would only
# add minutes after them (`simul score RUN --comet-model ...` adds it to the run directory).
NOT_FOR_BENCH = ("resume", "comet_model", "comet_batch_size", "require_comet")

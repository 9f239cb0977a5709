"""What every command shares: the stderr console, error handling at the edge, and output helpers."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console

from simul.errors import SimulError, UsageError
from simul.metrics.tokenizers import NE_TOKENIZER_CHOICES

P = ParamSpec("P")
R = TypeVar("R")

# Humans read stderr (tables, progress, warnings); machines read stdout (--json) and files.
err_console = Console(stderr=True, highlight=False)
if not err_console.is_terminal and "COLUMNS" not in os.environ:
    # Logs and CI output: wide enough for the results tables instead of Rich's 80-column default.
    err_console.width = 200


def handle_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn the domain exception into a one-line message and an exit code (1 error, 2 usage)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except UsageError as exc:
            err_console.print(f"[bold red]error:[/] {_escape(str(exc))}", soft_wrap=True)
            raise typer.Exit(code=2) from None
        except SimulError as exc:
            err_console.print(f"[bold red]error:[/] {_escape(str(exc))}", soft_wrap=True)
            raise typer.Exit(code=1) from None

    return wrapper


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, sort_keys=True, indent=2) + "\n")
    sys.stdout.flush()


def show_progress(quiet: bool) -> bool:
    return not quiet and err_console.is_terminal


# Options shared by the commands that decode (eval, sweep, bench): one definition each.
ModelOpt = Annotated[
    Path | None, typer.Option("--model", help="A GGUF model. Default: the embedded gemma-3-270m.")
]
TemplateOpt = Annotated[
    str, typer.Option("--template", help="Prompt template: auto, chat, fewshot, plain, tower, qwen3.")
]
LimitOpt = Annotated[int | None, typer.Option("--limit", help="Evaluate only the first N streams.")]
ThreadsOpt = Annotated[int | None, typer.Option("--threads", help="CPU threads for llama.cpp.")]
NCtxOpt = Annotated[int, typer.Option("--n-ctx", help="Context window in tokens.")]
FuseOpt = Annotated[
    bool,
    typer.Option(
        "--fuse/--no-fuse",
        help="Evaluate the rest of the prompt and the draft in one forward pass (the pass then counts as "
        "generation time).",
    ),
]
VerifyChunkOpt = Annotated[
    int,
    typer.Option(
        "--verify-chunk", help="Verify drafts in chunks of N tokens, stopping at a rejection (0: whole)."
    ),
]
NGpuLayersOpt = Annotated[
    int | None,
    typer.Option(
        "--n-gpu-layers",
        help="Model layers to offload to the GPU (-1: all, 0: CPU only). Default: all when this "
        "llama-cpp-python build supports GPU offload, else 0.",
    ),
]
ParallelOpt = Annotated[
    int,
    typer.Option(
        "--parallel",
        help="Decode N streams at once, their forward passes batched in one context (per-update times are "
        "then batched; throughput is reported). 1 keeps single-stream decoding.",
    ),
]
ResumeOpt = Annotated[bool, typer.Option("--resume/--no-resume", help="Continue an unfinished run in --out.")]
OverwriteOpt = Annotated[
    bool, typer.Option("--overwrite/--no-overwrite", help="Replace an existing run in --out.")
]
CometModelOpt = Annotated[
    str, typer.Option("--comet-model", help="COMET model name or checkpoint path; 'none' to skip.")
]
NeTokenizerOpt = Annotated[
    str,
    typer.Option("--ne-tokenizer", help=f"Tokenizer for NE and latency: {', '.join(NE_TOKENIZER_CHOICES)}."),
]

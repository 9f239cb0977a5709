"""What every command shares: the stderr console, error handling at the edge, and output helpers."""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console

from simul.common.errors import SimulError, Terminated, UsageError
from simul.common.safe_text import markup
from simul.metrics.tokenizers import NE_TOKENIZER_CHOICES

P = ParamSpec("P")
R = TypeVar("R")

# Humans read stderr (tables, progress, warnings); machines read stdout (--json) and files.
# Data text printed here goes through simul.common.safe_text (markup escaped, control characters made
# visible);
# emoji codes such as :smile: in data stay text.
err_console = Console(stderr=True, highlight=False, emoji=False)
if not err_console.is_terminal and "COLUMNS" not in os.environ:
    # Logs and CI output: wide enough for the results tables instead of Rich's 80-column default.
    err_console.width = 200


EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM


def interrupt_exit(exc: KeyboardInterrupt) -> tuple[str, int]:
    """How a stop is named in messages, and the exit code: Ctrl-C (SIGINT) or SIGTERM."""
    if isinstance(exc, Terminated):
        return "terminated (SIGTERM)", EXIT_TERMINATED
    return "interrupted", EXIT_INTERRUPTED


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` (a KeyboardInterrupt), so a run stopped by a
    scheduler or ``kill`` is wound down like one stopped with Ctrl-C: marked interrupted, finished streams
    kept, a message, and exit code 143."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    owner = os.getpid()

    def on_term(signum: int, frame: FrameType | None) -> None:
        if os.getpid() != owner:
            # a forked worker (OmniSTEval's SoftSegmenter runs a multiprocessing Pool, which stops its
            # workers with SIGTERM): end quietly, as the default handler would
            os._exit(128 + signal.SIGTERM)
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def handle_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn the domain exception into a one-line message and an exit code (1 error, 2 usage); an interruption
    (Ctrl-C or SIGTERM) into a message and exit code 130 or 143; an unexpected OS error (a full disk, a
    permission) into a one-line message instead of a traceback."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with sigterm_as_interrupt():
            try:
                return func(*args, **kwargs)
            except UsageError as exc:
                err_console.print(f"[bold red]error:[/] {_escape(str(exc))}", soft_wrap=True)
                raise typer.Exit(code=2) from None
            except SimulError as exc:
                err_console.print(f"[bold red]error:[/] {_escape(str(exc))}", soft_wrap=True)
                raise typer.Exit(code=1) from None
            except OSError as exc:
                where = f" ({exc.filename})" if exc.filename else ""
                err_console.print(
                    f"[bold red]error:[/] {_escape((exc.strerror or str(exc)) + where)}", soft_wrap=True
                )
                raise typer.Exit(code=1) from None
            except KeyboardInterrupt as exc:
                what, code = interrupt_exit(exc)
                err_console.print(
                    f"[yellow]{what}[/] before the command finished; files are written whole or not at all, "
                    "so nothing was left half-written"
                )
                raise typer.Exit(code=code) from None

    return wrapper


def _escape(text: str) -> str:
    return markup(text)


def warn_being_written(run_dir: Path, writer: str | None, doing: str) -> None:
    """The warning of a reader that goes on while another process writes the run (its lock's holder)."""
    if writer:
        err_console.print(
            f"[yellow]warning:[/] {markup(run_dir)} is being written by {markup(writer)}; "
            f"{doing} the streams finished so far",
            soft_wrap=True,
        )


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, sort_keys=True, indent=2) + "\n")
    sys.stdout.flush()


def show_progress(quiet: bool) -> bool:
    """A live progress bar: on a terminal, unless --quiet (elsewhere plain progress lines are printed)."""
    return not quiet and err_console.is_terminal


# Options shared by the commands that decode (eval, sweep, bench): one definition each.
ModelOpt = Annotated[
    Path | None, typer.Option("--model", help="A GGUF model. Default: the embedded gemma-3-270m.")
]
TemplateOpt = Annotated[
    str, typer.Option("--template", help="Prompt template: auto, chat, fewshot, plain, tower, qwen3.")
]
LimitOpt = Annotated[int | None, typer.Option("--limit", help="Evaluate only the first N streams.")]
ThreadsOpt = Annotated[
    int | None,
    typer.Option(
        "--threads",
        help="CPU threads for llama.cpp (0 or unset: auto, the physical cores this process may use, within "
        "its cgroup CPU quota, at most 8; never the machine's momentary load).",
    ),
]
NCtxOpt = Annotated[
    int,
    typer.Option(
        "--n-ctx", help="Context window in tokens (at most the model's training length, which caps it)."
    ),
]
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
MaxWindowOpt = Annotated[
    int,
    typer.Option(
        "--max-window",
        help="Long-form streams (whole talks): cut the source into windows at sentence ends, and after this "
        "many words when none comes; only the open window is re-translated.",
    ),
]
ContextSentencesOpt = Annotated[
    int,
    typer.Option(
        "--context-sentences",
        help="Long-form streams: committed sentence pairs put before the open window in the prompt.",
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


def check_resegment(name: str) -> str:
    """A --resegment choice, checked before any work (a usage error otherwise)."""
    from simul.metrics.scoring import RESEGMENTERS

    if name not in RESEGMENTERS:
        raise UsageError(f"unknown --resegment {name!r}; choose one of: {', '.join(RESEGMENTERS)}")
    return name


ResegmentOpt = Annotated[
    str,
    typer.Option(
        "--resegment",
        help="Long-form runs: re-segment each talk's output onto its reference segments with OmniSTEval's "
        "softsegmenter or with mwer (mweralign, simulstream's choice) before scoring.",
    ),
]
NeTokenizerOpt = Annotated[
    str,
    typer.Option(
        "--ne-tokenizer",
        help=f"Unit of NE: {', '.join(NE_TOKENIZER_CHOICES)} (word: whitespace words; char: characters "
        "without spaces). Latency counts target words (characters for zh/ja) whatever this is.",
    ),
]

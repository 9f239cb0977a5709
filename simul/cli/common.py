"""What every command shares: the stderr console, error handling at the edge, and output helpers."""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Annotated, Any, Literal, ParamSpec, TypeVar

import typer
from rich.console import Console

from simul.common.errors import SimulError, Terminated, UsageError
from simul.common.safe_text import markup
from simul.metrics.comet import COMET_OPTION
from simul.metrics.tokenizers import NeTokenizer

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


def one_of(values: Sequence[str]) -> Any:
    """A Literal type over ``values``, for a closed set known only at run time (the prompt templates, the
    re-segmenters; a fixed set is a Literal type in its own module): typer makes it a click choice, which
    --help lists and which is checked before the command runs. Annotations use it at run time only (mypy sees
    ``str``):

        if TYPE_CHECKING:
            Unit = str
        else:
            Unit = one_of(UNITS)
    """
    return Literal[tuple(values)]


# One spelling per concept across every command (tests/test_cli_spelling.py walks them all): the path a
# command writes is -o/--out, machine-readable output on stdout is the --json flag (--format names the format
# of a data file read or written), --quiet/-q drops progress and tables.
OUT_NAMES = ("--out", "-o")


def out_option(help: str) -> Any:
    """The -o/--out option, with the command's own words for what is written there."""
    return typer.Option(*OUT_NAMES, help=help)


JsonOpt = Annotated[bool, typer.Option("--json", help="Print the results as JSON on stdout.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or table.")]
OverwriteOpt = Annotated[
    bool, typer.Option("--overwrite/--no-overwrite", help="Replace an existing run in -o/--out.")
]
CometModelOpt = Annotated[
    str, typer.Option(COMET_OPTION, help="COMET model name or checkpoint path; 'none' to skip.")
]
NeTokenizerOpt = Annotated[
    NeTokenizer,
    typer.Option(
        "--ne-tokenizer",
        help="Unit of NE (word: whitespace words; char: characters without spaces). Latency counts target "
        "words (characters for zh/ja) whatever this is.",
    ),
]

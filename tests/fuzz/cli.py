"""Run simul's command line in-process (fast enough for 10,000 inputs) and check what a user would see.

The properties every reader must keep, whatever the input:

* the command ends with one of its documented exit codes, never with an exception (a traceback);
* nothing it prints can drive the terminal (no control characters, no bidi overrides: simul.common.safe_text);
* an error says which file is wrong (and the line, where the checks ask for it);
* an error leaves no output file and no temporary file behind.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
import typer.main
from typer.testing import CliRunner

from simul.cli import app
from simul.common.safe_text import has_unsafe

# Built once: typer's CliRunner.invoke rebuilds the click command on every call (about 0.15 s).
_COMMAND = typer.main.get_command(app)
_RUNNER = CliRunner()


@dataclass
class Outcome:
    args: list[str]
    code: int
    stdout: str
    stderr: str
    error: BaseException | None

    def describe(self) -> str:
        where = "".join(traceback.format_exception(self.error)) if self.error is not None else ""
        return (
            f"simul {' '.join(self.args)}\nexit {self.code}\n--- stderr\n{self.stderr[-3000:]}\n"
            f"--- stdout\n{self.stdout[-1000:]}\n{where}"
        )


def invoke(args: Sequence[str]) -> Outcome:
    """Run ``simul ARGS`` in-process, as typer's CliRunner does, with stdout and stderr captured."""
    error: BaseException | None = None
    code = 0
    with _RUNNER.isolation() as (out, err, _):
        try:
            _COMMAND.main(args=list(args), prog_name="simul")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception as exc:  # what the property forbids: an exception reaching the user
            error, code = exc, 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    return Outcome(list(args), code, stdout, stderr, error)


def _callbacks() -> dict[str, Callable[..., Any]]:
    from simul.cli.streams_cmd import streams_app

    found = {info.name or "": info.callback for info in app.registered_commands if info.callback}
    for info in streams_app.registered_commands:
        if info.callback is not None:
            found[f"streams {info.name}"] = info.callback
    return found


_CALLBACKS = _callbacks()


def call(command: str, **options: Any) -> Outcome:
    """Run ``simul COMMAND`` by calling its function with ``options`` (the other options at their
    defaults): the command's own error handling (simul.cli.common.handle_errors) decides the exit code as
    on the command line; only the parsing of the words of the command line, the same for every input, is
    skipped. About twice as fast as :func:`invoke` for commands with many options."""
    args = [*command.split(), *(f"--{k.replace('_', '-')}={v}" for k, v in options.items())]
    out, err = io.StringIO(), io.StringIO()
    error: BaseException | None = None
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            _CALLBACKS[command](**options)
        except typer.Exit as exc:
            code = exc.exit_code
        except Exception as exc:  # what the property forbids: an exception reaching the user
            error, code = exc, 1
    return Outcome(args, code, out.getvalue(), err.getvalue(), error)


def check(
    outcome: Outcome,
    names: Iterable[Path | str],
    codes: Sequence[int] = (0, 1, 2),
    line: bool = False,
) -> None:
    """Assert the properties above; ``names`` are the input files an error may name (one of them must be
    named), ``line`` asks for ``file:N`` in the message."""
    assert outcome.error is None, f"traceback:\n{outcome.describe()}"
    assert outcome.code in codes, f"unexpected exit code:\n{outcome.describe()}"
    assert not has_unsafe(outcome.stderr), f"raw control characters reach the terminal:\n{outcome.describe()}"
    if outcome.code in (1, 2) and not outcome.stderr.startswith("refused:"):
        start = outcome.stderr.find("error:")
        assert start >= 0, f"no error message:\n{outcome.describe()}"
        message = " ".join(outcome.stderr[start:].split())  # Rich may wrap a long message
        shown = [str(name) for name in names]
        assert any(name in message for name in shown), (
            f"the error names none of {shown}:\n{outcome.describe()}"
        )
        if line:
            assert (
                any(re.search(re.escape(name) + r":\d+", message) for name in shown) or "holds no" in message
            ), f"the error names no line:\n{outcome.describe()}"


def _no_constant(name: str) -> Any:
    raise AssertionError(f"{name} in the JSON printed: not JSON (RFC 8259), which other tools refuse")


def strict_json(text: str) -> Any:
    """What a command printed as JSON, read as other tools read it: NaN and Infinity are not JSON."""
    return json.loads(text, parse_constant=_no_constant)


def leftovers(folder: Path, expected: Iterable[Path] = ()) -> list[Path]:
    """Files in ``folder`` (recursively) other than ``expected``: outputs or temporary files left behind."""
    keep = {p.resolve() for p in expected}
    return [p for p in folder.rglob("*") if p.is_file() and p.resolve() not in keep]

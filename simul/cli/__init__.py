"""The `simul` command line.

Each command's module is imported only when that command runs (or shows its own --help), as
lm-evaluation-harness loads its model backends by name: `simul score` reads a run directory without importing
the decoder, llama.cpp, torch or Ray, and `simul --help` lists every command from COMMANDS without importing
any of them. A command module adds its command with ``register(app)``; COMMANDS names the module and repeats
the first paragraph of the command's help for the listing (tests/test_light_imports.py checks that it
matches).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from simul import __version__


@dataclass(frozen=True)
class LazyCommand:
    name: str
    module: str  # simul.cli.<module> has register(app), which adds the command
    help: str  # the first paragraph of the command's help, for the listing of `simul --help`


# in the order `simul --help` lists them
COMMANDS = (
    LazyCommand(
        "eval",
        "eval_cmd",
        "Decode streams with RT and the chosen method and report quality, stability and speed.",
    ),
    LazyCommand(
        "score",
        "score_cmd",
        "Recompute every metric from a run directory (to add COMET, or to check a run).",
    ),
    LazyCommand(
        "export",
        "export_cmd",
        "Write what was displayed in SimulEval's, simulstream's or OmniSTEval's format, to rescore a run "
        "elsewhere.",
    ),
    LazyCommand(
        "ingest",
        "ingest_cmd",
        "Score outputs simul did not decode: write a complete run directory that score, diff, show and "
        "export read like any other.",
    ),
    LazyCommand(
        "diff",
        "diff_cmd",
        "Compare two runs; exit 3 when a metric regresses beyond its threshold (and beyond noise).",
    ),
    LazyCommand(
        "rank",
        "rank_cmd",
        "Rank systems as IWSLT 2026 does: latency band from LongYAAL, then quality, with bootstrap CIs.",
    ),
    LazyCommand(
        "sweep",
        "sweep_cmd",
        "Sweep the SSBD bias (Table 3) and mask-k vs display-only mask-k (Table 4) over the same streams.",
    ),
    LazyCommand(
        "merge",
        "merge_cmd",
        "Check that shard runs belong together and merge them into one run (COMET is computed here).",
    ),
    LazyCommand(
        "show",
        "show_cmd",
        "Show how a stream's translation evolved: reused, new, erased and masked text per step.",
    ),
    LazyCommand(
        "bench",
        "bench_cmd",
        "Measure decoding speed of RT, SSBD and CD on the same streams, and where the time goes.",
    ),
    LazyCommand(
        "streams",
        "streams_cmd",
        "Build stream files (FLORES, ACL 60/60, recognizer partials) and inspect them.",
    ),
    LazyCommand(
        "models",
        "models_cmd",
        "The models simul runs by name (list, path), and work on model files (truncate: an early-exit copy "
        "to draft with).",
    ),
)
_BY_NAME = {command.name: command for command in COMMANDS}


def load_command(name: str) -> Any:
    """Import the module of command ``name`` and build its click command, with the root's help settings."""
    # __import__ is the import statement's own machinery: unlike importlib.import_module, what it loads is
    # listed by `python -X importtime`
    module = __import__(f"simul.cli.{_BY_NAME[name].module}", fromlist=["register"])
    holder = typer.Typer(rich_markup_mode=None, add_completion=False)
    module.register(holder)
    return typer.main.get_group(holder).commands[name]


class LazyGroup(TyperGroup):
    """A command group whose commands are imported when first looked up by name.

    The click classes in these signatures are, in the typer pinned here (0.29), typer's private copy of click:
    they are typed Any so that nothing here imports a private module."""

    listing = False  # while True, get_command answers with a stand-in that only knows the command's help

    def list_commands(self, ctx: Any) -> list[str]:
        own = [name for name in super().list_commands(ctx) if name not in _BY_NAME]
        return [command.name for command in COMMANDS] + own

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None or cmd_name not in _BY_NAME:
            return command
        if self.listing:
            return TyperCommand(cmd_name, help=_BY_NAME[cmd_name].help)
        command = load_command(cmd_name)
        self.add_command(command, cmd_name)
        return command

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        self.listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self.listing = False

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        # typer suggests only among the commands loaded so far: suggest among all of them, in its words
        name = args[0] if args else ""
        known = self.list_commands(ctx)
        if self.suggest_commands and name and name not in known and not name.startswith("-"):
            matches = get_close_matches(name, known)
            if matches and not ctx.resilient_parsing and ctx.token_normalize_func is None:
                ctx.fail(f"No such command {name!r}. Did you mean {', '.join(map(repr, matches))}?")
        return super().resolve_command(ctx, args)


app = typer.Typer(
    name="simul",
    cls=LazyGroup,
    help="Evaluate simultaneous machine translation: re-translation vs self-speculative biased decoding.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"simul {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """simul: evaluate simultaneous MT by re-translation and SSBD on llama.cpp models."""


def main() -> None:
    argv = sys.argv[1:]
    if "--ray" in argv:  # `--ray` without an address means a local instance (simul.cli.scaleout)
        from simul.cli.scaleout import optional_ray_value

        argv = optional_ray_value(argv)
    app(args=argv)

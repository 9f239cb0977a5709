"""The `simul` command line."""

from __future__ import annotations

from typing import Annotated

import typer

from simul import __version__

app = typer.Typer(
    name="simul",
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


def _register() -> None:
    from simul.cli import (
        bench_cmd,
        diff_cmd,
        eval_cmd,
        export_cmd,
        ingest_cmd,
        merge_cmd,
        score_cmd,
        show_cmd,
        streams_cmd,
        sweep_cmd,
    )

    eval_cmd.register(app)
    score_cmd.register(app)
    export_cmd.register(app)
    ingest_cmd.register(app)
    diff_cmd.register(app)
    sweep_cmd.register(app)
    merge_cmd.register(app)
    show_cmd.register(app)
    bench_cmd.register(app)
    streams_cmd.register(app)


_register()


def main() -> None:
    from simul.cli.scaleout import main_argv

    app(args=main_argv())

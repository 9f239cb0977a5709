"""`simul models`: work on model files. `simul models truncate MODEL.gguf --layers L -o DRAFT.gguf` writes an
early-exit copy (the first L blocks, the final norm and the output head: simul.decoding.early_exit), a draft
model of the same vocabulary for --draft-model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simul.cli.aliases import command_class
from simul.cli.common import JsonOpt, QuietOpt, err_console, handle_errors, out_option, print_json
from simul.common.errors import UsageError
from simul.common.safe_text import markup

models_app = typer.Typer(
    name="models",
    help="Work on model files: write an early-exit copy of a model to draft with.",
    no_args_is_help=True,
)


@handle_errors
def truncate_command(
    model: Annotated[Path, typer.Argument(help="The GGUF model to copy.")],
    layers: Annotated[
        int, typer.Option("--layers", help="Transformer blocks to keep, from the first (1 .. blocks - 1).")
    ],
    out: Annotated[Path, out_option("The early-exit copy (a GGUF file) to write.")],
    overwrite: Annotated[
        bool, typer.Option("--overwrite/--no-overwrite", help="Replace an existing file at -o/--out.")
    ] = False,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Write a copy of MODEL keeping its first L transformer blocks, the final norm and the output head.

    The copy drafts for MODEL with --draft-model (same vocabulary, no training: the early-exit idea of
    SpecBound, LayerSkip and Draft & Verify); --draft-layers L makes and caches the same copy by itself.
    Refused (exit 2) when L is not below the model's block count, or for an architecture whose tensors simul
    cannot map.
    """
    from simul.decoding.early_exit import truncate_model

    if out.exists() and not overwrite:
        raise UsageError(f"{out} exists; pass --overwrite to replace it, or another -o/--out")
    if out.resolve() == model.resolve():
        raise UsageError(f"-o/--out {out} is the model itself; write the copy elsewhere")
    copy = truncate_model(model, layers, out)
    if as_json:
        print_json({"path": str(copy.path), **copy.to_json()})
    elif not quiet:
        err_console.print(
            f"wrote {markup(copy.path)}: the first {copy.layers} of {copy.source_blocks} blocks of "
            f"{markup(model.name)} ({copy.architecture}), its final norm and output head",
            soft_wrap=True,
        )


models_app.command("truncate", cls=command_class())(truncate_command)


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models")

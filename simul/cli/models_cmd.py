"""`simul models`: the models simul runs by name, and work on model files.

`simul models list` shows every name ``--model`` takes, what it is, whether its parts are installed and
joined, and the install line of each that is not; `simul models path NAME` joins a named model on first use
and prints its file (for tools that take a GGUF path). `simul models truncate MODEL.gguf --layers L -o
DRAFT.gguf` writes an early-exit copy (the first L blocks, the final norm and the output head:
simul.decoding.early_exit), a draft model of the same vocabulary for --draft-model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from simul.cli.aliases import command_class
from simul.cli.common import JsonOpt, QuietOpt, err_console, handle_errors, out_option, print_json
from simul.common.errors import UsageError
from simul.common.safe_text import markup
from simul.request.model_catalog import (
    CATALOG,
    DEFAULT_NAME,
    NamedModel,
    availability,
    lookup,
    names,
    resolve,
)

models_app = typer.Typer(
    name="models",
    help="The models simul runs by name (list, path), and work on model files (truncate: an early-exit copy "
    "to draft with).",
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


def _default_row() -> dict[str, Any]:
    from simul.request.default_model import PIP_NAME, default_model_available

    installed = default_model_available()
    return {
        "name": DEFAULT_NAME,
        "title": "google/gemma-3-270m, Q4_K_M (base model; the embedded default)",
        "default": True,
        "installed": installed,
        "cached": None,
        "missing_parts": 0 if installed else 1,
        "parts": 1,
        "size": None,
        "sha256": None,
        "chat": False,
        "template": "fewshot",
        "needs": f"pip install {PIP_NAME} (or 'simul[model]')",
        "license": "Gemma Terms of Use (google/gemma-3-270m)",
    }


def _catalog_row(model: NamedModel) -> dict[str, Any]:
    found = availability(model)
    return {
        "name": model.name,
        "title": model.title,
        "default": False,
        "installed": found.installed,
        "cached": found.cached,
        "missing_parts": len(found.missing),
        "parts": model.parts,
        "size": model.size,
        "sha256": model.sha256,
        "chat": model.chat,
        "template": "chat (the model's own, with the paper's instruction)" if model.chat else "fewshot",
        "needs": model.install_line(),
        "license": model.license,
        "file": str(model.target()),
    }


@handle_errors
def list_command(as_json: JsonOpt = False) -> None:
    """Every model name --model and --draft-model take: what it is, whether it is installed, what it needs.

    A named model's parts install with its extra; the first run joins them into the model cache and checks the
    file's size and SHA-256 ("joined" below), which `simul models path NAME` also does.
    """
    rows = [_default_row(), *(_catalog_row(model) for model in CATALOG)]
    if as_json:
        print_json({"models": rows})
        return
    table = Table(title="models simul runs by name", title_justify="left", header_style="bold")
    for column in ("name", "installed", "size", "template", "needs"):
        table.add_column(column, overflow="fold")
    for row in rows:
        if row["installed"]:
            state = "yes" + (
                ", joined" if row["cached"] else ", not joined yet" if row["cached"] is False else ""
            )
            needs = "-"
        else:
            state = f"no ({row['missing_parts']} of {row['parts']} parts missing)"
            needs = row["needs"]
        size = f"{row['size'] / 1e9:.2f} GB" if row["size"] else "-"
        template = "chat" if row["chat"] else "fewshot"
        table.add_row(markup(row["name"]), state, size, template, markup(needs))
    out_console = Console(stderr=False, soft_wrap=False)
    out_console.print(table)
    for row in rows:
        out_console.print(
            f"{markup(row['name'])}: {markup(row['title'])}; {markup(row['license'])}.", soft_wrap=True
        )
    out_console.print(
        "chat: the model's own chat template with the paper's instruction (--template auto); the first use "
        "of a name joins its parts into the model cache and checks the file's size and SHA-256.",
        soft_wrap=True,
    )


@handle_errors
def path_command(
    name: Annotated[str, typer.Argument(help="A model name (simul models list).")],
) -> None:
    """Print the GGUF file of a named model, joining its parts into the cache on first use (and checking the
    joined file's size and SHA-256), for tools that take a model file."""
    if name.strip().lower() == DEFAULT_NAME:
        from simul.request.default_model import default_model_path

        path = default_model_path()
    else:
        model = lookup(name)
        if model is None:
            raise UsageError(f"unknown model name {name!r}; choose one of: {', '.join(names())}")
        path = resolve(model)
    typer.echo(str(path))


models_app.command("list", cls=command_class())(list_command)
models_app.command("path", cls=command_class())(path_command)


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models")

"""Old spellings of options, kept as hidden aliases: they still work, and each one used is named once on
stderr with its new spelling (one spelling per concept across every command, so scripts keep working).

A command made with :func:`command_class` lists its renamed options (:class:`Alias`). Before click parses the
command line, every old spelling in it is rewritten to the new one; the old spellings are not options of the
command, so ``--help`` shows only the new ones. The command line as parsed (new spellings) is kept in the
context (:func:`command_line`), for the hint that tells how to keep a run made without -o/--out.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import typer
from typer.core import TyperCommand

from simul.cli.common import err_console
from simul.common.safe_text import visible

COMMAND_LINE = "simul.command_line"  # ctx.meta key: the arguments as parsed, old spellings rewritten


@dataclass(frozen=True)
class Alias:
    """``old`` (an option that takes a value) is now spelled ``new``.

    ``values``, for an option whose values became options of their own (diff's ``--format json`` is now
    ``--json``): each old value and the words that replace the option and its value."""

    old: str
    new: str
    values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def rewrite(self, value: str) -> list[str]:
        if not self.values:
            return [self.new, value]
        if value not in self.values:
            raise typer.BadParameter(
                f"{value!r} is not one of {', '.join(map(repr, self.values))}", param_hint=f"'{self.old}'"
            )
        return list(self.values[value])

    def warning(self, value: str) -> str:
        if not self.values:
            return f"{self.old} is now spelled {self.new}; the old spelling still works for now"
        words = " ".join(self.values.get(value, ()))
        if not words:
            return (
                f"{self.old} {value} is now the default: leave it out; the old spelling still works for now"
            )
        return f"{self.old} {value} is now spelled {words}; the old spelling still works for now"


def old_spelling_warning(message: str) -> None:
    err_console.print(f"[yellow]warning:[/] {message}", soft_wrap=True, markup=True, highlight=False)


def rewrite(
    args: Sequence[str], aliases: Sequence[Alias], takes_value: set[str]
) -> tuple[list[str], list[str]]:
    """``args`` with every old spelling replaced, and one warning per old option used (in order of first use).

    ``takes_value`` names the command's options that take a value, so that a value is never mistaken for an
    option (``--name --output`` names something --output). ``--old=value`` is rewritten like ``--old value``;
    nothing after ``--`` is touched."""
    by_old = {alias.old: alias for alias in aliases}
    out: list[str] = []
    warnings: dict[str, str] = {}
    index = 0
    while index < len(args):
        word = args[index]
        if word == "--":
            out += args[index:]
            break
        name, eq, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        alias = by_old.get(name)
        if alias is None:
            out.append(word)
            if not eq and word in takes_value and index + 1 < len(args):
                out.append(args[index + 1])
                index += 1
        elif eq or index + 1 < len(args):
            value = inline if eq else args[index + 1]
            index += 0 if eq else 1
            out += alias.rewrite(value)
            warnings.setdefault(alias.old, alias.warning(value))
        elif alias.values:
            raise typer.BadParameter(
                f"needs a value, one of {', '.join(map(repr, alias.values))}", param_hint=f"'{alias.old}'"
            )
        else:
            out.append(alias.new)  # no value: click says that the new option needs one
        index += 1
    return out, list(warnings.values())


class SimulCommand(TyperCommand):
    """A command that takes the old spellings of its renamed options (``aliases``) and keeps the command line
    it parsed."""

    aliases: tuple[Alias, ...] = ()

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        takes_value = {
            name
            for param in self.get_params(ctx)
            if not getattr(param, "is_flag", True) and not getattr(param, "count", False)
            for name in (*param.opts, *param.secondary_opts)
        }
        args, warnings = rewrite(args, self.aliases, takes_value)
        for message in warnings:
            old_spelling_warning(message)
        ctx.meta[COMMAND_LINE] = [*ctx.command_path.split(), *args]
        return list(super().parse_args(ctx, args))


def command_class(*aliases: Alias) -> type[SimulCommand]:
    """The command class of a command whose options ``aliases`` were renamed."""
    return type("SimulCommand", (SimulCommand,), {"aliases": aliases})


def command_line(ctx: Any) -> list[str]:
    """The command line a SimulCommand parsed (its program and command names first)."""
    return list(ctx.meta.get(COMMAND_LINE) or ctx.command_path.split())


def keep_hint(ctx: Any) -> str:
    """What a run made without -o/--out ends with: the same command, with -o DIR to keep the run."""
    return (
        "the run was not kept (no -o/--out); to keep it, run: "
        f"{shlex.join([*command_line(ctx), '-o', 'DIR'])}"
    )


def print_keep_hint(ctx: Any) -> None:
    err_console.print(visible(keep_hint(ctx)), markup=False, highlight=False, soft_wrap=True)

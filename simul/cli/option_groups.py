"""Options that several commands share, declared once as a group.

A group is a frozen dataclass whose fields are typer options (``name: Annotated[type, typer.Option(...)] =
default``). :func:`with_group` gives a command every option of a group, after its own, and hands the command
one instance of the group instead of the separate values, so that each option is defined, checked and turned
into the request in one place (eval, sweep and bench build their evaluation request from one group). A
command leaves out, by name, the options that do not apply to it; they keep the group's defaults.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

R = TypeVar("R")


def group_parameters(group: type, omit: Iterable[str] = ()) -> list[inspect.Parameter]:
    """The group's fields as keyword-only parameters with their typer annotations, in field order."""
    hints = typing.get_type_hints(group, include_extras=True)
    fields = dataclasses.fields(group)
    left_out = set(omit)
    unknown = left_out - {f.name for f in fields}
    if unknown:
        raise TypeError(f"{group.__name__} has no option {', '.join(sorted(unknown))}")
    return [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, annotation=hints[f.name], default=f.default)
        for f in fields
        if f.name not in left_out
    ]


def with_group(
    argument: str, group: type, omit: Iterable[str] = ()
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Give a command the options of ``group`` (after its own, less ``omit``); it receives them as one
    ``argument`` holding an instance of the group. Called directly (as the fuzz tests call commands), the
    options not passed keep their defaults."""
    added = group_parameters(group, omit)

    def decorate(command: Callable[..., R]) -> Callable[..., R]:
        own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != argument]
        clash = {p.name for p in own} & {p.name for p in added}
        if clash:
            raise TypeError(f"{command.__name__} and {group.__name__} both have {', '.join(sorted(clash))}")

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> R:
            values = {p.name: kwargs.pop(p.name, p.default) for p in added}
            return command(*args, **{argument: group(**values)}, **kwargs)

        parameters = [*own, *added]
        wrapper.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
        return wrapper

    return decorate


def option_name(field_name: str) -> str:
    """How a group's field is spelled on the command line (the fields are named after their options)."""
    return "--" + field_name.replace("_", "-")


def changed(group: Any, names: Iterable[str] | None = None) -> list[str]:
    """The options of ``group`` (or only ``names`` of them) given other values than their defaults, as they
    are spelled on the command line: what a mode that does not use them refuses."""
    defaults = {f.name: f.default for f in dataclasses.fields(group)}
    wanted = list(defaults) if names is None else list(names)
    try:
        hints = typing.get_type_hints(type(group), include_extras=True)
    except NameError:  # an annotation that cannot be resolved at run time: the field names then
        hints = {}
    return [
        _spelled(name, hints.get(name))
        for name in wanted
        if not _is_default(getattr(group, name), defaults[name])
    ]


def _spelled(name: str, hint: Any) -> str:
    """The long option a field's ``typer.Option`` declares (``--asr-tokens-per-s`` for ``tokens_per_s``),
    else :func:`option_name`."""
    for meta in getattr(hint, "__metadata__", ()):
        # under Annotated typer takes typer.Option's first argument (``default``) as its first declaration
        declared = [getattr(meta, "default", None), *(getattr(meta, "param_decls", None) or ())]
        for spelling in declared:
            if isinstance(spelling, str) and spelling.startswith("--"):
                return spelling.split("/")[0]
    return option_name(name)


def _is_default(value: Any, default: Any) -> bool:
    return value == default or (default is None and value == [])  # a repeatable option left out: []

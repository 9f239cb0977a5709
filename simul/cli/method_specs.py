"""Several methods in one run, each with its own options: `simul bench --method SPEC` and `simul sweep
--method SPEC`, so that one run compares methods that differ in more than one option.

A SPEC is a method written as `simul eval` takes it, its name first and then its own options::

    simul bench --method lookup --method "ssbd --beta 0.2 --tail-draft ngram-cache --draft-max 4" \\
                --method "spec --draft-p-min 0.8" --draft-layers 12

It is parsed by `simul eval`'s own command line (the same spellings, defaults, usage errors and refusals of
ignored options) and turned into methods by :func:`simul.cli.eval_cmd.eval_methods`, so a method is written
and checked one way wherever it runs. What belongs to the whole run (the model, the streams, threads, the
draft model, -o/--out, ...) is given once, outside the specs: a spec that sets it is refused. The n-gram
options given outside the specs (``--ngram-max``, ``--draft-max``, ...) serve every spec whose method drafts
with an n-gram drafter, where the spec does not set them itself.
"""

from __future__ import annotations

import dataclasses
import inspect
import shlex
from collections.abc import Iterable
from typing import Any

from simul.cli.draft_options import DraftOptions
from simul.cli.option_groups import option_name
from simul.cli.request_options import RequestOptions
from simul.common.errors import UsageError
from simul.request.methods import Method
from simul.request.ngram_settings import NGRAM_DRAFTERS

SPEC_HELP = (
    'A method with its own options, as `simul eval` takes them, e.g. "ssbd --beta 0.2 --tail-draft lookup" '
    "(repeatable; quote each spec)."
)


def _method_parameters() -> set[str]:
    """The names of `simul eval`'s method options (the keyword arguments of eval_methods)."""
    from simul.cli.eval_cmd import eval_methods

    return {
        name
        for name, p in inspect.signature(eval_methods).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }


def _parse(spec: str, command: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(method options, n-gram/draft options) given in ``spec``, parsed by `simul eval`'s command line
    (``command``); a usage error naming the spec for anything else."""
    try:
        words = shlex.split(spec)
    except ValueError as error:
        raise UsageError(f"--method {spec!r}: {error}") from None
    if not words or words[0].startswith("-"):
        raise UsageError(
            f"--method {spec!r}: a method spec starts with the method's name, then its options, e.g. "
            '"ssbd --beta 0.2 --tail-draft lookup"'
        )
    try:
        context = command.make_context("--method", ["--method", *words], resilient_parsing=False)
    except Exception as error:  # typer's copy of click's UsageError / BadParameter
        message = error.format_message() if hasattr(error, "format_message") else str(error)
        raise UsageError(f"--method {spec!r}: {message}") from None
    given = {
        param.name: context.params[param.name]
        for param in command.params
        if param.name in context.params and context.get_parameter_source(param.name).name == "COMMANDLINE"
    }
    methods = _method_parameters()
    drafts = {f.name for f in dataclasses.fields(DraftOptions)}
    others = sorted(option_name(name) for name in given if name not in methods and name not in drafts)
    if others:
        raise UsageError(
            f"--method {spec!r}: {', '.join(others)} belong{'s' if len(others) == 1 else ''} to the whole "
            "run, not to one method: give it once, outside the method specs"
        )
    return (
        {k: v for k, v in given.items() if k in methods},
        {k: v for k, v in given.items() if k in drafts},
    )


def _uses_ngram(options: dict[str, Any]) -> bool:
    return options.get("method", "ssbd") in NGRAM_DRAFTERS or options.get("tail_draft") in NGRAM_DRAFTERS


def spec_methods(specs: Iterable[str], request: RequestOptions, shared: DraftOptions) -> list[Method]:
    """The methods of the specs in order (without the RT baseline), each built as `simul eval` builds it;
    ``shared`` (the n-gram options outside the specs) fills what an n-gram method's spec leaves unset."""
    from simul.cli import load_command
    from simul.cli.eval_cmd import eval_methods

    specs = list(specs)
    if not specs:
        return []
    command = load_command("eval")
    methods: list[Method] = []
    for spec in specs:
        options, own = _parse(spec, command)
        if _uses_ngram(options):
            for field in dataclasses.fields(DraftOptions):
                if own.get(field.name) is None and getattr(shared, field.name) is not None:
                    own[field.name] = getattr(shared, field.name)
        try:
            methods += eval_methods(request, DraftOptions(**own), False, **options)
        except UsageError as error:
            # eval's messages say "--method NAME ..." themselves: the spec names the option once
            text = str(error).removeprefix("--method ")
            raise UsageError(f"--method {spec!r}: {text}") from None
    return methods

"""The scoring options that the commands which score share (eval, sweep, bench, score, merge): one definition
each, so that they are spelled, listed and checked alike."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from simul.cli.common import one_of
from simul.metrics.comet import COMET
from simul.metrics.learned_models import options
from simul.metrics.scoring import RESEGMENTERS

if TYPE_CHECKING:
    Resegmenter = str
else:
    Resegmenter = one_of(RESEGMENTERS)

RESEGMENT_HELP = (
    "Long-form runs: re-segment each talk's output onto its reference segments with OmniSTEval's "
    "softsegmenter or with mwer (mweralign, simulstream's choice) before scoring."
)
ResegmentOpt = Annotated[Resegmenter, typer.Option("--resegment", help=RESEGMENT_HELP)]
# score and merge: COMET again, as the run (or its shards) was scored unless given
RescoreCometModelOpt = Annotated[
    str | None,
    typer.Option(
        COMET.option,
        help="COMET model name or checkpoint path ('none' to skip). Default: the one the run was made with.",
    ),
]
# score: one rule for every learned metric (simul.metrics.learned_models); the option COMET and XCOMET share
ScoreCometModelOpt = Annotated[str | None, typer.Option(COMET.option, help=COMET.help)]
RescoreCometBatchOpt = Annotated[
    int | None, typer.Option("--comet-batch-size", help="COMET batch size. Default: the run's.")
]
RequireCometOpt = Annotated[
    bool, typer.Option("--require-comet/--no-require-comet", help="Fail when COMET cannot be loaded.")
]


def learned_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` with an option for each learned metric that has one of its own (``--bleurt-model``), as
    its record names and explains it (simul.metrics.registry.LEARNED), after the command's own parameters.
    The command takes them as ``learned``: option -> value, None when not given. An option that several
    metrics share (``--comet-model``) is declared by each command, with the command's default."""
    own = {
        option.lstrip("-").replace("-", "_"): metrics[0]
        for option, metrics in options().items()
        if len(metrics) == 1
    }
    hints = typing.get_type_hints(command, include_extras=True)
    kept = [
        p.replace(annotation=hints.get(p.name, p.annotation))
        for p in inspect.signature(command).parameters.values()
        if p.name != "learned"
    ]
    added = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[str | None, typer.Option(metric.option, help=metric.help)],
        )
        for name, metric in own.items()
    ]

    @functools.wraps(command)
    def with_options(*args: Any, **kwargs: Any) -> None:
        learned = {metric.option: kwargs.pop(name, None) for name, metric in own.items()}
        command(*args, learned=learned, **kwargs)

    parameters = [*kept, *added]
    setattr(with_options, "__signature__", inspect.Signature(parameters))  # noqa: B010 (read by typer)
    with_options.__annotations__ = {p.name: p.annotation for p in parameters}
    return with_options

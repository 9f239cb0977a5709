"""The scoring options that the commands which score share (eval, sweep, bench, score, merge): one definition
each, so that they are spelled, listed and checked alike."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from simul.cli.common import one_of
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
        "--comet-model",
        help="COMET model name or checkpoint path ('none' to skip). Default: the one the run was made with.",
    ),
]
# score: one rule for every learned metric (simul.metrics.learned)
ScoreCometModelOpt = Annotated[
    str | None,
    typer.Option(
        "--comet-model",
        help="COMET or XCOMET model name or checkpoint path: computes the figure of its class (COMET or "
        "XCOMET) and keeps the other ('none' drops both). Default: the run's models.",
    ),
]
RescoreCometBatchOpt = Annotated[
    int | None, typer.Option("--comet-batch-size", help="COMET batch size. Default: the run's.")
]
BleurtModelOpt = Annotated[
    str | None,
    typer.Option(
        "--bleurt-model",
        help="A local BLEURT checkpoint folder (bleurt-pytorch; e.g. a download of lucadiliello/BLEURT-20) "
        "to score BLEURT too, IWSLT 2026's extra result ('none' to drop it). Default: the run's, if any. "
        "Adding BLEURT keeps the run's COMET and XCOMET.",
    ),
]
RequireCometOpt = Annotated[
    bool, typer.Option("--require-comet/--no-require-comet", help="Fail when COMET cannot be loaded.")
]

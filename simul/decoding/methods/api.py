"""What a decoding method from outside simul imports (docs/methods.md, "Methods from outside simul"): the
method interface of version ``PROTOCOL_VERSION`` and the parts simul ships to build methods with.

A plug-in imports these names from this module only: they keep their meaning within a version
(docs/methods.md, "What a version may change"), and anything else in simul may change at any release. A
plug-in is a class named by ``--method MODULE:CLASS`` or by an entry point of the group ``simul.methods``;
:class:`MethodPlugin` says what it must have.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Protocol

from simul.decoding.methods.display import AgreementDisplay, MaskDisplay
from simul.decoding.methods.drafters import PreviousOutput
from simul.decoding.methods.protocol import (
    PROTOCOL_VERSION,
    AcceptanceRule,
    DisplayPolicy,
    DisplayView,
    Draft,
    Drafter,
    DrafterFactory,
    MethodShape,
    Position,
    Row,
    StepStart,
    Vocabulary,
)
from simul.decoding.methods.rules import ACCEPT_ALL, EXACT, BiasedRule

__all__ = [
    "ACCEPT_ALL",
    "EXACT",
    "PROTOCOL_VERSION",
    "AcceptanceRule",
    "AgreementDisplay",
    "BiasedRule",
    "DisplayPolicy",
    "DisplayView",
    "Draft",
    "Drafter",
    "DrafterFactory",
    "MaskDisplay",
    "MethodPlugin",
    "MethodShape",
    "Position",
    "PreviousOutput",
    "Row",
    "StepStart",
    "Vocabulary",
]


class MethodPlugin(Protocol):
    """A method from outside simul.

    ``protocol_version``: the version of this interface the class was written for; simul refuses a class
    written for another. ``options`` (optional): the names of the options it takes and their defaults, as
    text; simul then refuses any other name and hands the class every option, the defaults filled in (they
    are recorded in run.json's ``config.plugins``). Without it, the class gets the options as given and
    checks them itself. The class is called with the options (``Class(options)``; a ValueError says an
    option is wrong), once per process and run, and ``shape()`` gives the method's parts.
    """

    protocol_version: ClassVar[int]

    def __init__(self, options: Mapping[str, str]) -> None: ...

    def shape(self) -> MethodShape: ...

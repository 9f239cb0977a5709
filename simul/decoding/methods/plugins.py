"""Methods from outside simul (docs/methods.md, "Methods from outside simul"): the class a plug-in method
names is imported by its module path, checked against the interface (simul.decoding.methods.api) and made with
its options; its parts then run behind guards, so that whatever the plug-in does wrong ends in one error
that names it.

* Refused before anything is decoded (:class:`PluginRefused`, a usage error: exit 2): a module that cannot be
  imported, a class that is not there, one written for another version of the interface, options it does not
  take or rejects, a ``shape()`` that fails or is not a MethodShape.
* Failing while decoding (:class:`PluginFailed`, exit 1): an exception raised by any of its drafters, rules
  or display policy, or a value of the wrong kind returned by one (a draft that is not a Draft, a token out
  of the vocabulary, an acceptance that is not True or False). The decoder adds the stream and step; the
  evaluation marks the run ``failed`` and keeps the streams finished before (simul.runs.evaluation).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import math
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

from simul.common.errors import SimulError, UsageError
from simul.common.safe_text import excerpt
from simul.decoding.methods.protocol import (
    PROTOCOL_VERSION,
    AcceptanceRule,
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
from simul.decoding.methods.rules import AcceptAll, BiasedRule, ExactGreedy
from simul.request.method_settings import PLUGIN
from simul.request.methods import Method
from simul.request.plugin_spec import entry_point_version

DOCS = "docs/methods.md, 'Methods from outside simul'"
T = TypeVar("T")


class PluginRefused(UsageError):
    """A plug-in simul cannot use (found before decoding)."""


class PluginFailed(SimulError):
    """A plug-in that failed while decoding; ``located`` once the stream (and step) are in the message."""

    def __init__(self, message: str, located: bool = False) -> None:
        super().__init__(message)
        self.located = located

    def at(self, stream_id: str, step: int | None = None) -> PluginFailed:
        """This failure with the stream (and step) it happened in, unless it has them already."""
        if self.located:
            return self
        where = f"stream {excerpt(stream_id)}" + (f", step {step}" if step is not None else "")
        located = PluginFailed(f"{self} ({where})", located=True)
        located.__cause__ = self.__cause__
        return located


def describe(plugin: str, module: str) -> str:
    """How messages name a plug-in: its entry point and module path, or its module path."""
    return f"method plug-in {plugin}" + (f" ({module})" if plugin != module else "")


def _raised(exc: BaseException) -> str:
    """``Type: message (file:line)``, the line being the innermost frame of the traceback."""
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        line += f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})"
    return line


# -- loading -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadedPlugin:
    """A plug-in method made with its options: the guarded parts the decoder runs, and its record."""

    method: Method
    cls: type
    options: dict[str, str]  # the options it was made with, its defaults filled in
    shape: MethodShape

    @property
    def name(self) -> str:
        assert self.method.plugin is not None and self.method.module is not None
        return describe(self.method.plugin, self.method.module)

    def record(self) -> dict[str, Any]:
        """What run.json's ``config.plugins`` holds for it: where it came from and what it was made with."""
        assert self.method.plugin is not None
        out: dict[str, Any] = {
            "module": self.method.module,
            "protocol_version": self.cls.protocol_version,  # type: ignore[attr-defined]
            "options": dict(sorted(self.options.items())),
            "version": _version(self.method, self.cls),
            "source_sha256": _source_sha256(self.cls),
        }
        if ":" not in self.method.plugin:
            out["entry_point"] = self.method.plugin
        return out


_cache: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[ModuleType, LoadedPlugin]] = {}


def load(method: Method) -> LoadedPlugin:
    """Import, check and make the plug-in ``method`` names (once per process for a module and options)."""
    assert method.name == PLUGIN and method.plugin is not None and method.module is not None
    module_name, _, attr = method.module.partition(":")
    cached = _cache.get((method.module, method.options))
    if cached is not None and sys.modules.get(module_name) is cached[0]:
        return cached[1]
    name = describe(method.plugin, method.module)
    module = _import(name, module_name)
    cls: Any = module
    for part in attr.split("."):
        if not hasattr(cls, part):
            raise PluginRefused(f"{name}: module {module_name} has no {attr}; see {DOCS}")
        cls = getattr(cls, part)
    _check_version(name, cls)
    options = _options(name, cls, dict(method.options))
    try:
        made = cls(dict(options))
    except ValueError as exc:
        raise PluginRefused(f"{name} refused its options {options}: {_raised(exc)}") from exc
    except Exception as exc:
        raise PluginRefused(f"{name} could not be made with options {options}: {_raised(exc)}") from exc
    shape_of = getattr(made, "shape", None)
    if not callable(shape_of):
        raise PluginRefused(f"{name}: the class has no shape() method giving the method's parts; see {DOCS}")
    try:
        shape = shape_of()
    except Exception as exc:
        raise PluginRefused(f"{name}: shape() raised {_raised(exc)}") from exc
    loaded = LoadedPlugin(method, cls, options, _guarded_shape(name, shape))
    _cache[(method.module, method.options)] = (module, loaded)
    return loaded


def _import(name: str, module_name: str) -> ModuleType:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise PluginRefused(
                f"{name}: there is no module {exc.name} on the Python path; install the plug-in, or add the "
                "folder that holds it to PYTHONPATH"
            ) from exc
        raise PluginRefused(f"{name}: importing {module_name} failed: {_raised(exc)}") from exc
    except Exception as exc:  # its own code failed: a SyntaxError, an exception at import time
        raise PluginRefused(f"{name}: importing {module_name} failed: {_raised(exc)}") from exc


def _check_version(name: str, cls: Any) -> None:
    if not isinstance(cls, type):
        raise PluginRefused(f"{name} is not a class ({type(cls).__name__}); see {DOCS}")
    version = getattr(cls, "protocol_version", None)
    if version is None:
        raise PluginRefused(
            f"{name} does not say which version of simul's method interface it was written for: give the "
            f"class protocol_version = {PROTOCOL_VERSION} once it follows that version ({DOCS})"
        )
    if not isinstance(version, int) or isinstance(version, bool):
        raise PluginRefused(f"{name}: protocol_version must be a whole number, got {excerpt(repr(version))}")
    if version != PROTOCOL_VERSION:
        raise PluginRefused(
            f"{name} was written for version {version} of simul's method interface, and this simul has "
            f"version {PROTOCOL_VERSION}; use a version of the plug-in written for {PROTOCOL_VERSION}, or a "
            f"simul that has version {version} (docs/methods.md, 'What a version may change')"
        )


def _options(name: str, cls: Any, given: dict[str, str]) -> dict[str, str]:
    """The options the class is made with: ``given`` over its declared defaults, if it declares any."""
    declared = getattr(cls, "options", None)
    if declared is None:
        return given
    if not isinstance(declared, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in declared.items()
    ):
        raise PluginRefused(f"{name}: the class's options must map option names to default values (text)")
    unknown = sorted(set(given) - set(declared))
    if unknown:
        takes = f"its options are {', '.join(sorted(declared))}" if declared else "it takes none"
        raise PluginRefused(f"{name} has no option {', '.join(unknown)} (--method-option); {takes}")
    return {**declared, **given}


def _version(method: Method, cls: type) -> str | None:
    """The plug-in's version: its distribution's when it came through an entry point, else the module's
    ``__version__`` if it has one."""
    assert method.plugin is not None
    if ":" not in method.plugin:
        found = entry_point_version(method.plugin)
        if found:
            return found
    value = getattr(sys.modules.get(cls.__module__), "__version__", None)
    return value if isinstance(value, str) else None


def _source_sha256(cls: type) -> str | None:
    """SHA-256 of the file that defines the class (None when it has none, e.g. made at run time)."""
    try:
        path = inspect.getsourcefile(cls)
        return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else None
    except (OSError, TypeError):
        return None


def plugin_shape(method: Method) -> MethodShape:
    """The parts of a plug-in method, guarded (see the module's docstring)."""
    return load(method).shape


def check_plugins(methods: Sequence[Method]) -> None:
    """Load every plug-in method now, so that one simul cannot use is refused before any work."""
    for method in methods:
        if method.name == PLUGIN:
            load(method)


def plugin_records(methods: Sequence[Method]) -> dict[str, dict[str, Any]]:
    """run.json's ``config.plugins``: each plug-in method's record by its key (empty without plug-ins)."""
    return {m.key: load(m).record() for m in methods if m.name == PLUGIN}


# -- guards --------------------------------------------------------------------------------------------------


def _call(name: str, what: str, function: Callable[..., T], *args: Any) -> T:
    try:
        return function(*args)
    except Exception as exc:
        raise PluginFailed(f"{name}: {what} raised {_raised(exc)}") from exc


def _guarded_shape(name: str, shape: Any) -> MethodShape:
    if not isinstance(shape, MethodShape):
        raise PluginRefused(
            f"{name}: shape() returned {type(shape).__name__}, not a MethodShape "
            f"(simul.decoding.methods.api); see {DOCS}"
        )
    tails = shape.tails
    if not isinstance(tails, tuple | list):
        raise PluginRefused(f"{name}: MethodShape.tails must be a tuple of drafter factories")
    for factory in (shape.first, *tails):
        if factory is not None and not callable(factory):
            raise PluginRefused(f"{name}: a drafter factory is not callable ({type(factory).__name__})")
    first = None if shape.first is None else _guarded_factory(name, shape.first, "first drafter")
    later = tuple(_guarded_factory(name, f, f"later drafter {i + 1}") for i, f in enumerate(tails))
    return MethodShape(first, later, _GuardedDisplay(name, shape.display))


def _guarded_factory(name: str, factory: DrafterFactory, which: str) -> DrafterFactory:
    def make(vocab: Vocabulary) -> Drafter:
        size = getattr(vocab, "n_vocab", None)
        drafter = _call(name, f"the factory of its {which}", factory, _Vocabulary(vocab, size))
        return _GuardedDrafter(name, drafter, size)

    return make


class _Vocabulary:
    """What a plug-in's drafters see of the model: ``piece`` only (the interface's Vocabulary), tokens
    checked against the vocabulary's size."""

    def __init__(self, vocab: Vocabulary, size: int | None) -> None:
        self._vocab = vocab
        self._size = size

    def piece(self, token: int, special: bool = False) -> bytes:
        if not isinstance(token, int | np.integer) or not 0 <= int(token) < (self._size or sys.maxsize):
            raise ValueError(f"piece() of {token!r}, which is not a token of this vocabulary")
        return self._vocab.piece(int(token), special)


_OWN_RULES = (BiasedRule, ExactGreedy, AcceptAll)


class _GuardedDrafter:
    """A plug-in's drafter: every call guarded, every draft checked (its name, its tokens, its rules)."""

    def __init__(self, plugin: str, drafter: Any, size: int | None) -> None:
        self.plugin = plugin
        self.size = size
        kind = type(drafter).__name__
        missing = [m for m in ("start", "propose", "kept") if not callable(getattr(drafter, m, None))]
        if missing:
            raise PluginFailed(f"{plugin}: its drafter {kind} has no {', '.join(missing)}(); see {DOCS}")
        own = _call(plugin, f"{kind}.name", getattr, drafter, "name")
        if not isinstance(own, str) or not own:
            raise PluginFailed(f"{plugin}: its drafter {kind} must have a name (text), got {own!r}")
        self.drafter = drafter
        self.kind = kind
        self._name = own
        self._rules: dict[int, tuple[AcceptanceRule, AcceptanceRule]] = {}  # id -> (theirs, guarded)
        self._proposed: Draft | None = None

    @property
    def name(self) -> str:
        return self._name

    def start(self, step: StepStart) -> None:
        _call(self.plugin, f"{self.kind}.start", self.drafter.start, step)

    def propose(self, at: Position) -> Draft | None:
        draft = _call(self.plugin, f"{self.kind}.propose", self.drafter.propose, at)
        if draft is None:
            return None
        if not isinstance(draft, Draft):
            raise PluginFailed(
                f"{self.plugin}: {self.kind}.propose returned {type(draft).__name__}, not a Draft or None"
            )
        if draft.drafter != self._name:
            raise PluginFailed(
                f"{self.plugin}: {self.kind}.propose returned a draft of {draft.drafter!r}; a drafter's "
                f"drafts carry its own name ({self._name!r})"
            )
        tokens = tuple(self._token(t) for t in draft.tokens)
        ending = draft.ending_tokens
        if not isinstance(ending, int) or ending < 0:
            raise PluginFailed(f"{self.plugin}: a draft's ending_tokens must be 0 or more, got {ending!r}")
        self._proposed = draft
        rules = tuple(self._rule(rule) for rule in draft.rules)
        return Draft(self._name, tokens, rules, bool(draft.steer), ending)

    def _token(self, token: Any) -> int:
        if isinstance(token, bool) or not isinstance(token, int | np.integer):
            raise PluginFailed(f"{self.plugin}: {self.kind} drafted {token!r}, which is not a token id")
        if not 0 <= int(token) < (self.size or sys.maxsize):
            raise PluginFailed(
                f"{self.plugin}: {self.kind} drafted token {int(token)}, outside the vocabulary"
            )
        return int(token)

    def _rule(self, rule: AcceptanceRule) -> AcceptanceRule:
        if type(rule) in _OWN_RULES:
            return rule
        known = self._rules.get(id(rule))
        if known is None or known[0] is not rule:
            known = (rule, _GuardedRule(self.plugin, rule))
            self._rules[id(rule)] = known
        return known[1]

    def kept(self, draft: Draft, n: int) -> None:
        theirs = self._proposed
        if theirs is not None:
            draft = theirs.cut(len(draft.tokens))
        _call(self.plugin, f"{self.kind}.kept", self.drafter.kept, draft, n)


class _GuardedRule:
    """A plug-in's acceptance rule: its properties read once, ``accepts`` guarded and its answer checked."""

    def __init__(self, plugin: str, rule: Any) -> None:
        kind = type(rule).__name__
        self.plugin, self.rule, self.kind = plugin, rule, kind
        if not callable(getattr(rule, "accepts", None)):
            raise PluginFailed(f"{plugin}: its acceptance rule {kind} has no accepts(); see {DOCS}")
        name = _call(plugin, f"{kind}.name", getattr, rule, "name")
        bias = _call(plugin, f"{kind}.bias", getattr, rule, "bias")
        verifies = _call(plugin, f"{kind}.verifies", getattr, rule, "verifies")
        blind = _call(plugin, f"{kind}.blind", getattr, rule, "blind")
        if not isinstance(name, str) or not name:
            raise PluginFailed(f"{plugin}: its acceptance rule {kind} must have a name (text), got {name!r}")
        if isinstance(bias, bool) or not isinstance(bias, int | float) or not math.isfinite(bias):
            raise PluginFailed(f"{plugin}: {kind}.bias must be a number, got {bias!r}")
        for member, value in (("verifies", verifies), ("blind", blind)):
            if not isinstance(value, bool | np.bool_):
                raise PluginFailed(f"{plugin}: {kind}.{member} must be True or False, got {value!r}")
        self.name, self.bias = name, float(bias)
        self.verifies, self.blind = bool(verifies), bool(blind)

    def accepts(self, row: Row, token: int) -> bool:
        answer = _call(self.plugin, f"{self.kind}.accepts", self.rule.accepts, row, token)
        if not isinstance(answer, bool | np.bool_):
            raise PluginFailed(f"{self.plugin}: {self.kind}.accepts returned {answer!r}, not True or False")
        return bool(answer)


class _GuardedDisplay:
    """A plug-in's display policy: ``show`` guarded and its answer checked."""

    def __init__(self, plugin: str, display: Any) -> None:
        kind = type(display).__name__
        if not callable(getattr(display, "show", None)):
            raise PluginRefused(f"{plugin}: its display policy {kind} has no show(); see {DOCS}")
        try:
            name = display.name
        except Exception as exc:
            raise PluginRefused(f"{plugin}: {kind}.name raised {_raised(exc)}") from exc
        if not isinstance(name, str) or not name:
            raise PluginRefused(f"{plugin}: its display policy {kind} must have a name (text), got {name!r}")
        self.plugin, self.display, self.kind, self.name = plugin, display, kind, name

    def show(self, view: DisplayView) -> str:
        shown = _call(self.plugin, f"{self.kind}.show", self.display.show, view)
        if not isinstance(shown, str):
            raise PluginFailed(f"{self.plugin}: {self.kind}.show returned {type(shown).__name__}, not text")
        return shown

"""How a method from outside simul is named and given its options (docs/methods.md, "Methods from outside
simul"), before anything of it is imported: ``--method NAME`` (an entry point of the group ``simul.methods``)
or ``--method MODULE:CLASS``, and ``--method-option NAME=VALUE`` (repeatable).

An entry point is resolved here to the ``MODULE:CLASS`` it names, without importing it; the method is then
recorded with both, and every process that decodes it (shards, Ray workers) imports it by that module path.
Loading the class and checking it against the interface is simul.decoding.methods.plugins.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata

from simul.common.errors import UsageError
from simul.common.safe_text import excerpt

ENTRY_POINT_GROUP = "simul.methods"
# MODULE:CLASS: a dotted module path, a colon, and a dotted attribute path in it
MODULE_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
# an entry point's name: what the key starts with, so it must be safe in a file name
ENTRY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
OPTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# an option value shown as it is in the method's key; any other is shown by a hash of it
KEY_VALUE = re.compile(r"^[A-Za-z0-9._+]{1,32}$")

Options = tuple[tuple[str, str], ...]


def entry_points() -> dict[str, str]:
    """The installed entry points of the group ``simul.methods``: name -> ``MODULE:CLASS`` (not imported)."""
    found: dict[str, str] = {}
    for point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(point.name, point.value.strip())
    return found


def entry_point_version(name: str) -> str | None:
    """The version of the distribution that registers the entry point ``name``, if it says."""
    for point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if point.name == name:
            dist = getattr(point, "dist", None)
            return str(dist.version) if dist is not None and dist.version else None
    return None


def resolve(spec: str, built_in: Sequence[str]) -> tuple[str, str]:
    """``(plugin, module)`` for ``--method spec``: a ``MODULE:CLASS`` is its own module path; any other name
    is looked up among the entry points of ``simul.methods``. ``built_in`` names the methods simul decodes
    itself, for the message when the name is none of them."""
    if ":" in spec:
        check_module_path(spec)
        return spec, spec
    points = entry_points()
    if spec not in points:
        installed = f"; installed plug-ins: {', '.join(sorted(points))}" if points else ""
        raise UsageError(
            f"--method {excerpt(spec)} is not a method: give one of {', '.join(built_in)}, MODULE:CLASS "
            f"(a method class on the Python path), or the name of an entry point of group "
            f"{ENTRY_POINT_GROUP}{installed}"
        )
    check_entry_name(spec, built_in)
    module = points[spec]
    if not MODULE_PATH.match(module):
        raise UsageError(
            f"the entry point {spec!r} of group {ENTRY_POINT_GROUP} names {excerpt(module)}; a method "
            "plug-in's entry point names MODULE:CLASS"
        )
    return spec, module


def check_module_path(module: str) -> None:
    if not MODULE_PATH.match(module):
        raise UsageError(
            f"--method {excerpt(module)}: a method from outside simul is MODULE:CLASS (e.g. "
            "mypkg.methods:Mine, the module on the Python path) or the name of an entry point of group "
            f"{ENTRY_POINT_GROUP}"
        )


def check_entry_name(name: str, built_in: Sequence[str]) -> None:
    if not ENTRY_NAME.match(name) or name in built_in:
        raise UsageError(
            f"{excerpt(name)} cannot name a method plug-in: an entry point of group {ENTRY_POINT_GROUP} is "
            f"named with letters, digits, '.', '_' and '-', and not {', '.join(built_in)}"
        )


def parse_options(given: Iterable[str]) -> Options:
    """``--method-option NAME=VALUE`` values, each name once, sorted by name."""
    out: dict[str, str] = {}
    for text in given:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not OPTION_NAME.match(name):
            raise UsageError(
                f"--method-option takes NAME=VALUE (NAME: letters, digits and '_'), got {excerpt(text)}"
            )
        if name in out:
            raise UsageError(f"--method-option {name} is given twice; give each option once")
        out[name] = value
    return tuple(sorted(out.items()))


def check_options(options: Options) -> Options:
    """``options`` as a method holds them (sorted, unique, names as --method-option allows), or an error."""
    names = [name for name, _ in options]
    if names != sorted(set(names)):
        raise UsageError("a plug-in's options must be given once each, sorted by name")
    for name, value in options:
        if not isinstance(name, str) or not OPTION_NAME.match(name) or not isinstance(value, str):
            raise UsageError(f"a plug-in option must be NAME=VALUE text, got {excerpt(repr((name, value)))}")
    return options


def options_from_json(obj: object) -> Options:
    if obj is None:
        return ()
    if not isinstance(obj, Mapping) or not all(isinstance(v, str) for v in obj.values()):
        raise UsageError("a plug-in's 'options' must be an object of text values")
    return check_options(tuple(sorted((str(k), v) for k, v in obj.items())))


def key_part(name: str, value: str) -> str:
    """One option in a method key: ``name=value``, or ``name~`` and 8 hex digits of the value's SHA-256 when
    the value could not stand in a file name or is long."""
    if KEY_VALUE.match(value):
        return f"{name}={value}"
    return f"{name}~{hashlib.sha256(value.encode('utf-8')).hexdigest()[:8]}"


def plugin_key(plugin: str, options: Options) -> str:
    """The run-file key of a plug-in method: ``plugin-`` and its entry-point name (or its module path, the
    colon a dot), then its options (:func:`key_part`), e.g. ``plugin-exact-rt-hide=2``."""
    return "-".join(["plugin", plugin.replace(":", "."), *(key_part(n, v) for n, v in options)])


def plugin_label(plugin: str, options: Options) -> str:
    """The table label of a plug-in method: its name and its options, e.g. ``exact-rt(hide=2)``."""
    if not options:
        return plugin
    return f"{plugin}({', '.join(f'{n}={v}' for n, v in options)})"

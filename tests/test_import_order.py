"""The stage order of simul's packages (README, "Code layout"): every stage imports only itself and the stages
below it, and no modules import each other in a circle.

    common -> request -> streams -> machine -> decoding -> metrics -> runs -> reports -> cli

machine sits beside decoding, just below it: the decoder, engine and backend use the machine's threads,
clocks, CPU meter and calibration, and the machine knows nothing of decoding (the calibration takes any
backend through a Protocol). ``simul/__init__.py`` belongs to common, the entry points ``simul/__main__.py``
and ``simul/launch.py`` to cli. ``simul.testing`` may import any stage; a stage may import a testing module
only when everything that module imports (transitively) is at or below the importer's stage (the hook
simul.testing.hold imports nothing). tools/ is outside the package and may import anything.

The imports are read with ``ast``, not by importing: module-level imports, imports inside functions and
``if TYPE_CHECKING:`` imports all count, for the stage order and for circles alike. ``from package import
name`` counts as an import of ``package.name`` when that is a module, else of ``package``; importing a module
also runs the ``__init__`` of each package above it, so those count for circles too.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

ORDER = ("common", "request", "streams", "machine", "decoding", "metrics", "runs", "reports", "cli")
RANK = {stage: rank for rank, stage in enumerate(ORDER)}
FREE = "testing"  # may import any stage
ROOT_STAGES = {"simul": "common", "simul.__main__": "cli", "simul.launch": "cli"}


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    path: Path
    line: int

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root)}:{self.line}"


def module_names(root: Path) -> dict[str, Path]:
    """Every module of the ``simul`` package under ``root``, by dotted name (a package by its own name)."""
    out = {}
    for path in sorted((root / "simul").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    """The simul modules that ``name`` imports anywhere in its source (ast.walk sees function bodies and
    ``if TYPE_CHECKING:`` blocks as well as the module level)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "simul" or alias.name.startswith("simul."):
                    yield Import(name, alias.name, path, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            if source != "simul" and not source.startswith("simul."):
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                yield Import(name, full if full in modules else source, path, node.lineno)


def stage_of(name: str) -> str | None:
    """The stage a module belongs to by its place (None for one outside every stage)."""
    if name in ROOT_STAGES:
        return ROOT_STAGES[name]
    return name.split(".")[1] if name.count(".") >= 1 else None


def graph(root: Path) -> tuple[dict[str, Path], dict[str, list[Import]]]:
    modules = module_names(root)
    edges = {
        name: [i for i in imports_of(name, path, modules) if i.target in modules]
        for name, path in modules.items()
    }
    return modules, edges


def free_rank(name: str, edges: dict[str, list[Import]], seen: frozenset[str] = frozenset()) -> int:
    """The stage a testing module effectively sits at: the highest stage it reaches through its imports."""
    rank = -1
    for imp in edges.get(name, []):
        stage = stage_of(imp.target)
        if stage == FREE:
            if imp.target not in seen:
                rank = max(rank, free_rank(imp.target, edges, seen | {name}))
        elif stage in RANK:
            rank = max(rank, RANK[stage])
    return rank


def upward_imports(root: Path) -> list[str]:
    """Each import of a higher stage, and each module outside every stage, in words."""
    modules, edges = graph(root)
    problems = []
    for name in modules:
        stage = stage_of(name)
        if stage == FREE:
            continue
        if stage not in RANK:
            problems.append(f"{modules[name].relative_to(root)}: {name} is in no stage (add it to ORDER)")
            continue
        for imp in edges[name]:
            target = stage_of(imp.target)
            if target == FREE:
                rank, what = free_rank(imp.target, edges), "a testing module that reaches a higher stage"
            else:
                rank, what = RANK.get(target or "", -1), f"{target}, a higher stage"
            if rank > RANK[stage]:
                problems.append(f"{imp.where(root)}: {name} ({stage}) imports {imp.target} ({what})")
    return problems


def dependencies(name: str, edges: dict[str, list[Import]], modules: dict[str, Path]) -> dict[str, Import]:
    """What importing ``name`` runs: each imported module and the packages above it, except the packages
    ``name`` itself is inside (Python has started those already); by module, the first import causing it."""
    out: dict[str, Import] = {}
    for imp in edges[name]:
        parts = imp.target.split(".")
        for i in range(2, len(parts) + 1):
            dep = ".".join(parts[:i])
            if dep in modules and dep != name and not name.startswith(dep + "."):
                out.setdefault(dep, imp)
    return out


def circles(root: Path) -> list[str]:
    """Each set of modules that import each other in a circle (a strongly connected component of more than
    one module, or a module that imports itself), with the imports that close it, in words."""
    modules, edges = graph(root)
    deps = {name: dependencies(name, edges, modules) for name in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in deps[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for name in modules:
        if name not in index:
            visit(name)
    out = []
    for component in found:
        inside = set(component)
        links = [
            f"{imp.where(root)} {name} -> {dep}"
            for name in component
            for dep, imp in sorted(deps[name].items())
            if dep in inside
        ]
        out.append(f"{', '.join(component)}: " + "; ".join(links))
    return out


# -- the package ---------------------------------------------------------------------------------------------


def test_every_stage_imports_only_the_stages_below_it() -> None:
    problems = upward_imports(REPO)
    assert not problems, "imports against the stage order:\n" + "\n".join(problems)


def test_no_modules_import_each_other_in_a_circle() -> None:
    found = circles(REPO)
    assert not found, "import circles:\n" + "\n".join(found)


def test_the_walk_sees_the_package() -> None:
    # the tests above pass trivially if the walk reads nothing: it must see known imports of every kind
    modules, edges = graph(REPO)
    assert set(ORDER) <= {stage_of(name) for name in modules}
    targets = {(i.importer, i.target) for imports in edges.values() for i in imports}
    assert ("simul.decoding.stream", "simul.decoding.records") in targets  # module level
    assert ("simul.cli.scaleout", "simul.runs.ray_runner") in targets  # inside a function
    assert ("simul.metrics.speed", "simul.machine.calibration") in targets  # under TYPE_CHECKING


# -- the checks themselves, on a planted package -------------------------------------------------------------


def plant(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_a_planted_upward_import_is_found_and_named(tmp_path: Path) -> None:
    root = plant(
        tmp_path,
        {
            "simul/__init__.py": "",
            "simul/common/__init__.py": "",
            "simul/common/text.py": "from simul.metrics.erasure import erasure\n",
            "simul/metrics/__init__.py": "",
            "simul/metrics/erasure.py": "from simul.common import text\n\n\ndef erasure() -> None: ...\n",
            "simul/streams/__init__.py": "",
            "simul/streams/format.py": "def f() -> None:\n    from ..reports import show  # noqa\n",
            "simul/reports/__init__.py": "",
            "simul/reports/show.py": "import simul.common.text\n",
            "simul/testing/__init__.py": "",
            "simul/testing/hook.py": "import simul.reports.show\n",
            "simul/runs/__init__.py": "",
            "simul/runs/evaluation.py": "from simul.testing import hook\n",
            "simul/extra/__init__.py": "",
        },
    )
    problems = upward_imports(root)
    assert problems == [
        "simul/common/text.py:1: simul.common.text (common) imports simul.metrics.erasure (metrics, a "
        "higher stage)",
        "simul/extra/__init__.py: simul.extra is in no stage (add it to ORDER)",
        "simul/runs/evaluation.py:1: simul.runs.evaluation (runs) imports simul.testing.hook (a testing "
        "module that reaches a higher stage)",
        "simul/streams/format.py:2: simul.streams.format (streams) imports simul.reports.show (reports, a "
        "higher stage)",
    ]


def test_a_planted_circle_is_found_with_its_imports_type_checking_ones_included(tmp_path: Path) -> None:
    root = plant(
        tmp_path,
        {
            "simul/__init__.py": "",
            "simul/decoding/__init__.py": "",
            "simul/decoding/stream.py": "from simul.decoding.talk import steps\n",
            "simul/decoding/talk.py": """\
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from simul.decoding.stream import Decoder


                def steps() -> None: ...
            """,
            # through a package's __init__: importing simul.decoding.display.mask runs display/__init__.py
            "simul/decoding/display/__init__.py": "from simul.decoding.display.mask import hide\n",
            "simul/decoding/display/mask.py": "def hide() -> None: ...\n",
            "simul/decoding/drafts.py": "from simul.decoding.display.mask import hide\n",
        },
    )
    assert circles(root) == [
        "simul.decoding.stream, simul.decoding.talk: simul/decoding/stream.py:1 simul.decoding.stream -> "
        "simul.decoding.talk; simul/decoding/talk.py:4 simul.decoding.talk -> simul.decoding.stream"
    ]
    assert upward_imports(root) == []

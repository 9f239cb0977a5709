"""tools/lock.py and constraints.txt: the pinned stack that `make setup` and CI install (issue 31)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from tests.helpers import load_tool

REPO = Path(__file__).resolve().parent.parent
CONSTRAINTS = REPO / "constraints.txt"
#: the packages whose version can move a score or a decoded output (issue 31)
SCORE_MOVERS = ("sacrebleu", "unbabel-comet", "torch", "numpy", "sentencepiece", "omnisteval", "mweralign")


@pytest.fixture(scope="module")
def lock() -> object:
    return load_tool("lock")


def dist(name: str, version: str) -> SimpleNamespace:
    return SimpleNamespace(metadata={"Name": name}, version=version)


def pinned() -> dict[str, str]:
    lines = [
        line for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines() if not line.startswith("#")
    ]
    out = {}
    for line in lines:
        name, version = line.split("==")
        out[name] = version
    return out


def test_pins_are_sorted_name_version_lines_without_local_labels_or_left_out_packages(lock: object) -> None:
    lines = lock.pins(  # type: ignore[attr-defined]
        [
            dist("Torch", "2.13.0+cpu"),
            dist("sacrebleu", "2.6.0"),
            dist("simul", "0.1.0"),
            dist("pip", "26.0"),
            dist("llama_cpp_python", "0.3.36"),
            dist("Unbabel_COMET", "2.2.7"),
            dist("sacrebleu", "2.5.1"),  # a second copy further down sys.path: the first wins
        ]
    )
    assert lines == ["sacrebleu==2.6.0", "torch==2.13.0", "unbabel-comet==2.2.7"]


def test_check_says_when_the_file_is_out_of_date(lock: object, tmp_path: Path) -> None:
    out = tmp_path / "constraints.txt"
    assert lock.main(["-o", str(out)]) == 0  # type: ignore[attr-defined]
    assert lock.main(["-o", str(out), "--check"]) == 0  # type: ignore[attr-defined]
    out.write_text(out.read_text() + "sacrebleu==1.0.0\n")
    assert lock.main(["-o", str(out), "--check"]) == 1  # type: ignore[attr-defined]


def test_the_committed_lock_pins_what_moves_a_score_exactly() -> None:
    pins = pinned()
    for name in SCORE_MOVERS:
        assert name in pins, f"{name} is not pinned in constraints.txt"
        assert re.fullmatch(r"[0-9][0-9A-Za-z.]*", pins[name]), pins[name]
    assert "simul" not in pins and "llama-cpp-python" not in pins and "pip" not in pins


def test_the_committed_lock_satisfies_pyprojects_ranges() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = [Requirement(r) for r in project["dependencies"]]
    for extra in ("model", "comet", "dev", "longform"):
        requirements += [Requirement(r) for r in project["optional-dependencies"].get(extra, [])]
    pins = pinned()
    for req in requirements:
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        if name == "llama-cpp-python":
            continue
        assert name in pins, f"{req} is not in constraints.txt"
        assert req.specifier.contains(Version(pins[name]), prereleases=True), (
            f"{name}=={pins[name]} breaks {req}"
        )


def test_set_up_installs_every_package_from_the_lock() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = makefile[makefile.index("$(STAMP):") : makefile.index("demo:")]
    installs = [
        line for line in recipe.splitlines() if "$(PIP) install" in line and "--upgrade pip" not in line
    ]
    assert installs and all("$(PIN)" in line for line in installs if "--force-reinstall" not in line)
    assert "PIN := -c $(CONSTRAINTS)" in makefile and "CONSTRAINTS := constraints.txt" in makefile
    assert re.search(r"^lock: setup\n\t\$\(BIN\)/python tools/lock.py -o \$\(CONSTRAINTS\)$", makefile, re.M)


@pytest.mark.skipif(
    not (Path(sys.prefix) / ".simul-setup").exists(), reason="not the venv `make setup` made from the lock"
)
def test_the_set_up_venv_holds_exactly_the_lock() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "tools" / "lock.py"), "-o", str(CONSTRAINTS), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr

"""tools/lock.py and constraints.txt: the pinned stack that `make setup` and CI install (issue 31)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
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
    out.write_text(CONSTRAINTS.read_text())  # its platform-dependent pins are kept (no index to ask)
    assert lock.main(["-o", str(out)]) == 0  # type: ignore[attr-defined]
    assert lock.main(["-o", str(out), "--check"]) == 0  # type: ignore[attr-defined]
    out.write_text(out.read_text() + "sacrebleu==1.0.0\n")
    assert lock.main(["-o", str(out), "--check"]) == 1  # type: ignore[attr-defined]


def site_packages(root: Path, lines: list[str]) -> Path:
    """A directory of installed distributions (dist-info metadata only), one per ``name==version``."""
    root.mkdir()
    for line in lines:
        name, version = line.split("==")
        info = root / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return root


def check(lock: object, site: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`tools/lock.py --check` of the committed constraints.txt against the packages in ``site``."""
    code = lock.main(["-o", str(CONSTRAINTS), "--check", "--path", str(site)])  # type: ignore[attr-defined]
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def committed(lock: object) -> tuple[list[str], list[str]]:
    parsed = lock.parse(CONSTRAINTS.read_text(encoding="utf-8"))  # type: ignore[attr-defined]
    return list(parsed.core), list(parsed.platform)


def test_check_accepts_a_venv_with_torchs_cuda_packages_or_without_them(
    lock: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 39: `pip install torch` from the package index brings the CUDA build and its accelerator
    packages; a CPU build from a wheel directory brings none. The committed lock accepts both venvs."""
    core, platform = committed(lock)
    cpu = [line.replace("torch==2.13.0", "torch==2.13.0+cpu") for line in core]  # the wheelhouse's CPU build
    code, text = check(lock, site_packages(tmp_path / "cpu", cpu), capsys)
    assert code == 0, text
    assert f"matches this venv ({len(core)} packages)" in text
    code, text = check(lock, site_packages(tmp_path / "cuda", core + platform), capsys)
    assert code == 0, text
    assert f"({len(core) + len(platform)} packages, {len(platform)} of them platform-dependent)" in text


def _swap(lines: list[str], name: str, version: str) -> list[str]:
    return [f"{name}=={version}" if line.startswith(f"{name}==") else line for line in lines]


Drift = Callable[[list[str], list[str]], tuple[list[str], list[str]]]
#: (what is done to the venv's core and accelerator pins, what the check says); each changes one package
DRIFTS: dict[str, tuple[Drift, str]] = {
    "extra package": (lambda core, acc: ([*core, "leftpad==1.0"], acc), "not in the file: leftpad==1.0"),
    "unlisted accelerator": (
        lambda core, acc: (core, [*acc, "nvidia-cuda-opencl==13.0.85"]),
        "not in the file's platform-dependent packages: nvidia-cuda-opencl==13.0.85",
    ),
    "missing package": (
        lambda core, acc: ([c for c in core if not c.startswith("numpy==")], acc),
        "missing: numpy==",
    ),
    "changed package": (
        lambda core, acc: (_swap(core, "sacrebleu", "2.5.1"), acc),
        "sacrebleu: 2.5.1 installed",
    ),
    "changed accelerator": (
        lambda core, acc: (core, _swap(acc, "triton", "3.6.0")),
        "triton: 3.6.0 installed, 3.7.1 in the file",
    ),
}


@pytest.mark.parametrize("with_cuda", [True, False], ids=["CUDA venv", "CPU venv"])
@pytest.mark.parametrize("drift", sorted(DRIFTS))
def test_check_fails_for_any_other_drift(
    lock: object, tmp_path: Path, capsys: pytest.CaptureFixture[str], drift: str, with_cuda: bool
) -> None:
    """Next to the CUDA set, and without it, every other extra, missing or changed package fails the check,
    accelerator packages included: one the file does not list, or a listed one at another version."""
    change, said = DRIFTS[drift]
    core, platform = committed(lock)
    if not with_cuda and drift == "changed accelerator":
        platform = [line for line in platform if line.startswith("triton==")]  # the only one, changed
    elif not with_cuda:
        platform = []
    new_core, new_platform = change(core, platform)
    code, text = check(lock, site_packages(tmp_path / "venv", new_core + new_platform), capsys)
    assert code == 1, text
    assert said in text and "differs from this venv's packages" in text


def test_make_lock_takes_the_platform_pins_from_the_venv_the_file_or_the_index(lock: object) -> None:
    calls: list[tuple[str, list[str]]] = []

    def ask(torch: str, core: list[str]) -> list[str]:
        calls.append((torch, list(core)))
        return ["nvidia-cublas==14.0", "triton==4.0"]

    old = lock.Lock(["torch==2.13.0"], ["triton==3.7.1"], "2.13.0")  # type: ignore[attr-defined]
    build = lock.build  # type: ignore[attr-defined]
    # a CUDA venv: its own accelerator packages
    new = build(["numpy==1.26.4", "torch==2.13.0", "triton==3.7.2"], old, ask)
    assert (new.core, new.platform, new.platform_torch) == (
        ["numpy==1.26.4", "torch==2.13.0"],
        ["triton==3.7.2"],
        "2.13.0",
    )
    # a CPU venv, torch unchanged: the file's
    new = build(["numpy==1.26.4", "torch==2.13.0"], old, ask)
    assert (new.platform, new.platform_torch) == (["triton==3.7.1"], "2.13.0") and not calls
    # a CPU venv after a torch upgrade: the index's, for the new torch
    new = build(["numpy==1.26.4", "torch==2.14.0"], old, ask)
    assert (new.platform, new.platform_torch) == (["nvidia-cublas==14.0", "triton==4.0"], "2.14.0")
    assert calls == [("2.14.0", ["numpy==1.26.4", "torch==2.14.0"])]
    # no torch, no platform section
    assert build(["numpy==1.26.4"], old, ask).platform == []
    text = lock.render(build(["numpy==1.26.4", "torch==2.13.0"], old, ask))  # type: ignore[attr-defined]
    assert lock.parse(text) == old.__class__(["numpy==1.26.4", "torch==2.13.0"], ["triton==3.7.1"], "2.13.0")  # type: ignore[attr-defined]


def test_the_index_answer_is_read_from_pips_report(lock: object) -> None:
    installs = [
        {"metadata": {"name": "torch", "version": "2.13.0"}},
        {"metadata": {"name": "nvidia-cublas", "version": "13.1.1.3"}},
        {"metadata": {"name": "Jinja2", "version": "3.1.6"}},
        {"metadata": {"name": "cuda_bindings", "version": "13.5.0"}},
        {"metadata": {"name": "triton", "version": "3.7.1"}},
    ]
    assert lock.report_platform_pins(installs) == [  # type: ignore[attr-defined]
        "cuda-bindings==13.5.0",
        "nvidia-cublas==13.1.1.3",
        "triton==3.7.1",
    ]


def test_a_pin_listed_twice_or_accelerator_pins_of_another_torch_fail_the_check(lock: object) -> None:
    lk = lock.Lock(["torch==2.14.0", "numpy==1.26.4", "numpy==2.0.0"], ["triton==3.7.1"], "2.13.0")  # type: ignore[attr-defined]
    problems = lock.differences(lk, ["numpy==2.0.0", "torch==2.14.0"])  # type: ignore[attr-defined]
    assert "numpy is listed twice in the file" in problems
    assert "the platform-dependent pins are torch==2.13.0's, the file pins torch==2.14.0" in problems


def test_the_committed_lock_keeps_accelerator_packages_apart() -> None:
    """The accelerator packages are pinned in their own section, for the torch the file pins."""
    text = CONSTRAINTS.read_text(encoding="utf-8")
    head, _, tail = text.partition("# platform-dependent: the accelerator packages of torch==")
    assert tail.startswith(pinned()["torch"] + "'s CUDA build"), "no platform section for the pinned torch"
    accelerator = re.compile(r"^(cuda-bindings|cuda-pathfinder|cuda-toolkit|triton|nvidia-.*)==", re.M)
    assert not accelerator.search(head)
    pins = [line for line in tail.splitlines()[1:] if line and not line.startswith("#")]
    assert pins and all(accelerator.match(line) for line in pins)


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
    torch = [line for line in recipe.splitlines() if line.startswith("\t") and "tools/torch_setup.py" in line]
    assert len(torch) == 1 and "--constraints $(CONSTRAINTS)" in torch[0] and '"$(TORCH_SPEC)"' in torch[0]
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

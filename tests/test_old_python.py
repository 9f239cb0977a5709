"""``make setup``'s helpers under the oldest Python on the machine that pyproject.toml allows (Debian 12's
/usr/bin/python3 is 3.11.2, older than tarfile's ``filter`` argument of 3.11.4: issue 53), compared with the
same helpers under the test's own Python. Skips where no other interpreter is found."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import packaging
import pytest

REPO = Path(__file__).resolve().parent.parent
PROBE = Path(__file__).with_name("setup_helpers_probe.py")


def minimum() -> tuple[int, ...]:
    spec = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"]
    found = re.fullmatch(r">=\s*(\d+)\.(\d+)(?:\.(\d+))?", spec)
    assert found, f"pyproject.toml's requires-python {spec!r}: expected >=X.Y"
    return tuple(int(g) for g in found.groups() if g is not None)


def interpreters() -> dict[str, tuple[int, ...]]:
    """Every python3.* executable in the usual places and on PATH, with its version."""
    names: set[str] = set()
    for folder in ["/usr/bin", "/usr/local/bin", *os.environ.get("PATH", "").split(os.pathsep)]:
        names.update(glob.glob(os.path.join(folder, "python3.[0-9]*")))
        names.update(glob.glob(os.path.join(folder, "python3")))
    found: dict[str, tuple[int, ...]] = {}
    for name in sorted(names):
        if not re.search(r"python3(\.\d+)?$", name) or not os.access(name, os.X_OK):
            continue
        try:
            out = subprocess.run(
                [name, "-c", "import sys; print(*sys.version_info[:3])"],
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            ).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        found[os.path.realpath(name)] = tuple(int(x) for x in out.split())
    return found


def oldest_other() -> tuple[str, tuple[int, ...]] | None:
    """The oldest interpreter that pyproject.toml allows, when it is another version than this one."""
    allowed = {path: v for path, v in interpreters().items() if v >= minimum()}
    if not allowed:
        return None
    path, version = min(allowed.items(), key=lambda item: item[1])
    return None if version == tuple(sys.version_info[:3]) else (path, version)


def probe(python: str, work: Path, packaging_dir: Path) -> dict[str, object]:
    work.mkdir()
    done = subprocess.run(
        [python, "-s", str(PROBE), str(work), str(packaging_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")},
        cwd=work,
    )
    assert done.returncode == 0, f"{python}: {done.stdout}\n{done.stderr}"
    line = [x for x in done.stdout.splitlines() if x.startswith("REPORT ")]
    assert len(line) == 1, done.stdout
    return dict(json.loads(line[0][len("REPORT ") :]))


def test_the_set_up_helpers_do_the_same_under_the_oldest_python(tmp_path: Path) -> None:
    other = oldest_other()
    if other is None:
        pytest.skip("no other Python that pyproject.toml allows is installed here")
    python, version = other
    # packaging (pure Python) is all the helpers need beyond the standard library; set-up installs it first
    lib = tmp_path / "lib"
    shutil.copytree(Path(packaging.__file__).parent, lib / "packaging")
    old = probe(python, tmp_path / "old", lib)
    own = probe(sys.executable, tmp_path / "own", lib)
    assert old["python"] == ".".join(map(str, version))
    for report in (old, own):
        for mode, result in report["unpack"].items():  # type: ignore[attr-defined]
            assert "UNPACKED" not in json.dumps(result), (report["python"], mode)
            assert all(outcome in ("refused", "unpacked inside") for outcome in result["refused"].values()), (
                report["python"],
                mode,
                result["refused"],
            )
            assert result["symlink"].startswith("int main"), mode
            assert set(result["modes"].values()) == {"0o755"}, result["modes"]
        own_checks = report["unpack"]["False"]  # type: ignore[index]
        assert set(own_checks["refused"].values()) == {"refused"}, own_checks["refused"]
    # tools/llama_wheel.py's own checks, torch_setup's choice and lock's check give the same answers
    assert old["unpack"]["False"] == own["unpack"]["False"]  # type: ignore[index]
    for key in ("cmake_args", "patches", "torch_setup", "lock"):
        assert old[key] == own[key], key
    assert old["lock"] == {"same": 0, "drifted": 1}
    assert own["torch_setup"]["status"] == 0  # type: ignore[index]
    assert any("--extra-index-url" in call for call in own["torch_setup"]["installs"])  # type: ignore[index]

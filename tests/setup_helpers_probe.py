"""Runs ``make setup``'s helpers (tools/llama_wheel.py, tools/torch_setup.py, tools/lock.py) without the
network and prints what they did as JSON, so that tests/test_old_python.py can run it under another Python
(the oldest one on the machine, e.g. Debian 12's 3.11.2) and under the test's own and compare.

Standard library only, besides ``packaging`` (set-up installs it before the helpers run): the directory
holding it is the second argument. Usage: ``python setup_helpers_probe.py WORK_DIR [PACKAGING_DIR]``.
"""

from __future__ import annotations

import importlib.util
import io
import json
import sys
import tarfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

TOOLS = Path(__file__).resolve().parent.parent / "tools"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def tarball(path: Path, members: Sequence[tuple[str, str, str]]) -> Path:
    """A .tar.gz of (name, kind, data) members: kind "file" (data: contents), "dir", "sym" or "hard" (data:
    the link's target) or "fifo"."""
    with tarfile.open(path, "w:gz") as tar:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            payload = None
            if kind == "file":
                payload = data.encode()
                info.size = len(payload)
                info.mode = 0o4777  # set-user-ID and world-writable: both must be dropped
            elif kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
            elif kind in ("sym", "hard"):
                info.type = tarfile.SYMTYPE if kind == "sym" else tarfile.LNKTYPE
                info.linkname = data
                info.mode = 0o4777  # a hard link's mode is its target's: it must be cleaned too
            else:
                info.type = tarfile.FIFOTYPE
            tar.addfile(info, io.BytesIO(payload) if payload is not None else None)
    return path


SOURCE = "llama_cpp_python-0.0.1"
GOOD = [
    (f"{SOURCE}", "dir", ""),
    (f"{SOURCE}/pyproject.toml", "file", "[project]\nname = 'llama_cpp_python'\n"),
    (f"{SOURCE}/vendor/llama.cpp/ggml.c", "file", "int main(void) { return 0; }\n"),
    (f"{SOURCE}/vendor/llama.cpp/latest", "sym", "ggml.c"),
    (f"{SOURCE}/vendor/llama.cpp/copy.c", "hard", f"{SOURCE}/vendor/llama.cpp/ggml.c"),
]
# each is refused by Python's filter="data" and by tools/llama_wheel.py's own checks
HOSTILE = {
    "climbs out": [("../escaped.txt", "file", "x")],
    "absolute name": [("/tmp/simul-probe-absolute.txt", "file", "x")],
    "symlink out": [(f"{SOURCE}/out", "sym", "../../..")],
    "absolute symlink": [(f"{SOURCE}/etc", "sym", "/etc")],
    "hard link out": [(f"{SOURCE}/passwd", "hard", "../../etc/passwd")],
    "write through a symlink (Python's filter: lands inside)": [
        (f"{SOURCE}/up", "sym", ".."),
        (f"{SOURCE}/up/escaped.txt", "file", "x"),
    ],
    "fifo": [(f"{SOURCE}/pipe", "fifo", "")],
}


def unpacking(llama_wheel: ModuleType, work: Path, data_filter: bool | None) -> dict[str, object]:
    tag = {None: "default", True: "filter", False: "own-checks"}[data_filter]
    into = work / f"good-{tag}"
    into.mkdir()
    archive = tarball(work / f"good-{tag}.tar.gz", GOOD)
    llama_wheel.unpack(archive, into, data_filter=data_filter)
    files = sorted(str(p.relative_to(into)) for p in into.rglob("*"))
    vendored = into / SOURCE / "vendor" / "llama.cpp"
    modes = {p.name: oct(p.stat().st_mode & 0o7777) for p in sorted(vendored.iterdir()) if not p.is_symlink()}
    result: dict[str, object] = {
        "files": files,
        "modes": modes,
        "symlink": (vendored / "latest").read_text(),
        "refused": {},
    }
    refused: dict[str, str] = {}
    for case, members in HOSTILE.items():
        where = work / f"{tag}-{case.replace(' ', '-')}" / "inside"
        where.mkdir(parents=True)
        archive = tarball(where.parent / "a.tar.gz", members)
        try:
            llama_wheel.unpack(archive, where, data_filter=data_filter)
            # Python's filter unpacks "/name" as "name", inside; the own checks refuse it
            refused[case] = "unpacked inside"
        except SystemExit as exc:
            refused[case] = "refused" if "refused to unpack" in str(exc) else f"other: {exc}"
        written = sorted(str(p.relative_to(where.parent)) for p in where.parent.rglob("*"))
        if [w for w in written if not w.startswith("inside") and w != "a.tar.gz"]:
            refused[case] += f", wrote outside: {written}"
    result["refused"] = refused
    return result


def torch_setup_run(torch_setup: ModuleType) -> dict[str, object]:
    """setup() with a pip that offers the CUDA build from the index and the CPU build from the CPU index."""
    calls: list[list[str]] = []

    def pip(args: Sequence[str]) -> tuple[int, str]:
        calls.append(list(args))
        if "--dry-run" not in args:
            return 0, "Installing collected packages: torch\nSuccessfully installed torch-2.13.0\n"
        cpu = "--extra-index-url" in args
        requires = [] if cpu else ['nvidia-cublas==13.1.0.3; platform_system == "Linux"']
        name = "torch-2.13.0+cpu-cp311-linux_x86_64.whl" if cpu else "torch-2.13.0-cp311-linux_x86_64.whl"
        report = {
            "install": [
                {
                    "metadata": {"name": "torch", "version": "2.13.0", "requires_dist": requires},
                    "download_info": {"url": f"https://files.example/{name}"},
                }
            ]
        }
        Path(args[list(args).index("--report") + 1]).write_text(json.dumps(report))
        return 0, ""

    said: list[str] = []
    status = torch_setup.setup(
        "torch==2.13.0",
        Path("constraints.txt"),
        "https://cpu.example/whl",
        pip=pip,
        size_of=lambda names: 0,
        accelerated=lambda: [],
        installed=lambda spec: None,
        say=said.append,
    )
    installs = [c for c in calls if "--dry-run" not in c]
    return {"status": status, "said": said, "installs": installs, "dry_runs": len(calls) - len(installs)}


def lock_run(lock: ModuleType, work: Path) -> dict[str, object]:
    """tools/lock.py --check of the committed constraints.txt against a site-packages made from it, then
    with one package at another version."""
    committed = lock.parse((TOOLS.parent / "constraints.txt").read_text(encoding="utf-8"))
    out: dict[str, object] = {}
    for case, change in (("same", None), ("drifted", "sacrebleu")):
        site = work / f"site-{case}"
        site.mkdir()
        for line in committed.core:
            name, version = line.split("==")
            if name == change:
                version = "1.0.0"
            info = site / f"{name.replace('-', '_')}-{version}.dist-info"
            info.mkdir()
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        out[case] = lock.main(["-o", str(TOOLS.parent / "constraints.txt"), "--check", "--path", str(site)])
    return out


def main(argv: Sequence[str]) -> int:
    work = Path(argv[0])
    if len(argv) > 1:
        sys.path.insert(0, argv[1])
    llama_wheel, lock, torch_setup = load("llama_wheel"), load("lock"), load("torch_setup")
    report = {
        "python": ".".join(map(str, sys.version_info[:3])),
        "has_data_filter": hasattr(tarfile, "data_filter"),
        "unpack": {
            str(mode): unpacking(llama_wheel, work, mode)
            for mode in ((None, False, True) if hasattr(tarfile, "data_filter") else (None, False))
        },
        "cmake_args": llama_wheel.platform_cmake_args("-DLLAVA_BUILD=OFF", "avx2 amx_tile", "x86_64", {}),
        "patches": llama_wheel.patches_digest(llama_wheel.patch_files()),
        "torch_setup": torch_setup_run(torch_setup),
        "lock": lock_run(lock, work),
    }
    sys.stdout.flush()
    print("REPORT " + json.dumps(report, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

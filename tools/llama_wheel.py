#!/usr/bin/env python3
"""Build llama-cpp-python from source once and keep the wheel where the next set-up finds it.

pip's own wheel cache ignores CMAKE_ARGS, so a rebuild with other flags could silently reuse a wheel built
differently. This cache is keyed on everything that changes the binary: the llama-cpp-python version, the
CMake arguments, the Python version and ABI, the machine type, (because llama.cpp builds for the host CPU
by default) the CPU's feature flags, and the patches applied.

simul's patches to the vendored llama.cpp (``tools/llama-patches/*.patch``, applied in name order with
``patch -p1`` inside ``vendor/llama.cpp`` of the source archive) are part of the build: today one,
``ggml-cpu-exact.patch``, the switch of exact mode (simul.decoding.backend.exactness). ``--no-patches`` (or
SIMUL_LLAMA_PATCHES=none) builds the stock source; simul then runs in fast mode only, and says so.

Prints the path of the wheel to install. Usage:
    python tools/llama_wheel.py --version 0.3.36 --cmake-args=-DLLAVA_BUILD=OFF [--no-patches]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from collections import Counter
from pathlib import Path


def cache_root() -> Path:
    explicit = os.environ.get("SIMUL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "simul"


def cpu_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return " ".join(sorted(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return platform.processor()


# ggml's AMX matrix multiplication (built in whenever -march=native enables AMX) dies with SIGSEGV at its
# first ldtilecfg on some virtual machines that report AMX, although the kernel grants the tile permission and
# a plain ldtilecfg/tilezero/tilestored program runs there (seen on a 2-vCPU Sapphire Rapids KVM guest,
# Linux 6.18, llama-cpp-python 0.3.36: every forward pass of a Q4_K model crashed). For the one-token and
# short verification passes simul makes, AMX brings little; AVX-512 VNNI stays. SIMUL_LLAMA_AMX=1 keeps it.
AMX_FLAGS = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"


def platform_cmake_args(cmake_args: str, flags: str, machine: str, environ: dict[str, str]) -> str:
    """CMake arguments this machine needs on top of the given ones: AMX off where the CPU reports it (see
    AMX_FLAGS), unless the arguments already set the compiler flags or SIMUL_LLAMA_AMX=1."""
    words = flags.split()
    if (
        machine.lower() in ("x86_64", "amd64")
        and "amx_tile" in words
        and "CMAKE_C_FLAGS" not in cmake_args
        and "CMAKE_CXX_FLAGS" not in cmake_args
        and environ.get("SIMUL_LLAMA_AMX", "") != "1"
    ):
        extra = f"-DCMAKE_C_FLAGS='{AMX_FLAGS}' -DCMAKE_CXX_FLAGS='{AMX_FLAGS}'"
        return f"{cmake_args} {extra}".strip()
    return cmake_args


PATCH_DIR = Path(__file__).resolve().parent / "llama-patches"


def patch_files(directory: Path = PATCH_DIR) -> list[Path]:
    """simul's patches to the vendored llama.cpp, in the order they are applied."""
    return sorted(directory.glob("*.patch")) if directory.is_dir() else []


def patches_digest(patches: list[Path]) -> str:
    """One SHA-256 over the patches' names and contents ("none" without patches): part of the cache key."""
    if not patches:
        return "none"
    digest = hashlib.sha256()
    for path in patches:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_key(version: str, cmake_args: str, patches: str = "none") -> str:
    parts = [
        f"llama-cpp-python=={version}",
        f"CMAKE_ARGS={cmake_args}",
        f"python={sys.implementation.cache_tag}",
        f"abi={sysconfig.get_config_var('SOABI')}",
        f"machine={platform.machine()}",
        f"cpu={cpu_flags()}",
    ]
    if patches != "none":  # unpatched builds keep the key they always had (their cached wheels stay valid)
        parts.append(f"patches={patches}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def apply_patches(source: Path, patches: list[Path]) -> None:
    """Apply each patch inside the source archive's vendored llama.cpp; fails naming the patch that does not
    apply (another llama-cpp-python version than the patch was made for)."""
    vendored = source / "vendor" / "llama.cpp"
    if not vendored.is_dir():
        raise SystemExit(f"{source} has no vendor/llama.cpp: not a llama-cpp-python source archive")
    for path in patches:
        done = subprocess.run(
            ["patch", "-p1", "--batch", "--forward", "-d", str(vendored), "-i", str(path)],
            check=False,
            stdout=sys.stderr,
        )
        if done.returncode != 0:
            raise SystemExit(
                f"{path.name} does not apply to this llama-cpp-python's vendored llama.cpp (made for "
                "0.3.36); build without it: SIMUL_LLAMA_PATCHES=none make setup"
            )
        print(f"llama-cpp-python: applied {path.name}", file=sys.stderr)


class UnsafeArchive(Exception):
    """A member of an archive that would be written outside the directory it is unpacked into."""


def _outside(path: str) -> bool:
    return path == ".." or path.startswith("../")


def checked_members(tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """The archive's members, each checked and cleaned as Python's ``filter="data"`` would (which came only
    in Python 3.11.4; Debian 12's python3 is 3.11.2); raises UnsafeArchive naming the first member that is
    refused.

    Refused: absolute names, names that climb out of the directory (``..``), devices and FIFOs, links with
    an absolute target or one that leads outside, a name that goes through a symbolic link of the archive
    (``link/file`` where ``link`` is one: the file would land where the link points), and a link target that
    goes through another link on its way (``link/../x`` resolves from where ``link`` points). Every check is
    on the names alone, over the whole archive, so the order of the members cannot defeat it; the directory
    unpacked into must be new (download_source's is). Kept: regular files, directories and links inside,
    with set-user-ID, set-group-ID, sticky and group/other write bits cleared and the owner set to the
    current user (no chown to the archive's owner when run as root)."""
    members = tar.getmembers()
    names = [os.path.normpath(m.name) for m in members]
    links = {name for name, m in zip(names, members, strict=True) if m.issym()}
    seen = Counter(names)

    def through_link(path: str) -> bool:
        parts = path.split("/")
        return any("/".join(parts[:i]) in links for i in range(1, len(parts)))

    def link_target(start: str, target: str, member: str) -> None:
        """Walk ``target`` from directory ``start`` component by component, as the kernel would."""
        if target.startswith("/"):
            raise UnsafeArchive(f"{member}: link to an absolute path ({target})")
        stack = [p for p in start.split("/") if p not in ("", ".")]
        components = [p for p in target.split("/") if p not in ("", ".")]
        for i, part in enumerate(components):
            if part == "..":
                if not stack:
                    raise UnsafeArchive(f"{member}: link leads outside the directory ({target})")
                stack.pop()
                continue
            stack.append(part)
            if "/".join(stack) in links and i < len(components) - 1:
                raise UnsafeArchive(f"{member}: link target goes through another link ({target})")

    uid, gid = os.getuid(), os.getgid()
    for name, member in zip(names, members, strict=True):
        if member.name.startswith("/") or os.path.isabs(member.name):
            raise UnsafeArchive(f"{member.name}: absolute path")
        if _outside(name):
            raise UnsafeArchive(f"{member.name}: outside the directory")
        if through_link(name):
            raise UnsafeArchive(f"{member.name}: goes through a link of the archive")
        if member.issym():
            if seen[name] > 1:
                raise UnsafeArchive(f"{member.name}: a link and another member of the same name")
            link_target(os.path.dirname(name), member.linkname, member.name)
        elif member.islnk():
            target = os.path.normpath(member.linkname)
            if member.linkname.startswith("/") or _outside(target):
                raise UnsafeArchive(f"{member.name}: hard link outside the directory ({member.linkname})")
            if through_link(target):
                raise UnsafeArchive(f"{member.name}: hard link through a link ({member.linkname})")
        elif not (member.isreg() or member.isdir()):
            raise UnsafeArchive(f"{member.name}: not a file, directory or link")
        member.mode &= 0o755  # no set-ID or sticky bits, no group/other write
        member.mode |= 0o700 if member.isdir() else 0o600
        member.uid, member.gid, member.uname, member.gname = uid, gid, "", ""
    return members


def unpack(archive: Path, into: Path, data_filter: bool | None = None) -> None:
    """Unpack ``archive`` into the new directory ``into``: with ``filter="data"`` where this Python has it
    (3.11.4+), else with checked_members (``data_filter=False`` forces that, for tests). Exits naming the
    archive and the member when a member is unsafe."""
    if data_filter is None:
        data_filter = hasattr(tarfile, "data_filter")
    try:
        with tarfile.open(archive) as tar:
            if data_filter:
                tar.extractall(into, filter="data")
            else:
                tar.extractall(into, members=checked_members(tar))
    except (UnsafeArchive, tarfile.TarError) as exc:
        raise SystemExit(f"{archive.name}: refused to unpack: {exc}") from exc


def download_source(version: str, into: Path) -> Path:
    """The llama-cpp-python source archive from the package index, unpacked; returns its directory."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        f"llama-cpp-python=={version}",
        "-d",
        str(into),
    ]
    done = subprocess.run(cmd, check=False, stdout=sys.stderr)
    archives = sorted(into.glob("llama_cpp_python-*.tar.gz"))
    if done.returncode != 0 or not archives:
        raise SystemExit(f"could not download the llama-cpp-python {version} source archive")
    unpack(archives[0], into)
    sources = [p for p in into.iterdir() if p.is_dir() and p.name.startswith("llama_cpp_python-")]
    if len(sources) != 1:
        raise SystemExit(f"unexpected contents in {archives[0].name}")
    return sources[0]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", required=True, help="llama-cpp-python version to build")
    parser.add_argument("--cmake-args", default="", help="CMAKE_ARGS for the llama.cpp build")
    parser.add_argument(
        "--no-patches", action="store_true", help="build the stock source, without tools/llama-patches"
    )
    args = parser.parse_args()
    stock = args.no_patches or os.environ.get("SIMUL_LLAMA_PATCHES", "").lower() in ("none", "0", "off")
    patches = [] if stock else patch_files()
    cmake_args = platform_cmake_args(args.cmake_args, cpu_flags(), platform.machine(), dict(os.environ))
    if cmake_args != args.cmake_args:
        print(
            f"llama-cpp-python: adding for this CPU: {cmake_args[len(args.cmake_args) :].strip()}",
            file=sys.stderr,
        )

    target = (
        cache_root()
        / "wheels"
        / "llama-cpp-python"
        / f"{args.version}-{cache_key(args.version, cmake_args, patches_digest(patches))}"
    )
    found = sorted(target.glob("llama_cpp_python-*.whl")) if target.is_dir() else []
    if found:
        print(f"llama-cpp-python {args.version}: reusing {found[0]}", file=sys.stderr)
        print(found[0])
        return 0

    print(
        f"llama-cpp-python {args.version}: building from source (a few minutes; cached in {target})",
        file=sys.stderr,
    )
    env = dict(os.environ, CMAKE_ARGS=cmake_args)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        what = f"llama-cpp-python=={args.version}"
        if patches:
            source = download_source(args.version, Path(tmp) / "src")
            apply_patches(source, patches)
            what = str(source)
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", what, "-w", tmp]
        # pip's progress goes to stderr: stdout carries only the wheel path, for the Makefile to read
        done = subprocess.run(cmd, env=env, check=False, stdout=sys.stderr)
        if done.returncode != 0:
            print("building llama-cpp-python failed; see the compiler output above", file=sys.stderr)
            return done.returncode
        wheels = sorted(Path(tmp).glob("llama_cpp_python-*.whl"))
        if not wheels:
            print("pip reported success but wrote no llama_cpp_python wheel", file=sys.stderr)
            return 1
        staging = Path(tmp) / "out"
        staging.mkdir()
        shutil.move(str(wheels[0]), staging / wheels[0].name)
        if target.exists():  # another set-up finished first; use its wheel
            shutil.rmtree(staging)
        else:
            staging.rename(target)
    wheel = sorted(target.glob("llama_cpp_python-*.whl"))[0]
    print(wheel)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Install torch for ``make setup``: a CPU build where one can be had, else the index's build, said once.

simul runs torch only for COMET, on the CPU. On Linux, ``pip install torch`` from the package index gets the
CUDA build, which brings about twenty accelerator packages (cuda-bindings, cuda-toolkit, the nvidia-*
libraries, triton; tools/lock.py names them) and some gigabytes that a CPU tool never uses. So, before
installing anything, this asks pip (a dry run with ``--no-deps``: torch's metadata only, no wheel) which build
it would take:

1. with pip's own configuration (a wheel directory in ``PIP_FIND_LINKS`` or pip.conf's find-links, an extra
   index): if that is a CPU build (torch's metadata requires no accelerator package here), it is installed;
2. otherwise, with ``--extra-index-url CPU_INDEX`` added (``--cpu-index``, the Makefile's TORCH_CPU_INDEX,
   by default PyTorch's CPU wheel index): if pip reaches it and takes its CPU build, that is installed, with
   the same option;
3. otherwise the index's build is installed, and one message says what it cost: the accelerator packages,
   the megabytes pip fetched for them (from pip's own log) and their size in the venv, and how to get the CPU
   build instead.

Every install is pinned by the constraints file (``-c``). A venv that already holds a torch that fits the
spec is left as it is.

Usage: ``python tools/torch_setup.py --spec torch==2.13.0 --constraints constraints.txt [--cpu-index URL]``
(run by the venv's Python: pip installs into it).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata as metadata
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from urllib.parse import unquote

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement


def _lock_tool() -> ModuleType:
    """tools/lock.py, which says which packages are accelerator packages (tools/ is not a package)."""
    spec = importlib.util.spec_from_file_location("_simul_lock_tool", Path(__file__).with_name("lock.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


_LOCK = _lock_tool()
is_accelerator: Callable[[str], bool] = _LOCK.is_accelerator
normalize: Callable[[str], str] = _LOCK.normalize

DEFAULT_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: pip's own size figures: "Downloading NAME (915.5 MB)", "Using cached NAME (69 kB)"
_FETCHED = re.compile(r"^\s*(Downloading|Using cached) (\S+) \(([\d.]+) (bytes|kB|MB|GB)\)\s*$")
_UNIT = {"bytes": 1, "kB": 1000, "MB": 1000**2, "GB": 1000**3}

#: runs a pip command line (the arguments after ``python -m pip``); returns its exit status and its output
Pip = Callable[[Sequence[str]], tuple[int, str]]


def run_pip(args: Sequence[str]) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "pip", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout


def accelerators(requires: Iterable[str], environment: dict[str, str] | None = None) -> list[str]:
    """The accelerator packages among a distribution's requirements that apply on this machine (markers
    evaluated without extras), by normalized name."""
    base = environment if environment is not None else default_environment()
    env = {key: str(value) for key, value in base.items()}
    env["extra"] = ""
    found = set()
    for line in requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if is_accelerator(req.name) and (req.marker is None or req.marker.evaluate(env)):
            found.add(normalize(req.name))
    return sorted(found)


@dataclass(frozen=True)
class Choice:
    """What pip would install for the spec: torch's version, its file, and the accelerator packages it needs
    on this machine (none: a CPU build)."""

    version: str
    file: str
    accelerators: tuple[str, ...]

    @property
    def cpu(self) -> bool:
        return not self.accelerators


def probe(pip: Pip, spec: str, constraints: Path, extra: Sequence[str] = ()) -> Choice | None:
    """The build pip would take for ``spec`` (a dry run of torch alone), or None when pip cannot say."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        args = ["install", "--dry-run", "--ignore-installed", "--no-deps", "--quiet", "--report", str(report)]
        status, _ = pip([*args, "-c", str(constraints), *extra, spec])
        if status != 0 or not report.exists():
            return None
        installs = json.loads(report.read_text(encoding="utf-8")).get("install", [])
    for item in installs:
        meta = item.get("metadata", {})
        if normalize(str(meta.get("name", ""))) == "torch":
            url = str(item.get("download_info", {}).get("url", ""))
            return Choice(
                str(meta.get("version", "")),
                unquote(url.rsplit("/", 1)[-1]),
                tuple(accelerators(meta.get("requires_dist") or [])),
            )
    return None


def fetched(log: str) -> dict[str, int]:
    """Bytes of each file pip downloaded or took from its cache, by file name, from its log."""
    out: dict[str, int] = {}
    for line in log.splitlines():
        match = _FETCHED.match(line)
        if match:
            out[match.group(2)] = round(float(match.group(3)) * _UNIT[match.group(4)])
    return out


def installed_bytes(names: Iterable[str]) -> int:
    """The size of the installed files of these distributions (their RECORD), in bytes."""
    total = 0
    for name in names:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for file in dist.files or []:
            with contextlib.suppress(OSError):
                total += Path(str(dist.locate_file(file))).stat().st_size
    return total


def _file_key(file_name: str) -> str:
    """The normalized distribution name of a wheel or sdist file name."""
    return normalize(re.split(r"-\d", file_name, maxsplit=1)[0])


def _size(n: int) -> str:
    return f"{n / 1000**3:.1f} GB" if n >= 10**8 else f"{n / 1000**2:.0f} MB"


def installed_accelerators() -> list[str]:
    """The accelerator packages installed here, by normalized name."""
    names = {normalize(d.metadata["Name"] or "") for d in metadata.distributions()}
    return sorted(n for n in names if n and is_accelerator(n))


def cost_message(
    version: str,
    accelerated: Sequence[str],
    log: str,
    size_of: Callable[[Iterable[str]], int],
    spec: str,
    tried: str | None,
) -> str:
    """The one message about the CUDA build: the accelerator packages that came with it (``accelerated``,
    normalized names, those torch requires and theirs) and what they cost."""
    names = [n.replace("_", "-") for n in accelerated]
    mine = set(accelerated) | {"torch"}
    got = {f: n for f, n in fetched(log).items() if _file_key(f) in mine}
    cached = sum(n for f, n in got.items() if f"Using cached {f} " in log)
    downloaded = f"pip downloaded {_size(sum(got.values()) - cached)} for torch and them"
    if cached:
        downloaded += f" (and took {_size(cached)} from its cache)"
    sources = "pip's wheel sources" + (f" or at {tried}" if tried else "")
    text = (
        f"make setup: torch {version} is the package index's CUDA build: no CPU build of {spec} was "
        f"found in {sources}. With it came {len(names)} accelerator packages that simul, which runs torch "
        f"on the CPU, does not use ({', '.join(names)}): {downloaded}, and torch and they take "
        f"{_size(size_of(['torch', *accelerated]))} in the venv. For the CPU build instead, put its "
        "wheel in a directory named by PIP_FIND_LINKS, or give a CPU wheel index this machine reaches: "
        "make distclean setup TORCH_CPU_INDEX=URL"
    )
    return textwrap.fill(text, width=110, subsequent_indent="  ", break_on_hyphens=False)


def already_installed(spec: str) -> str | None:
    """The installed torch's version when it fits ``spec``."""
    try:
        version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None
    return version if Requirement(spec).specifier.contains(version, prereleases=True) else None


def setup(
    spec: str,
    constraints: Path,
    cpu_index: str,
    pip: Pip = run_pip,
    size_of: Callable[[Iterable[str]], int] = installed_bytes,
    accelerated: Callable[[], list[str]] = installed_accelerators,
    installed: Callable[[str], str | None] = already_installed,
    say: Callable[[str], None] = print,
) -> int:
    """Install ``spec`` as the module docstring says; returns pip's exit status. The keyword arguments are
    what it asks of pip and of the venv (tests pass their own)."""
    extra: list[str] = []
    if installed(spec):
        # set up before: pip checks torch's dependencies against the constraints, and changes nothing else
        status, log = pip(["install", "--quiet", "-c", str(constraints), spec])
        if status != 0:
            say(log)
        return status
    choice = probe(pip, spec, constraints)
    tried = None
    if choice is not None and not choice.cpu and cpu_index:
        option = ["--extra-index-url", cpu_index]
        # an index this machine cannot reach is passed over at once, not retried for minutes
        cpu = probe(pip, spec, constraints, [*option, "--retries", "0", "--timeout", "20"])
        if cpu is not None and cpu.cpu:
            extra, choice = option, cpu
            say(f"make setup: torch's CPU build from {cpu_index} ({cpu.file})")
        else:
            tried = cpu_index
    status, log = pip(["install", "--progress-bar", "off", "-c", str(constraints), *extra, spec])
    if status != 0:
        say(log)
        return status
    came = accelerated()
    if came and "Installing collected packages" in log:
        version = installed(spec) or (choice.version if choice else "?")
        say(cost_message(version, came, log, size_of, spec, tried))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--spec", required=True, help="torch's requirement, e.g. torch==2.13.0")
    parser.add_argument("--constraints", type=Path, required=True, help="the constraints file (-c)")
    parser.add_argument(
        "--cpu-index",
        default=DEFAULT_CPU_INDEX,
        help="a CPU wheel index tried when pip's own sources give a CUDA build ('' for none; "
        f"default {DEFAULT_CPU_INDEX})",
    )
    args = parser.parse_args(argv)
    return setup(args.spec, args.constraints, args.cpu_index)


if __name__ == "__main__":
    sys.exit(main())

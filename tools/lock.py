#!/usr/bin/env python3
"""Write the pip constraints file that pins simul's whole stack (``make lock``).

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

Usage: ``python tools/lock.py [-o constraints.txt] [--check]``. ``--check`` writes nothing and exits 1 when
the file differs from what the venv holds (what ``make lock`` would write).
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

DEFAULT_OUTPUT = "constraints.txt"
#: never pinned here (see the module docstring)
LEFT_OUT = frozenset({"simul", "pip", "llama_cpp_python"})
HEADER = """\
# simul's pinned stack: every package of the venv `make setup` made, as name==version (tools/lock.py).
# `make setup` and CI install with `-c constraints.txt`; regenerate with `make lock` after a deliberate
# upgrade, then `make ci-baseline` (README, "Regression checks in CI"). Not for `pip install simul` users:
# pyproject.toml's ranges apply to them. llama-cpp-python is pinned by the Makefile (LLAMA_CPP_VERSION).
"""


def normalize(name: str) -> str:
    """PEP 503 name normalization, with underscores (as pip compares names)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def pins(distributions: Iterable[metadata.Distribution]) -> list[str]:
    """``name==version`` for each distribution, sorted by normalized name, the left-out ones omitted; one line
    per name (the first found on sys.path wins, as for import)."""
    seen: dict[str, str] = {}
    for dist in distributions:
        name = dist.metadata["Name"]
        if not name:
            continue
        key = normalize(name)
        if key in LEFT_OUT or key in seen:
            continue
        # a local version label (torch's "2.13.0+cpu" from the wheelhouse) is left out: "==2.13.0" matches it
        # (PEP 440), and the same pin then also fits the index's build where the wheelhouse has none
        seen[key] = f"{key.replace('_', '-')}=={dist.version.split('+', 1)[0]}"
    return [seen[k] for k in sorted(seen)]


def render(lines: Sequence[str]) -> str:
    return HEADER + "".join(f"{line}\n" for line in lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "-o", "--output", type=Path, default=Path(DEFAULT_OUTPUT), help="the constraints file"
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if the file is out of date"
    )
    args = parser.parse_args(argv)
    text = render(pins(metadata.distributions()))
    if args.check:
        old = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if old != text:
            print(f"{args.output} differs from this venv's packages: run `make lock`", file=sys.stderr)
            return 1
        print(f"{args.output} matches this venv ({text.count(chr(10)) - HEADER.count(chr(10))} packages)")
        return 0
    temp = args.output.with_name(args.output.name + ".tmp")
    temp.write_text(text, encoding="utf-8")
    temp.replace(args.output)
    print(f"wrote {args.output}: {len(text.splitlines()) - HEADER.count(chr(10))} packages pinned")
    return 0


if __name__ == "__main__":
    sys.exit(main())

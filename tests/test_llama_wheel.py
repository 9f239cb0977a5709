"""tools/llama_wheel.py: the CMake arguments added for the machine, the cache key they go into, and the
unpacking of the source archive."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import load_tool
from tests.setup_helpers_probe import tarball

tool = load_tool("llama_wheel")

AMX_CPU = "avx2 avx512f amx_bf16 amx_tile amx_int8 fma"


def test_amx_is_turned_off_where_the_cpu_reports_it() -> None:
    args = tool.platform_cmake_args("-DLLAVA_BUILD=OFF", AMX_CPU, "x86_64", {})
    assert args.startswith("-DLLAVA_BUILD=OFF ")
    assert "-DCMAKE_C_FLAGS='-mno-amx-tile -mno-amx-int8 -mno-amx-bf16'" in args
    assert "-DCMAKE_CXX_FLAGS='-mno-amx-tile -mno-amx-int8 -mno-amx-bf16'" in args
    # scikit-build-core splits CMAKE_ARGS with shlex: each flag list stays one argument
    import shlex

    assert "-DCMAKE_CXX_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" in shlex.split(args)


def test_nothing_is_added_elsewhere_or_when_asked_not_to() -> None:
    base = "-DLLAVA_BUILD=OFF"
    assert tool.platform_cmake_args(base, "avx2 avx512f fma", "x86_64", {}) == base
    assert tool.platform_cmake_args(base, AMX_CPU, "aarch64", {}) == base
    assert tool.platform_cmake_args(base, AMX_CPU, "x86_64", {"SIMUL_LLAMA_AMX": "1"}) == base
    own = "-DCMAKE_CXX_FLAGS=-O2"
    assert tool.platform_cmake_args(own, AMX_CPU, "x86_64", {}) == own


def test_the_added_arguments_change_the_cache_key() -> None:
    base = "-DLLAVA_BUILD=OFF"
    added = tool.platform_cmake_args(base, AMX_CPU, "x86_64", {})
    assert tool.cache_key("0.3.36", base) != tool.cache_key("0.3.36", added)


# tools/llama_wheel.py's own checks of a source archive, used where Python lacks tarfile's filter="data"
# (before 3.11.4: Debian 12's python3 is 3.11.2); tests/test_old_python.py runs them under such a Python.
def own_unpack(tmp_path: Path, members: list[tuple[str, str, str]]) -> list[str]:
    into = tmp_path / "into"
    into.mkdir()
    tool.unpack(tarball(tmp_path / "a.tar.gz", members), into, data_filter=False)
    return sorted(str(p.relative_to(into)) for p in into.rglob("*"))


def test_a_plain_source_tree_unpacks_as_it_is(tmp_path: Path) -> None:
    members = [("src/a.c", "file", "x"), ("src/b/c.h", "file", "y"), ("src/link", "sym", "b/c.h")]
    assert own_unpack(tmp_path, members) == ["src", "src/a.c", "src/b", "src/b/c.h", "src/link"]
    assert (tmp_path / "into" / "src" / "link").read_text() == "y"
    assert oct((tmp_path / "into" / "src" / "a.c").stat().st_mode & 0o7777) == "0o755"  # was 0o4777


@pytest.mark.parametrize(
    ("members", "why"),
    [
        # a link that stays inside, and another whose target climbs from where the first points
        ([("d/e/s", "sym", "../.."), ("a", "sym", "d/e/s/../x")], "goes through another link"),
        # the link comes after the file that goes through it: the order does not matter
        ([("x/f", "file", "z"), ("x", "sym", "..")], "goes through a link"),
        ([("l", "sym", "a"), ("l", "file", "z")], "a link and another member of the same name"),
        ([("h", "hard", "/etc/passwd")], "hard link outside"),
        ([("x/../../y", "file", "z")], "outside the directory"),
    ],
)
def test_the_own_checks_refuse_what_would_land_outside(
    tmp_path: Path, members: list[tuple[str, str, str]], why: str
) -> None:
    with pytest.raises(SystemExit, match=f"a.tar.gz: refused to unpack: .*{why}"):
        own_unpack(tmp_path, members)
    assert list((tmp_path / "into").iterdir()) == []

"""tools/llama_wheel.py: the CMake arguments added for the machine, and the cache key they go into."""

from __future__ import annotations

from tests.helpers import load_tool

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

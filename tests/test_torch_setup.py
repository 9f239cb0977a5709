"""tools/torch_setup.py: `make setup` takes torch's CPU build where it can, and says what the CUDA build cost
where it cannot (issue 39). pip is replaced by a fake that answers from a table; nothing is downloaded."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import load_tool

#: torch 2.13.0's requirements as the package index's (CUDA) build declares them
CUDA_REQUIRES = [
    "filelock",
    "typing-extensions>=4.10.0",
    "sympy>=1.13.3",
    "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.3; "
    'platform_system == "Linux"',
    'cuda-bindings<14,>=13.0.3; platform_system == "Linux" and python_version < "3.15"',
    'nvidia-cudnn-cu13==9.20.0.48; platform_system == "Linux"',
    'triton==3.7.1; platform_system == "Linux" and python_version < "3.15"',
    'optree>=0.13.0; extra == "optree"',
]
#: the CPU build's
CPU_REQUIRES = ["filelock", "typing-extensions>=4.10.0", "sympy>=1.13.3", 'optree>=0.13.0; extra == "optree"']
LINUX = {"platform_system": "Linux", "python_version": "3.11", "sys_platform": "linux"}
CPU_INDEX = "https://cpu.example/whl/cpu"


@dataclass(frozen=True)
class Build:
    """A torch build an index offers."""

    version: str
    file: str
    requires: list[str]


CUDA = Build("2.13.0", "torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl", CUDA_REQUIRES)
CPU = Build("2.13.0+cpu", "torch-2.13.0%2Bcpu-cp311-cp311-linux_x86_64.whl", CPU_REQUIRES)

#: what pip prints while installing the CUDA build (abridged): torch, three accelerator packages, one of them
#: from its cache, and sympy, which the CPU build needs too
CUDA_LOG = """\
Collecting torch==2.13.0
  Downloading torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl (915.5 MB)
Collecting sympy>=1.13.3 (from torch==2.13.0)
  Downloading sympy-1.14.0-py3-none-any.whl (6.3 MB)
Collecting nvidia-cublas==13.1.1.3.* (from cuda-toolkit[...]==13.0.3)
  Downloading nvidia_cublas-13.1.1.3-py3-none-manylinux_2_27_x86_64.whl (590.0 MB)
Collecting nvidia-cudnn-cu13==9.20.0.48 (from torch==2.13.0)
  Using cached nvidia_cudnn_cu13-9.20.0.48-py3-none-manylinux_2_27_x86_64.whl (700.0 MB)
Collecting triton==3.7.1 (from torch==2.13.0)
  Downloading triton-3.7.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl (94.5 MB)
Installing collected packages: sympy, triton, nvidia-cublas, nvidia-cudnn-cu13, torch
Successfully installed nvidia-cublas-13.1.1.3 nvidia-cudnn-cu13-9.20.0.48 sympy-1.14.0 torch-2.13.0 ...
"""


@pytest.fixture(scope="module")
def ts() -> object:
    return load_tool("torch_setup")


class FakePip:
    """Answers dry runs with the build each source offers (``None``: pip fails), records every command."""

    def __init__(self, configured: Build | None, cpu_index: Build | None = None):
        self.configured = configured
        self.cpu_index = cpu_index
        self.calls: list[list[str]] = []
        self.install_status = 0
        self.install_log = "Installing collected packages: torch\nSuccessfully installed torch-2.13.0\n"

    def __call__(self, args: Sequence[str]) -> tuple[int, str]:
        args = list(args)
        self.calls.append(args)
        if "--dry-run" not in args:
            return self.install_status, self.install_log
        build = self.cpu_index if "--extra-index-url" in args else self.configured
        if build is None:
            return 1, "ERROR: no such index"
        report = {
            "install": [
                {
                    "metadata": {
                        "name": "torch",
                        "version": build.version,
                        "requires_dist": build.requires,
                    },
                    "download_info": {"url": f"https://files.example/{build.file}"},
                }
            ]
        }
        Path(args[args.index("--report") + 1]).write_text(json.dumps(report))
        return 0, ""

    def installs(self) -> list[list[str]]:
        return [call for call in self.calls if "--dry-run" not in call]


def run(
    ts: object,
    pip: FakePip,
    cpu_index: str = CPU_INDEX,
    accelerated: Iterable[str] = (),
    installed: str | None = None,
) -> tuple[int, list[str]]:
    said: list[str] = []
    status = ts.setup(  # type: ignore[attr-defined]
        "torch==2.13.0",
        Path("constraints.txt"),
        cpu_index,
        pip=pip,
        size_of=lambda names: 1000**3 * len(list(names)),
        accelerated=lambda: list(accelerated),
        installed=lambda spec: installed,
        say=said.append,
    )
    return status, said


def test_accelerators_are_the_cuda_requirements_that_apply_here(ts: object) -> None:
    assert ts.accelerators(CUDA_REQUIRES, LINUX) == [  # type: ignore[attr-defined]
        "cuda_bindings",
        "cuda_toolkit",
        "nvidia_cudnn_cu13",
        "triton",
    ]
    assert ts.accelerators(CPU_REQUIRES, LINUX) == []  # type: ignore[attr-defined]
    mac = {**LINUX, "platform_system": "Darwin", "sys_platform": "darwin"}
    assert ts.accelerators(CUDA_REQUIRES, mac) == []  # type: ignore[attr-defined]


def test_a_configured_cpu_build_is_installed_as_it_is(ts: object) -> None:
    """A wheel directory (PIP_FIND_LINKS) with the CPU build: pip's own choice, no other index asked."""
    pip = FakePip(configured=CPU, cpu_index=CUDA)
    status, said = run(ts, pip)
    assert status == 0 and said == []
    assert len(pip.calls) == 2 and pip.installs() == [
        ["install", "--progress-bar", "off", "-c", "constraints.txt", "torch==2.13.0"]
    ]


def test_the_cpu_index_is_used_where_pips_own_sources_give_the_cuda_build(ts: object) -> None:
    pip = FakePip(configured=CUDA, cpu_index=CPU)
    status, said = run(ts, pip)
    assert status == 0
    assert pip.installs() == [
        [
            "install",
            "--progress-bar",
            "off",
            "-c",
            "constraints.txt",
            "--extra-index-url",
            CPU_INDEX,
            "torch==2.13.0",
        ]
    ]
    probe = pip.calls[1]
    assert probe[probe.index("--retries") + 1] == "0"  # an unreachable index is passed over at once
    assert said == [
        f"make setup: torch's CPU build from {CPU_INDEX} (torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl)"
    ]


@pytest.mark.parametrize("cpu_index", [None, "cuda"], ids=["unreachable", "no CPU build there"])
def test_elsewhere_the_index_build_is_installed_and_its_cost_said_once(
    ts: object, cpu_index: str | None
) -> None:
    pip = FakePip(configured=CUDA, cpu_index=None if cpu_index is None else CUDA)
    pip.install_log = CUDA_LOG
    came = ["cuda_bindings", "nvidia_cublas", "nvidia_cudnn_cu13", "triton"]
    status, said = run(ts, pip, accelerated=came)
    assert status == 0 and len(said) == 1
    assert pip.installs() == [["install", "--progress-bar", "off", "-c", "constraints.txt", "torch==2.13.0"]]
    text = " ".join(said[0].split())
    assert text.startswith("make setup: torch 2.13.0 is the package index's CUDA build")
    assert f"found in pip's wheel sources or at {CPU_INDEX}" in text
    assert (
        "4 accelerator packages" in text
        and "(cuda-bindings, nvidia-cublas, nvidia-cudnn-cu13, triton)" in text
    )
    # torch 915.5 + nvidia-cublas 590.0 + triton 94.5 MB downloaded, cuDNN's 700 MB from the cache; not sympy
    assert "pip downloaded 1.6 GB for torch and them (and took 0.7 GB from its cache)" in text
    assert "torch and they take 5.0 GB in the venv" in text  # the fake's 1 GB per distribution
    assert "PIP_FIND_LINKS" in text and "TORCH_CPU_INDEX=URL" in text


def test_no_cpu_index_is_asked_when_none_is_given(ts: object) -> None:
    pip = FakePip(configured=CUDA, cpu_index=CPU)
    pip.install_log = CUDA_LOG
    status, said = run(ts, pip, cpu_index="", accelerated=["triton"])
    assert status == 0 and not any("--extra-index-url" in call for call in pip.calls)
    assert len(said) == 1 and "found in pip's wheel sources." in " ".join(said[0].split())


def test_a_venv_set_up_before_is_only_checked(ts: object) -> None:
    pip = FakePip(configured=CUDA, cpu_index=CPU)
    status, said = run(ts, pip, accelerated=["triton"], installed="2.13.0")
    assert status == 0 and said == []
    assert pip.calls == [["install", "--quiet", "-c", "constraints.txt", "torch==2.13.0"]]


def test_a_failed_install_shows_pips_output(ts: object) -> None:
    pip = FakePip(configured=CUDA, cpu_index=None)
    pip.install_status, pip.install_log = 1, "ERROR: No matching distribution found for torch==2.13.0"
    status, said = run(ts, pip)
    assert status == 1 and said == ["ERROR: No matching distribution found for torch==2.13.0"]


def test_fetched_reads_pips_sizes(ts: object) -> None:
    sizes = ts.fetched(CUDA_LOG + "  Downloading idna-3.20-py3-none-any.whl (69 kB)\n")  # type: ignore[attr-defined]
    assert sizes["torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl"] == 915_500_000
    assert sizes["nvidia_cudnn_cu13-9.20.0.48-py3-none-manylinux_2_27_x86_64.whl"] == 700_000_000
    assert sizes["idna-3.20-py3-none-any.whl"] == 69_000 and len(sizes) == 6

"""run.json's environment: every score-moving package's version and the CPU's instruction-set families."""

from __future__ import annotations

import platform
from importlib import metadata

from simul import __version__
from simul.common.cpu import cpu_isa
from simul.machine.environment import PACKAGES, cpu_model, environment, isa_difference

XEON = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu vme sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c bmi2 avx2 avx512f avx512dq avx512cd avx512bw \
avx512vl avx512_vnni avx512_bf16 amx_bf16 amx_tile amx_int8 avx512_fp16 hypervisor

processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu vme sse sse2
"""
GRAVITON = """processor\t: 0
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc \
dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs paca pacg dcpodp sve2 i8mm bf16
CPU implementer\t: 0x41
"""


def test_every_score_moving_package_is_recorded() -> None:
    env = environment(3)
    assert set(PACKAGES) == {
        "llama_cpp_python",
        "sacrebleu",
        "unbabel_comet",
        "torch",
        "omnisteval",
        "mweralign",
        "numpy",
        "sentencepiece",
    }
    assert env["simul"] == __version__ and env["python"] == platform.python_version()
    assert env["threads"] == 3
    for key, dist in PACKAGES.items():
        try:
            expected: str | None = metadata.version(dist)
        except metadata.PackageNotFoundError:
            expected = None
        assert env[key] == expected, key
    assert env["sacrebleu"] is not None  # installed with simul: recorded, not None
    assert env["cpu_isa"] is None or env["cpu_isa"] == sorted(env["cpu_isa"])


def test_instruction_sets_are_the_simd_families_of_the_first_processor() -> None:
    assert cpu_isa(XEON) == [
        "amx_bf16",
        "amx_int8",
        "amx_tile",
        "avx",
        "avx2",
        "avx512_bf16",
        "avx512_fp16",
        "avx512_vnni",
        "avx512bw",
        "avx512cd",
        "avx512dq",
        "avx512f",
        "avx512vl",
        "bmi2",
        "f16c",
        "fma",
        "sse4_1",
        "sse4_2",
        "ssse3",
    ]
    assert cpu_model(XEON) == "Intel(R) Xeon(R) Platinum 8480+"
    assert cpu_isa(GRAVITON) == ["asimd", "asimddp", "asimdhp", "bf16", "fphp", "i8mm", "sve", "sve2"]
    assert cpu_isa("processor\t: 0\n") is None


def test_isa_difference_names_what_each_side_has_alone() -> None:
    epyc = ["avx", "avx2", "avx512f", "fma"]
    assert isa_difference(epyc, ["avx", "avx2", "fma"]) == ("+avx512f", "none of those")
    assert isa_difference(epyc, ["avx", "avx2", "amx_int8", "fma"]) == ("+avx512f", "+amx_int8")
    assert isa_difference(epyc, list(reversed(epyc))) is None
    assert isa_difference(epyc, None) is None  # not recorded (an older run file): not compared

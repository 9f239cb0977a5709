"""tools/free_cores.py: the idle run a loaded run is judged against, on the cores its busy loops leave."""

from __future__ import annotations

import os

import pytest

from tests.helpers import load_tool

free_cores = load_tool("free_cores")


@pytest.mark.parametrize(
    ("loops", "cores", "expected"),
    [
        (1, 2, (1, 1.0)),  # one core left: the idle one-thread run
        (2, 2, (1, 1.5)),  # none left: one thread at 2/3 of a core
        (3, 2, (1, 2.0)),
        (1, 4, (3, 1.0)),
        (4, 4, (1, 1.25)),
    ],
)
def test_the_reference_is_the_idle_run_on_the_cores_left(
    loops: int, cores: int, expected: tuple[int, float]
) -> None:
    assert free_cores.reference(loops, cores) == expected


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
@pytest.mark.parametrize("pinned", [True, False])
def test_busy_loops_are_pinned_as_asked_and_killed_even_on_interrupt(pinned: bool) -> None:
    busy_loops = load_tool("busy_loops")
    cores = sorted(os.sched_getaffinity(0))[:1]
    loops = busy_loops.Loops(2, cores if pinned else None)
    with pytest.raises(KeyboardInterrupt), loops:
        processes = list(loops.processes)
        assert len(processes) == 2 and all(p.poll() is None for p in processes)
        if pinned:
            assert all(os.sched_getaffinity(p.pid) == set(cores) for p in processes)
        raise KeyboardInterrupt
    assert all(p.poll() is not None for p in processes)  # gone, not left spinning


def test_busy_loops_refuse_an_empty_core_list() -> None:
    with pytest.raises(ValueError, match="no cores"):
        load_tool("busy_loops").Loops(1, [])

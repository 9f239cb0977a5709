"""tools/free_cores.py: the idle run a loaded run is judged against, on the cores its busy loops leave."""

from __future__ import annotations

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

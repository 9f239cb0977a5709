"""Profiles of the property-based suite, and the count of inputs each reader was tried with.

* ``ci`` (default, in ``make test``): a modest, derandomized number of examples per reader, so the suite
  is reproducible and takes about a minute on a loaded 2-core machine.
* ``long`` (``make fuzz``, ``SIMUL_FUZZ=long``): random seeds and 10,000 examples per reader
  (``SIMUL_FUZZ_EXAMPLES`` changes the number).

At the end, the inputs tried per reader are printed (and written as JSON to ``$SIMUL_FUZZ_REPORT`` when set);
each test's own counts are in its pytest report (what tools/fuzz.py reads).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.fuzz.budget import TRIED, long_run, write_report

_COMMON: dict[str, Any] = {
    "deadline": None,
    "database": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
}
settings.register_profile("ci", derandomize=True, **_COMMON)
settings.register_profile("long", derandomize=False, **_COMMON)
settings.load_profile("long" if long_run() else "ci")


@pytest.fixture(autouse=True)
def _report_inputs_tried(request: pytest.FixtureRequest) -> Iterator[None]:
    """The inputs each test tried per reader, in its pytest report (``user_properties``), which pytest-xdist
    brings back from its workers: tools/fuzz.py reads them there."""
    before = TRIED.copy()
    yield
    tried = dict(sorted((TRIED - before).items()))
    if tried:
        request.node.user_properties.append(("tried", tried))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not TRIED:
        return
    terminalreporter.section("inputs tried per reader (property-based suite)")
    for name, count in sorted(TRIED.items()):
        terminalreporter.write_line(f"{name:<28} {count:>7}")
    write_report()

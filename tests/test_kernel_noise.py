"""What the tables and `simul diff` say about kernel noise (simul.reports.engine_notes), and the exact-mode
patch's declared parts against simul's: no llama.cpp needed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from simul.decoding.backend import exactness


def test_the_patch_file_carries_the_version_simul_drives() -> None:
    patch = (Path(__file__).resolve().parent.parent / exactness.PATCH_FILE).read_text()
    assert f'return "{exactness.PATCH}";' in patch
    macros = {"tiled": "TILED", "flash-attn": "FA", "repack": "REPACK", "sgemm": "SGEMM", "kv-order": "KV"}
    for name, bit in exactness.PARTS.items():
        assert re.search(rf"#define GGML_CPU_EXACT_{macros[name]} +{bit}\n", patch), name
    assert re.search(rf"#define GGML_CPU_EXACT_ALL +{exactness.ALL_PARTS}\n", patch)


def method_row(name: str, key: str, chrf: float, beta: float | None = None) -> dict[str, Any]:
    return {"name": name, "key": key, "label": key, "beta": beta, "metrics": {"chrf": chrf, "bleu": 8.0}}


def test_a_control_marks_quality_differences_within_its_noise() -> None:
    from rich.console import Console

    from simul.reports.engine_notes import control_noise, noise_line, within_noise
    from simul.reports.tables import methods_table

    rows = [
        method_row("rt", "rt", 32.34),
        method_row("ssbd", "ssbd-b0", 32.04, beta=0.0),  # the control: 0.30 chrF of kernel noise
        method_row("ssbd", "ssbd-b0.2", 32.14, beta=0.2),  # -0.20: within it
        method_row("cd", "cd", 26.22),  # -6.12: a real difference
    ]
    assert control_noise(rows) == pytest.approx({"chrf": 0.30, "bleu": 0.0})
    assert within_noise(rows) == {"ssbd-b0.2": {"chrf"}}
    line = noise_line(rows)
    assert line is not None and "chrf 0.3" in line
    console = Console(width=200, record=True)
    console.print(methods_table(rows, columns=[("chrf", "chrF", ".2f")]))
    text = console.export_text()
    assert "32.14~" in text and "26.22~" not in text
    # without RT or without the control, nothing is marked
    assert within_noise(rows[1:]) == {} and within_noise([rows[0], rows[2]]) == {}


def test_diff_marks_changes_within_the_kernel_noise_of_fast_runs() -> None:
    from simul.reports.compare import MetricRow, kernel_noise_floors

    def run(exact: bool, control: float | None) -> dict[str, Any]:
        methods = [method_row("rt", "rt", 32.0)]
        if control is not None:
            methods.append(method_row("ssbd", "ssbd-b0", control, beta=0.0))
        return {"config": {"exact": exact}, "methods": methods}

    notes: list[str] = []
    assert kernel_noise_floors(run(False, 32.3), run(False, 31.9), notes) == pytest.approx(
        {"chrf": 0.3, "bleu": 0.0}
    )
    assert notes == []
    assert kernel_noise_floors(run(True, None), run(True, None), notes) == {}
    assert kernel_noise_floors(run(True, None), run(False, None), notes) == {}
    assert any("different engine modes" in n for n in notes) and any("no SSBD beta-0" in n for n in notes)
    row = MetricRow("chrf", 32.0, 31.8, higher_is_better=True, threshold=0.1, kernel_noise=0.3)
    assert row.within_kernel_noise and row.verdict == "within noise"
    assert MetricRow("chrf", 32.0, 31.5, True, threshold=0.1, kernel_noise=0.3).verdict == "REGRESSION"


def test_the_cost_tool_names_the_parts_of_the_patch() -> None:
    from tests.helpers import load_tool

    tool = load_tool("exact_costs")
    assert {f"only-{name}": bit for name, bit in exactness.PARTS.items()} == tool.PART_MODES
    assert sum(exactness.PARTS.values()) == exactness.ALL_PARTS


def test_the_cost_tool_reads_the_tile_width_of_a_mode() -> None:
    from tests.helpers import load_tool

    tool = load_tool("exact_costs")
    assert [tool._tile_cols(m) for m in ("exact", "exact-notiles", "fast-tiles64", "only-sgemm-tiles8")] == [
        None,  # the library's default width
        0,
        64,
        8,
    ]
    assert [tool._base(m) for m in ("exact-notiles", "fast-tiles64", "only-sgemm-tiles8", "exact")] == [
        "exact",
        "fast",
        "only-sgemm",
        "exact",
    ]


def test_threads_that_look_for_the_switch_at_once_all_find_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """simul bench loads its lanes in threads at once: a lane that asked while the first search ran saw no
    switch, and ran in fast mode beside an exact lane."""
    import threading
    import time

    switch = exactness._Switch()

    def slow_search(self: exactness._Switch, llama_cpp: object) -> None:
        time.sleep(0.2)
        self.setter, self.patch = print, exactness.PATCH

    monkeypatch.setattr(exactness._Switch, "_search", slow_search)
    monkeypatch.setattr(exactness, "_switch", switch)
    seen: list[bool] = []
    threads = [
        threading.Thread(target=lambda: seen.append(exactness.exact_support(object(), 0).available))
        for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [True, True]

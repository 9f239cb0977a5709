"""`simul show`: the per-step view for RT, SSBD and CD, on Latin and CJK text, in the terminal and as HTML."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.decoding.records import StepRecord
from simul.reports.show import output_spans, source_spans
from simul.streams.format import Step, Stream, write_streams
from tests.helpers import eval_args, make_streams

runner = CliRunner()


def record(output: str, accepted_chars: int = 0, display: str | None = None) -> StepRecord:
    return StepRecord(
        step=0,
        source="",
        final=False,
        time_ms=None,
        prompt_tokens=1,
        reused_tokens=0,
        processed_tokens=1,
        draft_tokens=0,
        accepted=0,
        output_ids=[],
        output=output,
        display=output if display is None else display,
        accepted_chars=accepted_chars,
        stop="eog",
        t_prompt=0.0,
        t_gen=0.0,
    )


def test_output_spans_mark_accepted_new_erased_and_masked() -> None:
    previous = record("Wir haben Mäuse")
    current = record("Wir haben jetzt Mäuse", accepted_chars=10, display="Wir haben jetzt")
    spans = output_spans(previous, current)
    assert "".join(s.text for s in spans if "erased" not in s.kinds) == "Wir haben jetzt Mäuse"
    assert [s.text for s in spans if "erased" in s.kinds] == ["Mäuse"]
    assert "".join(s.text for s in spans if "accepted" in s.kinds) == "Wir haben "
    assert "".join(s.text for s in spans if "masked" in s.kinds) == " Mäuse"


def test_cjk_spans_work_on_characters() -> None:
    spans = output_spans(record("研究中的差距"), record("研究中存在的差距", accepted_chars=3), unspaced=True)
    assert [s.text for s in spans if "erased" in s.kinds] == ["的差距"]
    assert "".join(s.text for s in spans if "accepted" in s.kinds) == "研究中"
    src = source_spans("研究中", "研究中存在", unspaced=True)
    assert [s.text for s in src if "arrived" in s.kinds] == ["存在"]
    latin = source_spans("gap in re", "gap in research is", unspaced=False)
    assert [s.text for s in latin if "arrived" in s.kinds] == ["research is"]


@pytest.fixture(scope="module")
def run_dir(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("show")
    streams = make_streams()
    ja = Stream(
        "ja",
        "en",
        "ja",
        (
            Step("The new", final=False),
            Step("The new bridge is", final=False),
            Step("The new bridge is open.", final=True),
        ),
        "新しい橋が開通した。",
    )
    path = root / "streams.jsonl"
    write_streams(path, [streams[0]])
    write_streams(root / "ja.jsonl", [ja])
    out = root / "run"
    result = runner.invoke(
        app,
        [
            "sweep",
            "--model",
            str(tiny_model),
            "--streams",
            str(path),
            "--beta",
            "0.2",
            "--mask-k",
            "3",
            "--mask",
            "display",
            "--comet-model",
            "none",
            "--out",
            str(out),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    out_ja = root / "run-ja"
    result = runner.invoke(
        app, eval_args(tiny_model, root / "ja.jsonl", "--out", str(out_ja), "--mask-k", "2")
    )
    assert result.exit_code == 0, result.output
    return root


def test_show_terminal_and_html_for_rt_ssbd_cd(run_dir: Path, tmp_path: Path) -> None:
    page = tmp_path / "s0.html"
    result = runner.invoke(app, ["show", str(run_dir / "run"), "--stream", "s0", "--html", str(page)])
    assert result.exit_code == 0, result.output
    for label in ("RT", "SSBD(b=0.2)", "CD", "SSBD(b=0.2)+display-mask3"):
        assert label in result.stderr
    html = page.read_text()
    n_steps = len(make_streams()[0].steps)
    assert len(re.findall(r'<td class="step">', html)) == n_steps
    for step in make_streams()[0].steps:
        assert step.source.split()[-1] in html
    assert html.count("<th>") == 2 + 4


def test_show_japanese(run_dir: Path, tmp_path: Path) -> None:
    page = tmp_path / "ja.html"
    result = runner.invoke(app, ["show", str(run_dir / "run-ja"), "--stream", "ja", "--html", str(page)])
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert "新しい橋が開通した。" in html and html.count('<td class="step">') == 3
    # every output cell is tagged so the browser renders Japanese glyphs, not Chinese ones
    assert html.count('<td lang="ja">') == 3 * html.count("<th>") - 3 * 2


def test_show_errors(run_dir: Path) -> None:
    missing = runner.invoke(app, ["show", str(run_dir / "run"), "--stream", "nope"])
    assert missing.exit_code == 1 and "no stream 'nope'" in missing.output
    method = runner.invoke(app, ["show", str(run_dir / "run"), "--stream", "s0", "--method", "zz"])
    assert method.exit_code == 1 and "no method 'zz'" in method.output

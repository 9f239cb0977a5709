"""Hostile input (issue 18): data text never acts as markup or drives the terminal, and readers refuse
pathological nesting, sizes and counts with a clear ``file:line`` error."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.text import Text
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import SimulError, UsageError
from simul.common.limits import LINE_BYTES, STEPS, loads
from simul.common.safe_text import excerpt, has_unsafe, markup, plain, visible
from simul.streams.format import Step, Stream, read_streams, write_streams
from simul.streams.segments import read_segment_yaml
from tests.helpers import eval_args, make_streams

runner = CliRunner(env={"COLUMNS": "200"})
REPO = Path(__file__).resolve().parent.parent

SOURCE = "So [laughter] we see results [1] and [bold]this[/bold] too [/] \x1b[31mred\x1b[0m \u202eevil"
REFERENCE = "Also [applause] [/] \x1b]0;pwned\x07 :smile:"
EVIL_ID = "talk[/]\x1b]8;;http://x\x1b\\1"


def evil_stream(stream_id: str = EVIL_ID) -> Stream:
    return Stream(
        id=stream_id,
        src="en",
        tgt="de",
        steps=(Step("So [laughter] we", final=False), Step(SOURCE, final=True)),
        reference=REFERENCE,
    )


# --- the helper ----------------------------------------------------------------------------------------


def test_visible_escapes_what_drives_a_terminal_and_keeps_text() -> None:
    assert visible("a\x1b[31mb\x07c\x9bd\x7fe\rf") == "a\\x1b[31mb\\x07c\\x9bd\\x7fe\\rf"
    assert visible("\u202eabc\u2066\u2028") == "\\u202eabc\\u2066\\u2028"
    assert visible("\ud800") == "\\ud800"
    assert visible("line 1\n\tline 2") == "line 1\n\tline 2"
    assert visible("line 1\nline 2", newlines=False) == "line 1\\nline 2"
    # ordinary text of every script is left alone, right-to-left marks included
    plain_text = "Grüße, 你好, こんにちは, שלום\u200f, مرحبا, emoji 🙂, [1]"
    assert visible(plain_text) == plain_text and not has_unsafe(plain_text)


def test_markup_and_plain_never_let_data_act_as_rich_markup() -> None:
    from rich.console import Console

    console = Console(record=True, width=200, emoji=False, highlight=False)
    console.print(f"[bold]label:[/] {markup(SOURCE)}")
    console.print(plain(REFERENCE))
    shown = console.export_text()
    assert "[laughter]" in shown and "[bold]this[/bold]" in shown and "[/]" in shown
    assert "\\x1b[31mred" in shown and "\\u202eevil" in shown and ":smile:" in shown
    assert not has_unsafe(shown)
    assert isinstance(plain("x"), Text)


def test_excerpt_shortens_a_quoted_line() -> None:
    assert excerpt("abc") == "'abc'"
    long = excerpt("x" * 10_000)
    assert len(long) < 120 and "10000 characters" in long


# --- finding 1: `simul streams show` read data as markup and crashed on [/] --------------------------------


def test_streams_show_prints_brackets_as_data_and_escapes_controls(tmp_path: Path) -> None:
    path = tmp_path / "evil.jsonl"
    write_streams(path, [evil_stream()])
    result = runner.invoke(app, ["streams", "show", str(path), "--id", EVIL_ID, "--json"])
    assert result.exit_code == 0, result.output
    err = result.stderr
    assert "So [laughter] we see results [1] and [bold]this[/bold] too [/]" in err
    assert "\\x1b[31mred\\x1b[0m \\u202eevil" in err
    assert "reference: Also [applause] [/] \\x1b]0;pwned\\x07 :smile:" in err
    assert "talk[/]\\x1b]8;;http://x\\x1b\\1" in err  # the id in the title
    assert not has_unsafe(err)
    # machines read the JSON, byte-exact
    assert json.loads(result.stdout)["steps"][1]["source"] == SOURCE
    stats = runner.invoke(app, ["streams", "stats", str(path)])
    assert stats.exit_code == 0 and not has_unsafe(stats.stderr)


def test_streams_show_error_quotes_ids_safely(tmp_path: Path) -> None:
    path = tmp_path / "evil.jsonl"
    write_streams(path, [evil_stream()])
    result = runner.invoke(app, ["streams", "show", str(path), "--id", "talk[/]\x1b]8;;http://x\x1b\\2"])
    assert result.exit_code == 1
    assert "did you mean talk[/]\\x1b]8;;http://x\\x1b\\1?" in result.stderr
    assert not has_unsafe(result.stderr)


# --- findings 2 and 3: `simul show` crashed on an id with [/]; escapes reached the terminal --------------


@pytest.fixture(scope="module")
def evil_run(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("evil")
    streams = root / "streams.jsonl"
    write_streams(streams, [evil_stream(), make_streams()[0]])
    out = root / "run"
    result = runner.invoke(app, eval_args(tiny_model, streams, "--beta", "0.2", "--out", str(out)))
    assert result.exit_code == 0, result.output
    return out


def test_show_takes_an_id_with_markup_and_escapes_the_steps(evil_run: Path, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    result = runner.invoke(app, ["show", str(evil_run), "--stream", EVIL_ID, "--html", str(page)])
    assert result.exit_code == 0, result.output
    err = " ".join(result.stderr.split())
    assert "talk[/]\\x1b]8;;http://x\\x1b\\1 (en->de)" in err
    assert "[bold]this[/bold]" in err and "\\x1b[31mred" in err
    assert "reference: Also [applause] [/] \\x1b]0;pwned\\x07 :smile:" in err
    assert not has_unsafe(result.stderr)
    html = page.read_text(encoding="utf-8")
    assert "[bold]this[/bold]" in html and "\x1b" in html  # the page keeps the text; browsers show no escapes


def test_tables_of_a_run_never_print_raw_controls(evil_run: Path) -> None:
    for args in (["score", str(evil_run)], ["diff", str(evil_run), str(evil_run), "--bootstrap", "5"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert not has_unsafe(result.stderr)
    markdown = runner.invoke(app, ["diff", str(evil_run), str(evil_run), "--markdown"])
    assert markdown.exit_code == 0 and not has_unsafe(markdown.stdout)


# --- limits -------------------------------------------------------------------------------------------


def test_a_line_nested_100000_deep_is_a_clear_error_in_a_real_process(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "simul", "streams", "stats", str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 1
    assert f"error: {path}:1: JSON nested more than 64 levels deep" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": NaN}', "NaN is not a JSON number"),
        ('{"a": -Infinity}', "-Infinity is not a JSON number"),
        ('{"a": ' + "9" * 5000 + "}", "more than 4300 digits"),
        ('{"a": "\\ud800"}', "lone surrogate \\ud800"),
        ("[" * 65 + "]" * 65, "nested more than 64 levels"),
        ('{"a": ', "malformed JSON"),
    ],
)
def test_json_reading_is_strict(text: str, message: str) -> None:
    with pytest.raises(SimulError, match=rf"^f\.jsonl:3: .*{message}".replace("\\u", "\\\\u")):
        loads(text, "f.jsonl:3")
    assert loads("[" * 64 + "]" * 64, "x") is not None


def _stream_line(**step: object) -> str:
    record = {
        "format": "simul-stream",
        "version": 1,
        "id": "a",
        "src": "en",
        "tgt": "de",
        "steps": [{"source": "Hello", "final": True, **step}],
        "reference": None,
    }
    return json.dumps(record) + "\n"


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"time_ms": -5}, r":1, step 0: step 'time_ms' must be a finite number of milliseconds, 0 or more"),
        ({"time_ms": 10**400}, r":1, step 0: step 'time_ms' must be a finite number of milliseconds"),
        ({"time_ms": 1e400}, r":1: unreadable JSON \(Infinity is not a JSON number"),
        ({"time_ms": float("nan")}, r":1: unreadable JSON \(NaN is not a JSON number"),
    ],
)
def test_stream_times_must_be_finite_and_not_negative(
    tmp_path: Path, step: dict[str, object], message: str
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(_stream_line(**step), encoding="utf-8")
    with pytest.raises(SimulError, match=r"s\.jsonl" + message):
        read_streams(path)


def test_limits_on_steps_sources_and_lines_can_be_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = make_streams(lag=1)[0]  # 12 steps
    path = tmp_path / "s.jsonl"
    write_streams(path, [stream])
    monkeypatch.setenv(STEPS.env, "5")
    with pytest.raises(
        SimulError, match=r"s\.jsonl:1: 12 steps, over the limit of 5 per stream; set SIMUL_MAX_STEPS"
    ):
        read_streams(path)
    with pytest.raises(SimulError, match="refusing to write stream 's0'"):
        write_streams(tmp_path / "t.jsonl", [stream])
    assert not (tmp_path / "t.jsonl").exists() and not (tmp_path / "t.jsonl.tmp").exists()
    monkeypatch.setenv(STEPS.env, "12")
    assert read_streams(path) == [stream]

    monkeypatch.setenv("SIMUL_MAX_SOURCE_CHARS", "20")
    with pytest.raises(
        SimulError, match=r"s\.jsonl:1, step 5: the source is 22 characters long, over the limit of 20"
    ):
        read_streams(path)
    monkeypatch.delenv("SIMUL_MAX_SOURCE_CHARS")

    monkeypatch.setenv(LINE_BYTES.env, "100")
    with pytest.raises(
        SimulError, match=r"s\.jsonl:1: the line is longer than 100 bytes; set SIMUL_MAX_LINE_BYTES"
    ):
        read_streams(path)
    monkeypatch.setenv(LINE_BYTES.env, "lots")
    with pytest.raises(UsageError, match="SIMUL_MAX_LINE_BYTES='lots' is not a whole number of bytes"):
        read_streams(path)


def test_a_bad_limit_setting_is_a_usage_error_on_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_streams(path, make_streams())
    result = runner.invoke(app, ["streams", "stats", str(path)], env={"SIMUL_MAX_STEPS": "0"})
    assert result.exit_code == 2
    assert "SIMUL_MAX_STEPS must be at least 1, got 0" in result.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "- {offset: 1, duration: 2, wav: a.wav}\n- {offset: \x07, duration: 1, wav: a.wav}\n",
            r":2: malformed YAML",
        ),
        (
            "- {offset: 1" + "0" * 400 + ", duration: 2, wav: a.wav}\n",
            r":1: offset must be a non-negative number",
        ),
        ("- {offset: .nan, duration: 2, wav: a.wav}\n", r":1: offset must be a non-negative number"),
        ("- {offset: -1, duration: 2, wav: a.wav}\n", r":1: offset must be a non-negative number"),
        ("- " + "[" * 5000 + "]" * 5000 + "\n", r"nested too deeply"),
        ("- !!python/object:os.system {offset: 1}\n", r":1: malformed YAML"),
        ("- {? [a, b] : 1}\n", r":1: malformed YAML"),
    ],
)
def test_segment_yaml_errors_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "seg.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SimulError, match=rf"seg\.yaml.*{message}"):
        read_segment_yaml(path)


def test_stats_skip_provenance_counts_that_are_not_counts(tmp_path: Path) -> None:
    """Found by `make fuzz`: a partials count in a stream's provenance that is text made stats crash."""
    stream = make_streams()[0]
    partials = {"file": "talk.OStt", "partials": 3, "unaligned_partials": " ", "unaligned_words": -1}
    provenance = {"talk": "t", "partials": partials}
    damaged = Stream(stream.id, "en", "de", stream.steps, stream.reference, provenance)
    path = tmp_path / "s.jsonl"
    write_streams(path, [damaged])
    result = runner.invoke(app, ["streams", "stats", str(path), "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert (figures["partials"], figures["unaligned_partials"], figures["unaligned_words"]) == (3, 0, 0)


def test_a_metric_no_float_can_hold_is_refused(evil_run: Path, tmp_path: Path) -> None:
    """Found by `make fuzz`: a metric of 10**400 in run.json made `simul diff` overflow (a traceback)."""
    copy = tmp_path / "run"
    shutil.copytree(evil_run, copy)
    run = json.loads((copy / "run.json").read_text(encoding="utf-8"))
    run["methods"][0]["metrics"]["chrf"] = 10**400
    (copy / "run.json").write_text(json.dumps(run), encoding="utf-8")
    result = runner.invoke(app, ["diff", str(evil_run), str(copy)])
    assert result.exit_code == 1
    assert f"{copy / 'run.json'}: methods[0]: metric 'chrf' must be a number or null" in result.stderr


def test_a_segment_longer_than_a_day_is_refused(tmp_path: Path) -> None:
    """Found by `make fuzz`: a duration of 1e300 s made `--simulate` tick (almost) forever."""
    path = tmp_path / "seg.yaml"
    path.write_text("- {offset: 1, duration: 1.0e+300, wav: a.wav}\n", encoding="utf-8")
    with pytest.raises(SimulError, match=r"seg\.yaml:1: duration of 1e\+300 s is more than a day"):
        read_segment_yaml(path)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("step", float("inf"), "field 'step' must be a whole number"),
        ("step", True, "field 'step' must be a whole number"),
        ("method", None, "fields 'method' and 'stream' must be text"),
        ("t_decode", -1.0, "a timing (t_*) must be a finite number of seconds"),
        ("t_decode", "1", "a timing (t_*) must be a finite number of seconds"),
    ],
)
def test_a_timing_record_with_a_field_of_the_wrong_kind_is_refused(
    evil_run: Path, tmp_path: Path, field: str, value: object, message: str
) -> None:
    """Found by `make fuzz`: `"step": Infinity` in timings.jsonl made `simul score` overflow (a traceback)."""
    copy = tmp_path / "run"
    shutil.copytree(evil_run, copy)
    timings = copy / "timings.jsonl"
    lines = timings.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first[field] = value
    timings.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["score", str(copy)])
    assert result.exit_code == 1
    text = " ".join(result.stderr.split())
    assert f"{timings}:1: unreadable timing record" in text
    assert message in text


def test_a_method_row_whose_counts_are_not_an_object_is_refused(evil_run: Path, tmp_path: Path) -> None:
    """Found by `make fuzz`: `"counts": null` in a method row of run.json made `simul diff` fail with an
    AttributeError."""
    copy = tmp_path / "run"
    shutil.copytree(evil_run, copy)
    run = json.loads((copy / "run.json").read_text(encoding="utf-8"))
    run["methods"][1]["counts"] = None
    (copy / "run.json").write_text(json.dumps(run), encoding="utf-8")
    result = runner.invoke(app, ["diff", str(evil_run), str(copy)])
    assert result.exit_code == 1
    assert "methods[1]: field 'counts' must be an object" in " ".join(result.stderr.split())


@pytest.mark.parametrize(
    ("part", "value", "message"),
    [
        ("references", [1], "config.streams: field 'references' must be an object"),
        ("ingest", 3, "config: field 'ingest' must be an object"),
        ("ingest", {"not_available": 3}, "field 'config.ingest.not_available' must be a list of names"),
    ],
)
def test_config_parts_that_readers_look_into_are_checked(
    evil_run: Path, tmp_path: Path, part: str, value: object, message: str
) -> None:
    copy = tmp_path / "run"
    shutil.copytree(evil_run, copy)
    run = json.loads((copy / "run.json").read_text(encoding="utf-8"))
    (run["config"]["streams"] if part == "references" else run["config"])[part] = value
    (copy / "run.json").write_text(json.dumps(run), encoding="utf-8")
    for command in (["diff", str(evil_run), str(copy)], ["score", str(copy)]):
        result = runner.invoke(app, command)
        assert result.exit_code == 1
        assert message in " ".join(result.stderr.split())


@pytest.mark.parametrize("key", ["environment", "tool", "throughput"])
def test_run_json_parts_that_must_be_objects_are_checked(evil_run: Path, tmp_path: Path, key: str) -> None:
    """Found by `make fuzz`: `"hardware": true` in run.json's environment made `simul diff` fail with an
    AttributeError; the parts a reader looks into must be objects, and the hardware note tolerates any
    shape inside the environment."""
    copy = tmp_path / "run"
    shutil.copytree(evil_run, copy)
    run = json.loads((copy / "run.json").read_text(encoding="utf-8"))
    run[key] = [1, 2]
    (copy / "run.json").write_text(json.dumps(run), encoding="utf-8")
    result = runner.invoke(app, ["diff", str(evil_run), str(copy)])
    assert result.exit_code == 1
    assert f"field {key!r} must be an object" in " ".join(result.stderr.split())
    run[key] = json.loads((evil_run / "run.json").read_text(encoding="utf-8"))[key]
    run["environment"]["hardware"] = True
    (copy / "run.json").write_text(json.dumps(run), encoding="utf-8")
    result = runner.invoke(app, ["diff", str(evil_run), str(copy)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("hardware", [True, {"devices": 5}, {"devices": "CUDA0"}, {"devices": [1, None]}])
def test_the_hardware_note_ignores_a_hardware_record_of_the_wrong_shape(hardware: object) -> None:
    from simul.reports.run_conditions import hardware_summary

    run = {"environment": {"cpu": "AMD EPYC", "threads": 2, "hardware": hardware}, "config": {"parallel": 1}}
    assert hardware_summary(run) == "CPU AMD EPYC, 0 layers offloaded, 2 threads, parallel 1"

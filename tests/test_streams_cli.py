"""`simul streams flores|acl6060|asr|stats|show` end to end through the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.paths import fixtures_dir
from simul.streams.format import read_streams

runner = CliRunner(env={"COLUMNS": "200"})
ASR = fixtures_dir() / "asr"
CANDIDATE = ASR / "simulstreaming" / "candidate.2022.acl-long.110.txt"
GOLD = ASR / "simulstreaming" / "gold.2022.acl-long.110.wav.ts.txt"


def test_flores_default_sample(tmp_path: Path) -> None:
    out = tmp_path / "f.jsonl"
    result = runner.invoke(
        app,
        [
            "streams",
            "flores",
            "--tgt-lang",
            "jpn_Jpan",
            "--lag",
            "2",
            "--limit",
            "5",
            "-o",
            str(out),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (
        f"wrote 5 streams to {out}; 0 partials unaligned (flores200 devtest en->ja, lag 2)" in result.stderr
    )
    assert json.loads(result.stdout) == {"output": str(out), "streams": 5, "unaligned_partials": 0, "lag": 2}
    streams = read_streams(out)
    assert [s.id for s in streams] == [f"flores200-devtest-{n}" for n in range(1, 6)]
    assert streams[0].steps[0].source == '"We now' and streams[0].tgt == "ja"


@pytest.mark.data
def test_flores_real_devtest(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "f.jsonl"
    data = str(shared_data / "flores200")
    result = runner.invoke(
        app, ["streams", "flores", "--data-dir", data, "--tgt-lang", "zho_Hans", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "wrote 1012 streams" in result.stderr
    assert len(read_streams(out)) == 1012


def test_acl6060_simulated_on_the_shipped_sample(tmp_path: Path) -> None:
    out = tmp_path / "a.jsonl"
    args = [
        "streams",
        "acl6060",
        "--tgt-lang",
        "zh",
        "--simulate",
        "--word-times",
        str(GOLD),
        "--revise-rate",
        "0.2",
    ]
    result = runner.invoke(app, [*args, "--start", "2", "--limit", "3", "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert (
        f"wrote 3 streams to {out}; 0 partials unaligned (acl6060 dev en->zh, simulated partials)"
        in result.stderr
    )
    summary = json.loads(result.stdout)
    assert (summary["streams"], summary["simulated"], summary["word_times"][0]["matched"]) == (3, True, 98)
    streams = read_streams(out)
    assert [s.id for s in streams] == ["acl6060-dev-2", "acl6060-dev-3", "acl6060-dev-4"]
    assert all(s.timed and s.provenance["partials"]["revise_rate"] == 0.2 for s in streams)
    assert streams[0].reference is not None and streams[0].reference.startswith("我很高兴")


def test_acl6060_with_recognizer_partials(tmp_path: Path) -> None:
    out = tmp_path / "a.jsonl"
    args = ["streams", "acl6060", "--partials", str(CANDIDATE), "--partials-format", "whisper-streaming"]
    result = runner.invoke(app, [*args, "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert "wrote 7 streams" in result.stderr and "0 partials unaligned" in result.stderr
    summary = json.loads(result.stdout)
    assert summary["files"][0]["partials"] == 22 and summary["segments_without_partials"] == []
    assert read_streams(out)[0].provenance["partials"]["format"] == "whisper-streaming"


def test_acl6060_release_xml(tmp_path: Path) -> None:
    out = tmp_path / "a.jsonl"
    data = fixtures_dir() / "acl6060" / "release"
    result = runner.invoke(
        app, ["streams", "acl6060", "--data-dir", str(data), "--tgt-lang", "ja", "--simulate", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert [s.provenance["talk"] for s in read_streams(out)][3:5] == [
        "2022.acl-long.110",
        "2022.acl-long.117",
    ]


@pytest.mark.parametrize(
    ("extra", "code", "message"),
    [
        ([], 2, "choose the partials: --partials FILE (recognizer output) or --simulate"),
        (["--simulate", "--partials", str(CANDIDATE)], 2, "choose the partials"),
        (
            ["--partials", str(CANDIDATE), "--partials-format", "kaldi"],
            2,
            "Invalid value for '--partials-format'",
        ),
        (["--partials", str(CANDIDATE)], 2, "cannot tell the format of candidate.2022.acl-long.110.txt"),
        (["--simulate", "--time-unit", "s"], 2, "only apply with --partials"),
        (["--partials", str(CANDIDATE), "--partials-format", "jsonl"], 1, "malformed JSON"),
        (["--simulate", "--tgt-lang", "tlh"], 1, "unknown language code 'tlh'"),
        (
            ["--simulate", "--data-dir", "/nonexistent/acl"],
            1,
            "ACL 60/60 data directory /nonexistent/acl does not exist",
        ),
    ],
)
def test_acl6060_errors(tmp_path: Path, extra: list[str], code: int, message: str) -> None:
    out = tmp_path / "a.jsonl"
    result = runner.invoke(app, ["streams", "acl6060", *extra, "-o", str(out)])
    assert result.exit_code == code, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output and not out.exists()


def test_asr_command_on_the_sltev_sample(tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    args = ["streams", "asr", "--partials", str(ASR / "sltev" / "kaccNlwi6lUCEM.en.OStt")]
    result = runner.invoke(
        app,
        [*args, "--source", str(ASR / "sltev" / "kaccNlwi6lUCEM.en.OSt"), "--tgt-lang", "de", "-o", str(out)],
    )
    assert result.exit_code == 0, result.output
    assert "wrote 10 streams" in result.stderr and "(kaccNlwi6lUCEM en->de, sltev partials)" in result.stderr
    streams = read_streams(out)
    assert streams[1].id == "kaccNlwi6lUCEM-2" and streams[1].final_source == "her father"
    assert streams[1].reference is None


@pytest.mark.data
def test_acl6060_real_dev_simulated(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "a.jsonl"
    data = str(shared_data / "acl6060")
    result = runner.invoke(
        app, ["streams", "acl6060", "--data-dir", data, "--tgt-lang", "ja", "--simulate", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "wrote 468 streams" in result.stderr
    stats = runner.invoke(app, ["streams", "stats", str(out), "--json"])
    figures = json.loads(stats.stdout)
    assert (figures["streams"], figures["timed_streams"], figures["simulated_streams"]) == (468, 468, 468)


def test_stats_and_show(tmp_path: Path) -> None:
    out = tmp_path / "a.jsonl"
    build = ["streams", "acl6060", "--partials", str(CANDIDATE), "--partials-format", "whisper-streaming"]
    assert runner.invoke(app, [*build, "-o", str(out)]).exit_code == 0

    stats = runner.invoke(app, ["streams", "stats", str(out), "--json"])
    assert stats.exit_code == 0, stats.output
    figures = json.loads(stats.stdout)
    assert figures["file"] == str(out)
    assert (figures["streams"], figures["steps"], figures["timed_streams"]) == (7, 25, 7)
    assert (figures["partials"], figures["unaligned_partials"], figures["revising_steps"]) == (22, 0, 0)
    assert "steps per stream" in stats.stderr and "words added per step" in stats.stderr

    show = runner.invoke(app, ["streams", "show", str(out), "--id", "acl6060-dev-1", "--json"])
    assert show.exit_code == 0, show.output
    record = json.loads(show.stdout)
    assert [s["time_ms"] for s in record["steps"]] == [2010.0, 3850.0, 5690.0]
    assert "Hello, this is Jiawei Zhou from Harvard University." in show.stderr
    assert "extend (final)" in show.stderr and "reference: Hallo, ich bin" in show.stderr

    missing = runner.invoke(app, ["streams", "show", str(out), "--id", "acl6060-dev-70"])
    assert missing.exit_code == 1
    assert "no stream 'acl6060-dev-70'" in missing.stderr and "did you mean acl6060-dev-7" in missing.stderr

    broken = tmp_path / "broken.jsonl"
    broken.write_text(out.read_text().splitlines()[0] + "\n{not json\n", encoding="utf-8")
    bad = runner.invoke(app, ["streams", "stats", str(broken)])
    assert bad.exit_code == 1 and "broken.jsonl:2: malformed JSON" in bad.stderr

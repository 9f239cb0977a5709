"""Long-form stream builders (`acl6060|asr|text --longform`), and `streams stats|show` on whole talks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.paths import fixtures_dir
from simul.streams.format import Stream, read_streams
from simul.streams.longform import timed_prefix_steps, transcript_steps
from simul.streams.partials.formats import PartialLine

runner = CliRunner(env={"COLUMNS": "200"})
ACL = fixtures_dir() / "acl6060" / "dev"
CANDIDATE = fixtures_dir() / "asr" / "simulstreaming" / "candidate.2022.acl-long.110.txt"
SLTEV = fixtures_dir() / "asr" / "sltev"
STREAMS = fixtures_dir() / "streams"
SIMULATED_FIXTURE = STREAMS / "acl6060-dev-110-first12-en-de-longform.jsonl"
PARTIALS_FIXTURE = STREAMS / "acl6060-dev-110-first7-simulstreaming-en-de-longform.jsonl"
TALK = "2022.acl-long.110"


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["streams", *args])
    return result.exit_code, result.stdout, result.stderr


def one_talk(path: Path) -> Stream:
    streams = read_streams(path)
    assert len(streams) == 1
    return streams[0]


def check_growing(talk: Stream) -> None:
    """Every step extends the previous one and the last step is the whole transcript."""
    for before, after in zip(talk.steps, talk.steps[1:], strict=False):
        assert after.source.startswith(before.source) and after.source != before.source
    times = [s.time_ms for s in talk.steps]
    assert all(t is not None for t in times)
    assert times == sorted(times)  # type: ignore[type-var]


# --- simulated timing ---------------------------------------------------------------------------------


def test_acl6060_longform_simulated_on_the_shipped_sample(tmp_path: Path) -> None:
    out = tmp_path / "talk.jsonl"
    code, stdout, stderr = run("acl6060", "--longform", "--tgt-lang", "de", "-o", str(out), "--json")
    assert code == 0, stderr
    assert "wrote 1 long-form talk" in stderr and "simulated timing" in stderr
    talk = one_talk(out)
    assert talk.longform and talk.id == f"acl6060-dev-{TALK}" and talk.tgt == "de"
    sources = (ACL / "ACL.6060.dev.en-xx.en.segments.txt").read_text(encoding="utf-8").splitlines()
    refs = (ACL / "ACL.6060.dev.en-xx.de.segments.txt").read_text(encoding="utf-8").splitlines()
    assert talk.final_source == " ".join(" ".join(s.split()) for s in sources)  # gold, cased and punctuated
    assert [s.source for s in talk.segments] == sources
    assert [s.references for s in talk.segments] == [(r,) for r in refs]
    assert talk.segments[0].offset_ms == pytest.approx(590.0)
    assert talk.segments[-1].end_ms == pytest.approx(38145.0 + 3501.0)
    assert talk.duration_ms == pytest.approx(41646.0)
    check_growing(talk)
    # a step per second of audio at most; every step but the last on a whole second
    assert all(s.time_ms is not None and s.time_ms % 1000 == 0 for s in talk.steps[:-1])
    assert 30 <= len(talk.steps) <= 42
    # the first word ("Hello,") ends at 590 + 2818/8 ms, known at the first tick after it
    assert talk.steps[0].source == "Hello," and talk.steps[0].time_ms == 1000.0
    assert talk.provenance["simulated"] is True and talk.provenance["time_origin"] == "talk_start"
    summary = json.loads(stdout)
    assert summary["talks"] == [
        {"talk": TALK, "segments": 7, "steps": len(talk.steps), "overlaps_trimmed": 0}
    ]


def test_interval_and_limit_change_the_talk(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    code, _, stderr = run("acl6060", "--longform", "--interval-ms", "250", "--limit", "3", "-o", str(out))
    assert code == 0, stderr
    talk = one_talk(out)
    assert len(talk.segments) == 3
    assert talk.duration_ms == pytest.approx(10549.0 + 4958.0)
    assert talk.final_source.endswith("Microsoft Semantic Machines.")
    assert all(s.time_ms is not None and s.time_ms % 250 == 0 for s in talk.steps[:-1])


def test_word_times_time_the_talk_words(tmp_path: Path) -> None:
    gold = fixtures_dir() / "asr" / "simulstreaming" / "gold.2022.acl-long.110.wav.ts.txt"
    out = tmp_path / "t.jsonl"
    code, _, stderr = run("acl6060", "--longform", "--word-times", str(gold), "-o", str(out))
    assert code == 0, stderr
    talk = one_talk(out)
    assert talk.provenance["partials"]["timing"] == "word_times"
    check_growing(talk)
    first_word_end = float(gold.read_text(encoding="utf-8").splitlines()[0].split()[1]) * 1000
    assert talk.steps[0].time_ms == pytest.approx(1000.0 * (first_word_end // 1000 + 1))


def test_timed_prefix_steps_rule() -> None:
    steps = timed_prefix_steps(["a", "b", "c"], [100.0, 150.0, 2500.0], 2600.0, 1000.0)
    assert [(s.source, s.time_ms, s.final) for s in steps] == [
        ("a b", 1000.0, False),
        ("a b c", 2600.0, True),
    ]
    # the last word known at a tick before the end: that step is final
    steps = timed_prefix_steps(["a"], [100.0], 1000.5, 1000.0)
    assert [(s.source, s.time_ms, s.final) for s in steps] == [("a", 1000.0, True)]


# --- recognizer output --------------------------------------------------------------------------------


def test_acl6060_longform_from_simulstreaming_chunks(tmp_path: Path) -> None:
    out = tmp_path / "p.jsonl"
    code, _, stderr = run(
        "acl6060",
        "--longform",
        "--partials",
        str(CANDIDATE),
        "--partials-format",
        "whisper-streaming",
        "-o",
        str(out),
    )
    assert code == 0, stderr
    talk = one_talk(out)
    lines = CANDIDATE.read_text(encoding="utf-8").splitlines()
    assert len(talk.steps) == len(lines) == 22
    assert [s.time_ms for s in talk.steps] == [float(line.split()[0]) for line in lines]
    assert talk.steps[0].source == "Hello, this is"
    assert talk.steps[1].source == "Hello, this is Jiawei Zhou from Harvard"
    assert talk.final_source == " ".join(" ".join(line.split()[3:]) for line in lines)
    check_growing(talk)
    assert talk.provenance["simulated"] is False and talk.provenance["partials"]["partials"] == 22
    assert len(talk.segments) == 7 and talk.reference is not None
    # the shipped fixture is exactly this build
    assert out.read_bytes() == PARTIALS_FIXTURE.read_bytes()


def test_transcript_steps_sltev_style_revisions_and_whisper_continuations() -> None:
    def line(n: int, t: float, text: str, final: bool = False, append: bool = False) -> PartialLine:
        return PartialLine(n, t, None, None, text, final, append)

    steps = transcript_steps(
        [
            line(1, 10, "hello"),
            line(2, 20, "hello word"),
            line(3, 30, "hello world", final=True),
            line(4, 40, "how"),
            line(5, 50, "how"),  # no change: no step
            line(6, 60, "how are you", final=True),
        ]
    )
    assert [(s.source, s.time_ms) for s in steps] == [
        ("hello", 10),
        ("hello word", 20),
        ("hello world", 30),
        ("hello world how", 40),
        ("hello world how are you", 60),
    ]
    assert [s.final for s in steps] == [False] * 4 + [True]
    chunks = transcript_steps([line(1, 5, " Hel", append=True), line(2, 9, "lo there", append=True)])
    assert [s.source for s in chunks] == ["Hel", "Hello there"]


def test_asr_longform_sltev_one_talk(tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    code, _, stderr = run(
        "asr",
        "--longform",
        "--partials",
        str(SLTEV / "kaccNlwi6lUCEM.en.OStt"),
        "--source",
        str(SLTEV / "kaccNlwi6lUCEM.en.OSt"),
        "--tgt-lang",
        "de",
        "-o",
        str(out),
    )
    assert code == 0, stderr
    talk = one_talk(out)
    assert talk.id == "kaccNlwi6lUCEM-kaccNlwi6lUCEM" and talk.longform
    assert len(talk.segments) == 10 and talk.reference is None
    assert all(seg.offset_ms is None and seg.references == () for seg in talk.segments)
    times = [s.time_ms for s in talk.steps]
    assert times == sorted(times)  # type: ignore[type-var]
    assert talk.duration_ms is not None and talk.duration_ms >= (talk.steps[-1].time_ms or 0) - 1


def test_asr_longform_with_reference_and_yaml(tmp_path: Path) -> None:
    out = tmp_path / "a.jsonl"
    code, _, stderr = run(
        "asr",
        "--longform",
        "--partials",
        str(CANDIDATE),
        "--partials-format",
        "whisper-streaming",
        "--source",
        str(ACL / "ACL.6060.dev.en-xx.en.segments.txt"),
        "--ref",
        str(ACL / "ACL.6060.dev.en-xx.de.segments.txt"),
        "--segments",
        str(ACL / "acl6060_dev_gold_segments.yaml"),
        "--tgt-lang",
        "de",
        "-o",
        str(out),
    )
    assert code == 0, stderr
    talk = one_talk(out)
    assert talk.id == f"ACL-{TALK}"
    assert talk.segments[0].offset_ms == pytest.approx(590.0) and len(talk.steps) == 22


def test_asr_longform_refuses_audio_with_partials_and_segment_selection(tmp_path: Path) -> None:
    out = tmp_path / "x.jsonl"
    both = ("--audio", str(CANDIDATE), "--partials", str(CANDIDATE))
    code, _, stderr = run("asr", "--longform", *both, "--tgt-lang", "de", "-o", str(out))
    assert code == 2 and "do not apply with --audio --longform" in stderr and "--partials" in stderr
    # --audio --longform recognizes the file (docs/asr.md): a text file is not audio
    code, _, stderr = run("asr", "--longform", "--audio", str(CANDIDATE), "--tgt-lang", "de", "-o", str(out))
    assert code == 1 and "cannot read audio file" in " ".join(stderr.split())
    base = ["asr", "--longform", "--partials", str(SLTEV / "kaccNlwi6lUCEM.en.OStt")]
    code, _, stderr = run(
        *base,
        "--source",
        str(SLTEV / "kaccNlwi6lUCEM.en.OSt"),
        "--tgt-lang",
        "de",
        "--limit",
        "2",
        "-o",
        str(out),
    )
    assert code == 2 and "do not apply with --longform" in stderr
    assert not out.exists()


# --- documents of parallel text -----------------------------------------------------------------------


def write_docs(folder: Path, ids: list[str]) -> tuple[Path, Path, Path]:
    src, ref, docs = folder / "t.en", folder / "t.de", folder / "t.docids"
    src.write_text("one two three\nfour five\nsix seven eight nine\nten\neleven twelve\n", encoding="utf-8")
    ref.write_text("eins zwei drei\nvier fünf\nsechs sieben acht neun\nzehn\nelf zwölf\n", encoding="utf-8")
    docs.write_text("".join(f"{d}\n" for d in ids), encoding="utf-8")
    return src, ref, docs


def text_args(src: Path, ref: Path, docs: Path, out: Path, *extra: str) -> list[str]:
    return [
        "text",
        "--longform",
        "--doc-ids",
        str(docs),
        "--source",
        str(src),
        "--ref",
        str(ref),
        "--src-lang",
        "en",
        "--tgt-lang",
        "de",
        "-o",
        str(out),
        *extra,
    ]


def test_text_longform_documents(tmp_path: Path) -> None:
    src, ref, docs = write_docs(tmp_path, ["d1", "d1", "d2", "d2", "d2"])
    out = tmp_path / "docs.jsonl"
    code, _, stderr = run(*text_args(src, ref, docs, out, "--lag", "2"))
    assert code == 0, stderr
    assert "wrote 2 documents" in stderr
    first, second = read_streams(out)
    assert (first.id, second.id) == ("t-d1", "t-d2")
    assert [s.source for s in first.steps] == ["one two", "one two three four", "one two three four five"]
    assert all(s.time_ms is None for s in second.steps)
    assert [seg.source for seg in second.segments] == ["six seven eight nine", "ten", "eleven twelve"]
    assert [seg.references for seg in second.segments] == [
        ("sechs sieben acht neun",),
        ("zehn",),
        ("elf zwölf",),
    ]
    assert second.reference == "sechs sieben acht neun zehn elf zwölf"
    assert second.steps[-1].source == "six seven eight nine ten eleven twelve"
    assert second.provenance["lines"] == [3, 5] and second.provenance["doc_ids_file"] == "t.docids"


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        (["d1", "d1", "d2", "d2"], "t.docids:5: the doc-ids file has 4 lines but"),
        (["d1", "d1", "d2", "d2", "d2", "d3"], "t.docids:6: the doc-ids file has 6 lines"),
        (["d1", "d2", "d1", "d3", "d3"], "t.docids:3: document 'd1' comes back after document 'd2'"),
        (["d1", " ", "d2", "d2", "d2"], "t.docids:2: empty document id"),
    ],
)
def test_text_longform_bad_doc_ids(tmp_path: Path, ids: list[str], message: str) -> None:
    src, ref, docs = write_docs(tmp_path, ids)
    out = tmp_path / "docs.jsonl"
    code, _, stderr = run(*text_args(src, ref, docs, out))
    assert code == 1 and message in " ".join(stderr.split()), stderr
    assert not out.exists()


def test_text_longform_option_pairs(tmp_path: Path) -> None:
    src, ref, docs = write_docs(tmp_path, ["a"] * 5)
    out = tmp_path / "o.jsonl"
    args = ["text", "--source", str(src), "--src-lang", "en", "--tgt-lang", "de", "-o", str(out)]
    code, _, stderr = run(*args, "--longform")
    assert code == 2 and "--longform needs --doc-ids" in stderr
    code, _, stderr = run(*args, "--doc-ids", str(docs))
    assert code == 2 and "--doc-ids only applies with --longform" in stderr
    code, _, stderr = run(*text_args(src, ref, docs, out, "--limit", "2"))
    assert code == 2 and "leave them out with --longform" in stderr
    assert not out.exists()


# --- bad input: one clear error, nothing written ------------------------------------------------------


def test_partials_going_backwards_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "candidate.2022.acl-long.110.txt"
    lines = CANDIDATE.read_text(encoding="utf-8").splitlines()
    lines[3], lines[4] = lines[4], lines[3]
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "p.jsonl"
    code, _, stderr = run(
        "acl6060",
        "--longform",
        "--partials",
        str(bad),
        "--partials-format",
        "whisper-streaming",
        "-o",
        str(out),
    )
    assert code == 1 and ":5: emission time goes backwards" in stderr
    assert not out.exists()


def copy_sample(tmp_path: Path, yaml_text: str) -> Path:
    folder = tmp_path / "acl"
    shutil.copytree(ACL, folder)
    (folder / "acl6060_dev_gold_segments.yaml").write_text(yaml_text, encoding="utf-8")
    return folder


def test_overlapping_segments(tmp_path: Path) -> None:
    rows = (ACL / "acl6060_dev_gold_segments.yaml").read_text(encoding="utf-8").splitlines()
    # segment 2 starts 20 ms before segment 1 ends: forced-alignment rounding, trimmed with a note
    small = copy_sample(tmp_path / "small", "\n".join([rows[0].replace("2.818", "3.389"), *rows[1:]]) + "\n")
    out = tmp_path / "ok.jsonl"
    code, _, stderr = run("acl6060", "--longform", "--data-dir", str(small), "-o", str(out))
    assert code == 0, stderr
    assert "1 segments overlapped" in " ".join(stderr.split())
    talk = one_talk(out)
    assert talk.segments[0].end_ms == pytest.approx(3959.0)
    assert talk.provenance["overlaps_trimmed"] == 1
    # a real overlap (2 s) is an error naming the lines
    big = copy_sample(tmp_path / "big", "\n".join([rows[0].replace("2.818", "5.5"), *rows[1:]]) + "\n")
    bad = tmp_path / "bad.jsonl"
    code, _, stderr = run("acl6060", "--longform", "--data-dir", str(big), "-o", str(bad))
    message = " ".join(stderr.split())
    assert (
        code == 1
        and "segment acl6060-dev-2 (line 2) starts at 3.959 s, before segment acl6060-dev-1" in message
    )
    assert "fix the offsets and durations in the segment YAML" in message
    assert not bad.exists()


def test_segment_outside_the_talk_is_refused() -> None:
    from simul.streams.format import Segment, Step

    talk = Stream.talk(
        "t",
        "en",
        "de",
        (Step("a b", final=True, time_ms=10.0),),
        (Segment(("x",), "a b", 0.0, 5000.0),),
        duration_ms=4000.0,
    )
    with pytest.raises(ValueError, match="after the end of the recording"):
        talk.validate()


@pytest.mark.parametrize(
    ("env", "value", "message"),
    [
        ("SIMUL_MAX_STEPS", "10", "talk acl6060-dev-2022.acl-long.110 (at --interval-ms 1000"),
        ("SIMUL_MAX_SOURCE_CHARS", "300", "talk acl6060-dev-2022.acl-long.110: the source is"),
        (
            "SIMUL_MAX_LINE_BYTES",
            "3000",
            "refusing to write talk 'acl6060-dev-2022.acl-long.110': its record is",
        ),
    ],
)
def test_talks_over_the_reader_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str, value: str, message: str
) -> None:
    monkeypatch.setenv(env, value)
    out = tmp_path / "t.jsonl"
    code, _, stderr = run("acl6060", "--longform", "-o", str(out))
    text = " ".join(stderr.split())
    assert code == 1 and message in text and env in text, stderr
    assert not out.exists()


def test_longform_option_conflicts(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    for extra, message in (
        (["--revise-rate", "0.1"], "do not apply with --longform"),
        (["--start", "2"], "--start does not apply with --longform"),
        (["--talk", "nope"], "--talk 'nope' is not a talk of the data"),
        (["--partials", str(CANDIDATE), "--limit", "3"], "--limit cuts simulated talks only"),
    ):
        code, _, stderr = run("acl6060", "--longform", *extra, "-o", str(out))
        assert code == 2 and message in " ".join(stderr.split()), (extra, stderr)
    code, _, stderr = run("acl6060", "--simulate", "--talk", TALK, "-o", str(out))
    assert code == 2 and "--talk only applies with --longform" in stderr
    assert not out.exists()


# --- stats and show -----------------------------------------------------------------------------------


def test_stats_lists_each_talk() -> None:
    code, stdout, stderr = run("stats", str(SIMULATED_FIXTURE), "--json")
    assert code == 0, stderr
    stats = json.loads(stdout)
    talk = one_talk(SIMULATED_FIXTURE)
    assert stats["longform_streams"] == 1
    assert stats["talks"] == [
        {
            "id": f"acl6060-dev-{TALK}",
            "words": len(talk.final_source.split()),
            "seconds": 81.4,
            "segments": 12,
            "steps": len(talk.steps),
            "references": 1,
        }
    ]
    assert "long-form streams (1)" in stderr


def test_show_scrolls_a_talk() -> None:
    talk = one_talk(SIMULATED_FIXTURE)
    code, _, stderr = run("show", str(SIMULATED_FIXTURE), "--from", "5", "--to", "7", "--words", "3")
    assert code == 0, stderr
    flat = " ".join(stderr.split())
    assert f"steps 5..7 of {len(talk.steps)}" in flat and "81.4 s, 12 segments" in flat
    for index in (5, 6, 7):
        tail = " ".join(talk.steps[index].source.split()[-3:])
        assert f"│ … {tail} │" in flat
    numbers = [line.split("│")[1].strip() for line in stderr.splitlines() if line.startswith("│")]
    assert [n for n in numbers if n] == ["5", "6", "7"]
    code, _, stderr = run("show", str(SIMULATED_FIXTURE), "--segments")
    assert code == 0 and "reference segments" in stderr and "Hallo, ich bin Jiawei Zhou" in stderr
    code, _, stderr = run("show", str(SIMULATED_FIXTURE), "--from", "9999")
    assert code == 2 and "--from/--to must pick steps within 0.." in stderr


def test_show_options_for_short_form_only_refused() -> None:
    flores = STREAMS / "flores200-devtest-en-de-lag3.jsonl"
    code, _, stderr = run("show", str(flores), "--id", "flores200-devtest-1", "--from", "1")
    assert code == 2 and "apply to long-form streams only" in stderr
    code, _, stderr = run("show", str(flores))
    assert code == 2 and "pick one with --id" in stderr


def test_fixtures_round_trip_byte_exact(tmp_path: Path) -> None:
    from simul.streams.format import write_streams

    for fixture in (SIMULATED_FIXTURE, PARTIALS_FIXTURE):
        again = tmp_path / fixture.name
        write_streams(again, read_streams(fixture))
        assert again.read_bytes() == fixture.read_bytes()


# --- the real ACL 60/60 dev data (skipped without ../shared/data) -------------------------------------


@pytest.mark.data
def test_real_dev_talks(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "dev.jsonl"
    code, _, stderr = run(
        "acl6060", "--longform", "--data-dir", str(shared_data / "acl6060" / "dev"), "-o", str(out)
    )
    assert code == 0, stderr
    talks = read_streams(out)
    assert len(talks) == 5 and sum(len(t.segments) for t in talks) == 468
    for talk in talks:
        check_growing(talk)
        assert talk.duration_ms is not None
        # about a step per second of speech
        assert 0.6 < len(talk.steps) / (talk.duration_ms / 1000) <= 1.0
    cut = tmp_path / "cut.jsonl"
    args = ["--talk", TALK, "--limit", "12", "-o", str(cut)]
    code, _, stderr = run("acl6060", "--longform", "--data-dir", str(shared_data / "acl6060" / "dev"), *args)
    assert code == 0, stderr
    assert cut.read_bytes() == SIMULATED_FIXTURE.read_bytes()


@pytest.mark.data
def test_real_simulstreaming_talk(shared_data: Path, tmp_path: Path) -> None:
    folder = shared_data / "asr" / "simulstreaming_acl6060_dev_110"
    out = tmp_path / "p.jsonl"
    code, _, stderr = run(
        "acl6060",
        "--longform",
        "--data-dir",
        str(shared_data / "acl6060" / "dev"),
        "--partials",
        str(folder / f"candidate.{TALK}.txt"),
        "--partials-format",
        "whisper-streaming",
        "-o",
        str(out),
    )
    assert code == 0, stderr
    talk = one_talk(out)
    assert len(talk.steps) == 378 and len(talk.segments) == 108
    assert talk.steps[-1].time_ms == pytest.approx(701160.0)
    assert talk.final_source.endswith("Thanks for your listening.")


def test_a_segment_without_references_is_an_error_not_a_crash(tmp_path: Path) -> None:
    """Found by the fuzzer: one segment without 'references' among segments with one crashed the reader."""
    from simul.common.errors import SimulError

    record = json.loads(PARTIALS_FIXTURE.read_text(encoding="utf-8"))
    del record["segments"][3]["references"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(
        SimulError, match=r"bad.jsonl:1: .*every segment must have the same number of references"
    ):
        read_streams(bad)


def test_two_talks_of_the_release_layout(tmp_path: Path) -> None:
    release = fixtures_dir() / "acl6060" / "release"
    out = tmp_path / "both.jsonl"
    code, _, stderr = run("acl6060", "--longform", "--data-dir", str(release), "-o", str(out))
    assert code == 0, stderr
    talks = read_streams(out)
    assert [(t.id, len(t.segments)) for t in talks] == [
        ("acl6060-dev-2022.acl-long.110", 4),
        ("acl6060-dev-2022.acl-long.117", 3),
    ]
    # partials for one talk: only that talk is written, the other is named in a note
    one = tmp_path / "one.jsonl"
    args = ["--partials", str(CANDIDATE), "--partials-format", "whisper-streaming", "-o", str(one)]
    code, _, stderr = run("acl6060", "--longform", "--data-dir", str(release), *args)
    assert code == 0, stderr
    assert "1 talks have no partials and were not written (2022.acl-long.117)" in " ".join(stderr.split())
    assert [t.id for t in read_streams(one)] == ["acl6060-dev-2022.acl-long.110"]
    # a talk picked with --talk that the partials do not cover: nothing to write
    none = tmp_path / "none.jsonl"
    code, _, stderr = run(
        "acl6060",
        "--longform",
        "--data-dir",
        str(release),
        "--talk",
        "2022.acl-long.117",
        *args[:-1],
        str(none),
    )
    assert code == 1 and "cover none of the selected talks" in " ".join(stderr.split())
    assert not none.exists()

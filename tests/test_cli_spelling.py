"""One spelling per concept across every command (issue 32, part 4), and one request shape for eval, sweep and
bench (part 3).

Every command's options are walked: a concept spelled another way anywhere fails, naming the command and the
option; every choice an option takes is listed in its command's --help. The old spellings still work, give the
same result as the new ones, and warn once each on stderr. A run made without -o/--out ends by saying how to
keep it.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
import typer
from typer.testing import CliRunner

from simul.cli import COMMANDS, app, load_command
from simul.cli.aliases import Alias, rewrite
from simul.cli.request_options import NOT_FOR_BENCH, RequestOptions
from simul.common.paths import fixtures_dir
from simul.request.method_settings import METHOD_NAMES
from simul.streams.format import read_streams, write_streams
from tests.helpers import eval_args, make_streams

REPO = Path(__file__).resolve().parent.parent
BASELINE = REPO / ".ci" / "baseline-tiny"  # a complete run directory kept in the repository
SLTEV = fixtures_dir() / "asr" / "sltev"

runner = CliRunner()

# concept: (its one spelling, the other spellings no command may use for it)
CONCEPTS: dict[str, tuple[set[str], set[str]]] = {
    "the path a command writes": ({"-o", "--out"}, {"--output", "--output-dir", "--out-dir", "--outdir"}),
    "machine-readable output": ({"--json"}, {"--as-json", "--output-format"}),
    "source language": ({"--src-lang"}, {"--src", "--source-lang", "--source-language", "--sl"}),
    "target language": ({"--tgt-lang"}, {"--tgt", "--target-lang", "--target-language", "--tl"}),
    "source file": ({"--source"}, {"--src", "--src-file", "--source-file"}),
    "reference file": ({"--ref"}, {"--reference", "--references", "--ref-file", "--refs"}),
    "LocalAgreement-n": ({"--local-agreement"}, {"--agreement", "--display", "--la"}),
}
# options whose values are a closed set: a choice wherever a command has them (--help then lists them)
CLOSED_SETS = {
    "--method",
    "--mask",
    "--ending",
    "--template",
    "--ne-tokenizer",
    "--resegment",
    "--format",
    "--unit",
    "--partials-format",
    "--time-unit",
    "--align",
    "--stable",
    "--asr-window",
    "--vad",
}
# sweep's value lists are comma-separated (--beta 0,0.2, --mask-k 0,3, --mask display,output): its --mask is
# a list, and its help names the modes
COMMA_LISTS = {("sweep", "--mask")}
# export and show pick methods of a run by key (ssbd-b0.2-display3): any key the run has
RUN_KEYS = {("export", "--method"), ("show", "--method")}
# eval's --method also takes a method from outside simul (docs/methods.md): its built-in names are listed
OPEN_METHODS = {("eval", "--method")}
# a method spec (simul.cli.method_specs): eval's --method and that method's own options, in one argument
METHOD_SPECS = {("bench", "--method"), ("sweep", "--method")}


def all_commands() -> list[tuple[str, Any]]:
    """Every command as (its name after `simul`, its click command), the streams subcommands included."""
    found = []
    for entry in COMMANDS:
        command = load_command(entry.name)
        subcommands = getattr(command, "commands", None)
        if subcommands:
            found += [(f"{entry.name} {name}", sub) for name, sub in subcommands.items()]
        else:
            found.append((entry.name, command))
    return found


COMMANDS_FOUND = all_commands()


def visible_options(command: Any) -> list[Any]:
    return [p for p in command.params if p.param_type_name == "option" and not p.hidden]


def names(option: Any) -> set[str]:
    return {*option.opts, *option.secondary_opts}


def annotation(option: Any) -> Any:
    """The option's Python type, Optional and list unwrapped."""
    kind = option.type_descriptor.annotation
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    while typing.get_origin(kind) in (typing.Union, list, type(int | None)) and len(args) == 1:
        kind = args[0]
        args = [a for a in typing.get_args(kind) if a is not type(None)]
    return kind


def choices(option: Any) -> tuple[str, ...]:
    kind = annotation(option)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):  # repeatable: typer takes no list[Literal]
        return tuple(str(member.value) for member in kind)
    return tuple(typing.get_args(kind)) if typing.get_origin(kind) is Literal else ()


def help_text(path: str) -> str:
    result = runner.invoke(app, [*path.split(), "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def spelling_problems(commands: list[tuple[str, Any]]) -> list[str]:
    """Each option that spells a concept another way, or spells it incompletely, as `command: what`."""
    problems = []
    for path, command in commands:
        for option in visible_options(command):
            spelled = names(option)
            for concept, (one, others) in CONCEPTS.items():
                for wrong in sorted(spelled & others):
                    problems.append(f"{path}: {wrong} is {concept}, spelled {'/'.join(sorted(one))}")
                if spelled & one and spelled != one:
                    problems.append(f"{path}: {'/'.join(sorted(spelled))} should be {'/'.join(sorted(one))}")
            if "--json" in spelled and not option.is_flag:
                problems.append(f"{path}: --json takes a value; it is a flag everywhere")
            if "--format" in spelled and {"json", "markdown", "table"} & set(choices(option)):
                problems.append(
                    f"{path}: --format chooses an output form; --format names a data file's format"
                )
            if spelled & {"--source", "--ref"} and annotation(option) is not Path:
                problems.append(f"{path}: {'/'.join(sorted(spelled))} is a file, not {annotation(option)}")
            if spelled & {"--src-lang", "--tgt-lang"} and annotation(option) is Path:
                problems.append(f"{path}: {'/'.join(sorted(spelled))} is a language, not a file")
            if "--ref" in spelled and not option.multiple:
                problems.append(f"{path}: --ref takes one file; references are repeatable everywhere")
    return problems


def test_every_command_spells_each_concept_one_way() -> None:
    assert len(COMMANDS_FOUND) >= 16  # every command and streams subcommand was walked
    assert spelling_problems(COMMANDS_FOUND) == []


OLD_WORDS = re.compile(r"(?<![\w-])(--output|--src|--tgt|--reference|--display|--agreement)(?![\w-])")


def test_no_help_text_names_an_old_spelling() -> None:
    """The prose of every --help (what an option needs, what it replaces) uses the new spellings too."""
    found = {path: OLD_WORDS.findall(help_text(path)) for path, _ in COMMANDS_FOUND}
    assert {path: words for path, words in found.items() if words} == {}


def test_the_walk_finds_a_concept_spelled_two_ways() -> None:
    """The check above can fail: a planted command with the old spellings is caught, each option named."""
    planted = typer.Typer()

    @planted.command()
    def old(
        output: Annotated[Path | None, typer.Option("--output", "-o")] = None,
        src: Annotated[str, typer.Option("--src")] = "en",
        ref: Annotated[Path | None, typer.Option("--ref")] = None,
        json: Annotated[str, typer.Option("--json")] = "yes",
    ) -> None:
        """A command as they were spelled before issue 32."""

    command = typer.main.get_command(planted)
    problems = spelling_problems([("old", command)])
    joined = "\n".join(problems)
    assert "old: --output is the path a command writes, spelled --out/-o" in joined
    assert "old: --src is source language" in joined and "old: --src is source file" in joined
    assert "old: --ref takes one file" in joined and "old: --json takes a value" in joined


def test_every_choice_is_listed_in_help() -> None:
    missing = []
    for path, command in COMMANDS_FOUND:
        text = help_text(path)
        for option in visible_options(command):
            spelled = names(option)
            values = choices(option)
            closed = spelled & CLOSED_SETS
            exempt = COMMA_LISTS | RUN_KEYS | OPEN_METHODS | METHOD_SPECS
            if closed and not values and (path, min(closed)) not in exempt:
                missing.append(f"{path}: {min(closed)} takes a closed set of values but is not a choice")
            if (path, min(spelled)) in COMMA_LISTS:
                values = ("display", "output")
            if (path, min(spelled)) in OPEN_METHODS:
                values = METHOD_NAMES
            missing += [
                f"{path}: {min(spelled)} {value!r} not in --help" for value in values if value not in text
            ]
    assert missing == []


def test_eval_sweep_and_bench_offer_the_same_request_options() -> None:
    """One request shape: every option of RequestOptions in eval and sweep; in bench all but NOT_FOR_BENCH."""
    fields = {f.name for f in dataclasses.fields(RequestOptions)}
    by_name = dict(COMMANDS_FOUND)
    for path, expected in (("eval", fields), ("sweep", fields), ("bench", fields - set(NOT_FOR_BENCH))):
        offered = {p.name for p in visible_options(by_name[path])}
        assert expected <= offered, (path, sorted(expected - offered))
        assert not set(NOT_FOR_BENCH) & offered if path == "bench" else True
    sweep = help_text("sweep")
    for option in ("--resegment", "--require-comet", "--comet-batch-size"):
        assert option in sweep


# --- old spellings ------------------------------------------------------------------------------------------


def run(args: list[str]) -> Any:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result


def warned_once(stderr: str, *olds: str) -> None:
    text = " ".join(stderr.split())
    for old in olds:
        assert text.count(f"warning: {old} is now spelled") == 1, (old, stderr)


def test_old_streams_spellings_work_and_warn_once(tmp_path: Path) -> None:
    new, old = tmp_path / "new.jsonl", tmp_path / "old.jsonl"
    args = ["streams", "flores", "--limit", "2"]
    quiet = run([*args, "--src-lang", "eng_Latn", "--tgt-lang", "jpn_Jpan", "-o", str(new)])
    assert "warning" not in quiet.stderr
    done = run([*args, "--src", "eng_Latn", "--tgt", "jpn_Jpan", "--output", str(old)])
    assert old.read_bytes() == new.read_bytes()
    warned_once(done.stderr, "--src", "--tgt", "--output")
    source, reference = tmp_path / "t.en", tmp_path / "t.de"
    source.write_text("Hello there my friend.\nThe cat sat down.\n", encoding="utf-8")
    reference.write_text("Hallo mein Freund.\nDie Katze saß.\n", encoding="utf-8")
    text = ["streams", "text", "--ref", str(reference), "--src-lang", "en", "--tgt-lang", "de"]
    run([*text, "--source", str(source), "-o", str(new)])
    done = run([*text, "--src", str(source), "--out", str(old)])  # --src was the source file in `text`
    assert old.read_bytes() == new.read_bytes()
    warned_once(done.stderr, "--src")


def test_asr_takes_several_references_and_the_old_spelling_warns_once(tmp_path: Path) -> None:
    lines = (SLTEV / "kaccNlwi6lUCEM.en.OSt").read_text(encoding="utf-8").splitlines()
    first, second = tmp_path / "a.de", tmp_path / "b.de"
    first.write_text("".join(f"erste {n}\n" for n in range(len(lines))), encoding="utf-8")
    second.write_text("".join(f"zweite {n}\n" for n in range(len(lines))), encoding="utf-8")
    base = ["streams", "asr", "--partials", str(SLTEV / "kaccNlwi6lUCEM.en.OStt")]
    base += ["--source", str(SLTEV / "kaccNlwi6lUCEM.en.OSt"), "--limit", "3"]
    new, old = tmp_path / "new.jsonl", tmp_path / "old.jsonl"
    run(
        [
            *base,
            "--ref",
            str(first),
            "--ref",
            str(second),
            "--tgt-lang",
            "de",
            "--src-lang",
            "en",
            "-o",
            str(new),
        ]
    )
    streams = read_streams(new)
    assert [s.references for s in streams] == [(f"erste {n}", f"zweite {n}") for n in range(3)]
    assert streams[0].provenance["more_reference_files"] == ["b.de"]
    # the old spellings: --reference twice, --tgt and --src as languages, --output; one warning each
    old_args = ["--reference", str(first), "--reference", str(second), "--tgt", "de", "--src", "en"]
    done = run([*base, *old_args, "--output", str(old)])
    assert old.read_bytes() == new.read_bytes()
    warned_once(done.stderr, "--reference", "--tgt", "--src", "--output")
    talks = tmp_path / "talks.jsonl"
    longform = [*base[:-2], "--longform", "--ref", str(first), "--ref", str(second), "--tgt-lang", "de"]
    run([*longform, "-o", str(talks)])
    (talk,) = read_streams(talks)
    assert all(len(segment.references) == 2 for segment in talk.segments)


def test_old_export_and_diff_spellings_work_and_warn_once(tmp_path: Path) -> None:
    run(["export", str(BASELINE), "-o", str(tmp_path / "new.log")])
    done = run(["export", str(BASELINE), "--output", str(tmp_path / "old.log")])
    assert (tmp_path / "old.log").read_bytes() == (tmp_path / "new.log").read_bytes()
    warned_once(done.stderr, "--output")
    diff = ["diff", str(BASELINE), str(BASELINE), "--bootstrap", "0"]
    for old, new in (("json", ["--json"]), ("markdown", ["--markdown"]), ("table", [])):
        before, after = run([*diff, "--format", old]), run([*diff, *new])
        assert before.stdout == after.stdout and "regression" in after.stderr
        assert " ".join(before.stderr.split()).count(f"warning: --format {old} is now") == 1
    assert json.loads(run([*diff, "--json"]).stdout)["exit_code"] == 0
    refused = runner.invoke(app, [*diff, "--format", "xml"])
    assert refused.exit_code == 2 and "'xml' is not one of 'json', 'markdown', 'table'" in refused.output
    both = runner.invoke(app, [*diff, "--json", "--markdown"])
    assert both.exit_code == 2 and "--json and --markdown" in both.output


def test_rewrite_keeps_values_and_what_follows_a_double_dash() -> None:
    aliases = [Alias("--output", "--out")]
    args, warnings = rewrite(
        ["--name", "--output", "--output=a", "x", "--output", "b", "--", "--output"], aliases, {"--name"}
    )
    assert args == ["--name", "--output", "--out", "a", "x", "--out", "b", "--", "--output"]
    assert warnings == ["--output is now spelled --out; the old spelling still works for now"]


def test_eval_takes_the_old_local_agreement_spelling(tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams()[:1])
    new = run(eval_args(tiny_model, streams, "--local-agreement", "3", "--threads", "2", "--json"))
    old_args = ["--display", "local-agreement", "--agreement", "3", "--threads", "2", "--json"]
    old = run(eval_args(tiny_model, streams, *old_args))
    keys = [[m["key"] for m in json.loads(r.stdout)["methods"]] for r in (new, old)]
    assert keys == [["rt", "ssbd-b0.2-la3"]] * 2
    assert " ".join(old.stderr.split()).count("--display local-agreement [--agreement N] is now spelled") == 1
    for extra, message in (
        (["--display", "mask", "--local-agreement", "2"], "--display mask contradicts --local-agreement"),
        (["--display", "local-agreement", "--local-agreement", "3"], "give LocalAgreement's n once"),
    ):
        refused = runner.invoke(app, eval_args(tiny_model, streams, *extra))
        assert refused.exit_code == 2 and message in " ".join(refused.output.split())


# --- a run without -o/--out -------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["eval", "sweep", "bench"])
def test_a_run_without_out_says_how_to_keep_it(command: str, tiny_model: Path, tmp_path: Path) -> None:
    streams = tmp_path / "streams.jsonl"
    write_streams(streams, make_streams()[:1])
    args = [command, "--model", str(tiny_model), "--streams", str(streams), "--threads", "2", "--quiet"]
    args += [] if command == "bench" else ["--comet-model", "none"]
    args += ["--beta", "0.2", "--mask-k", "0"] if command == "sweep" else []
    result = run(args)
    hint = " ".join(result.stderr.split())
    assert f"the run was not kept (no -o/--out); to keep it, run: simul {' '.join(args)} -o DIR" in hint
    kept = run([*args, "-o", str(tmp_path / "run")])
    assert "not kept" not in kept.stderr and (tmp_path / "run" / "run.json").is_file()


def test_the_options_of_modes_not_chosen_are_refused_together(tmp_path: Path) -> None:
    args = ["streams", "acl6060", "--simulate", "--max-gap-ms", "5", "--stable", "local-agreement"]
    result = runner.invoke(app, [*args, "-o", str(tmp_path / "x.jsonl")])
    text = " ".join(result.stderr.split())
    assert result.exit_code == 2
    assert "options that only apply with --partials: --max-gap-ms" in text
    assert "options that only apply with --audio-dir: --stable" in text

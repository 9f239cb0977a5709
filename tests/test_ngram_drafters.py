"""The n-gram drafters (issue 33, part 3; docs/methods.md, "The n-gram drafters"): prompt lookup against
llama-cpp-python's LlamaPromptLookupDecoding, the n-gram cache in llama.cpp's manner, the selective gate, the
methods lookup and ngram-cache and SSBD's tail drafter decoded on the tiny model under the decision trace,
their run files (which drafter proposed each token), and the options a method would ignore."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from llama_cpp.llama_speculative import LlamaPromptLookupDecoding
from typer.testing import CliRunner

from simul.cli import app
from simul.cli.bench_cmd import bench_methods
from simul.cli.draft_options import DraftOptions
from simul.cli.method_specs import spec_methods
from simul.cli.request_options import RequestOptions
from simul.common.errors import SimulError, UsageError
from simul.decoding import trace as tr
from simul.decoding.backend import LlamaBackend
from simul.decoding.methods.built_in import ngram_drafter
from simul.decoding.methods.lookup import Lookup, prompt_lookup
from simul.decoding.methods.ngram_cache import NgramCache, cache_draft, count_ngrams, read_static
from simul.decoding.methods.protocol import Position, StepStart
from simul.decoding.methods.selective import DraftGate
from simul.decoding.records import StepRecord
from simul.decoding.stream import StreamDecoder
from simul.reports.drafters import drafter_lines
from simul.reports.show import output_spans
from simul.request.methods import Method
from simul.request.ngram_settings import NgramDraft
from simul.request.sweep import sweep_methods
from simul.request.templates import PRESETS
from tests.claims import check_decisions
from tests.helpers import eval_args, make_streams

TEMPLATE = PRESETS["fewshot"]
runner = CliRunner()


def reference_lookup(sequence: list[int], ngram_max: int, draft_max: int) -> list[int]:
    found = LlamaPromptLookupDecoding.find_candidate_pred_tokens(
        np.array(sequence, dtype=np.intc), ngram_max, draft_max
    )
    return [int(t) for t in found]


def test_lookup_proposes_what_llama_prompt_lookup_decoding_proposes() -> None:
    """Same token sequence, same max_ngram_size and num_pred_tokens: the same draft, over sequences drawn
    from small vocabularies (many matches, several per n-gram size) and edge lengths."""
    rng = random.Random(33)
    compared = drafted = 0
    for _ in range(3000):
        vocab = rng.choice((2, 3, 5, 12))
        sequence = [rng.randrange(vocab) for _ in range(rng.randrange(0, 40))]
        ngram_max, draft_max = rng.randrange(1, 6), rng.randrange(1, 12)
        ours, _ = prompt_lookup(sequence, ngram_max, draft_max)
        assert ours == reference_lookup(sequence, ngram_max, draft_max), (sequence, ngram_max, draft_max)
        compared += 1
        drafted += bool(ours)
    assert drafted > compared // 2  # most draws have a match: the comparison is not of empty drafts


def test_lookup_searches_the_source_then_the_previous_output_then_the_output() -> None:
    settings = NgramDraft.of("lookup", tail=False, ngram_max=2, draft_max=3)
    drafter = Lookup(settings)
    drafter.start(StepStart(previous=(7, 8, 9, 4), final=False, room=50, prompt=(), source=(1, 7, 5, 6)))
    assert drafter.propose(Position((), 50)) is None  # nothing to look up before the first token
    # 7 occurs in the source (followed by 5 6) before the previous output (followed by 8 9): the source wins
    draft = drafter.propose(Position((7,), 50))
    assert draft is not None and draft.tokens == (5, 6, 7) and draft.drafter == "lookup"
    assert {r.name for r in draft.rules} == {"exact"}
    # the longer match (8 9) is in the previous output only
    draft = drafter.propose(Position((8, 9), 50))
    assert draft is not None and draft.tokens == (4, 8, 9)
    assert drafter.propose(Position((3,), 50)) is None  # no match
    cut = drafter.propose(Position((7,), 2))
    assert cut is not None and cut.tokens == (5, 6)  # the room left


def test_the_gate_drops_short_drafts_and_rests_after_poor_ones() -> None:
    gate = DraftGate(draft_min=2, draft_max=4, rest_after=2)
    assert gate.admit([1, 2, 3, 4, 5, 6], room=10) == [1, 2, 3, 4]
    assert gate.admit([1], room=10) == []  # shorter than draft_min
    assert gate.admit([1, 2, 3], room=1) == []  # cut by the room below draft_min
    gate.kept(0, 4)  # first token rejected: no wide pass, not counted
    gate.kept(1, 4)  # poor
    assert gate.admit([1, 2], room=10) == [1, 2]
    gate.kept(1, 4)  # poor again: rests until the next step
    assert gate.admit([1, 2], room=10) == []
    gate.start()
    assert gate.admit([1, 2], room=10) == [1, 2]
    gate.kept(1, 4)
    gate.kept(3, 4)  # a good draft resets the count
    gate.kept(1, 4)
    assert gate.admit([1, 2], room=10) == [1, 2]


def test_ngram_cache_drafts_from_the_context_then_the_stream_then_the_static_cache() -> None:
    context: dict[tuple[int, ...], dict[int, int]] = {}
    count_ngrams(context, [1, 2, 3, 1, 2, 3, 1, 2], range(1, 5), 8)
    # 2 -> 3 seen twice (lax 1-gram: 2 samples, 66 %), then 3 -> 1, 1 -> 2 ...
    assert cache_draft([1, 2], 4, 1, 4, context, {}, {}) == [3, 1, 2, 3]
    assert cache_draft([9, 9], 4, 1, 4, context, {}, {}) == []
    static: dict[tuple[int, ...], dict[int, int]] = {}
    count_ngrams(static, [9, 9, 5, 9, 9, 5], range(2, 3), 6)
    assert cache_draft([9, 9], 1, 1, 4, {}, {}, static) == [5]
    # one stream's drafter learns from its earlier steps only: a fresh one (the next stream) knows nothing
    make = ngram_drafter(NgramDraft.of("ngram-cache", tail=False))
    first = make(object())  # type: ignore[arg-type]
    assert isinstance(first, NgramCache)
    for _ in range(5):
        first.start(StepStart(previous=(4, 5, 6, 4, 5, 6), final=False, room=50, prompt=()))
    first.start(StepStart(previous=(), final=False, room=50, prompt=()))
    learned = first.propose(Position((4, 5), 50))
    assert learned is not None and learned.tokens[:2] == (6, 4)
    fresh = make(object())  # type: ignore[arg-type]
    fresh.start(StepStart(previous=(), final=False, room=50, prompt=()))
    assert fresh.propose(Position((4, 5), 50)) is None


def test_a_static_cache_file_is_hashed_checked_and_its_bad_lines_named(tmp_path: Path) -> None:
    tokens = tmp_path / "cache.tokens"
    tokens.write_text("9 9 5\n9 9 5\n")
    settings = NgramDraft.of("ngram-cache", tail=False, cache_file=tokens)
    assert (
        settings.cache_sha256
        and f"static-{settings.cache_sha256[:12]}" in Method("ngram-cache", ngram=settings).key
    )
    assert read_static(tokens, settings.cache_sha256, lambda text: []) == {(9, 9): {5: 2}}
    tokens.write_text("9 9 5\n9 x 5\n")
    with pytest.raises(SimulError, match="changed since the run was set up"):
        read_static(tokens, settings.cache_sha256, lambda text: [])
    changed = NgramDraft.of("ngram-cache", tail=False, cache_file=tokens)
    assert changed.cache_sha256 is not None
    with pytest.raises(SimulError, match=r"cache\.tokens:2: a token file holds whole numbers"):
        read_static(tokens, changed.cache_sha256, lambda text: [])
    with pytest.raises(UsageError, match="lookup has none"):
        NgramDraft.of("lookup", tail=False, cache_file=tokens)


@pytest.mark.parametrize(
    "method",
    [
        Method("lookup", ngram=NgramDraft.of("lookup", tail=False)),
        Method("ngram-cache", ngram=NgramDraft.of("ngram-cache", tail=False)),
        Method("ssbd", beta=0.2, ngram=NgramDraft.of("lookup", tail=True, draft_min=1)),
        Method("ssbd", beta=0.2, resync=1, ngram=NgramDraft.of("ngram-cache", tail=True, draft_min=1)),
    ],
    ids=lambda m: m.key,
)
def test_every_kept_token_satisfies_the_rule_of_its_drafter(
    tiny_backend: LlamaBackend, method: Method
) -> None:
    """Under the decision trace: the n-gram drafters' tokens are decided by exact greedy acceptance and
    SSBD's by its biased rule, each kept token is marked as its drafter's, and under exact acceptance the
    outputs are RT's token for token (the tiny model has no near-ties)."""
    streams = make_streams(lag=2)
    tiny_backend.reset()
    rt = [StreamDecoder(tiny_backend, TEMPLATE, Method("rt")).decode(s) for s in streams]
    tiny_backend.reset()
    decoder = StreamDecoder(tiny_backend, TEMPLATE, method)
    with tr.recording(keep_rows=True) as recorded:
        results = [decoder.decode(s) for s in streams]
    seen = check_decisions(recorded, results)
    drafter = method.drafters[-1]
    steps = [s for r in results for s in r.steps]
    kept = sum(s.drafted_by.count(drafter) for s in steps)
    assert kept > 0 and sum(s.offered.get(drafter, 0) for s in steps) > kept, seen
    assert {d.rule for d in recorded.decisions if d.drafter == drafter} == {"exact"}
    assert all(s.drafters_written for s in steps)
    if method.name != "ssbd":
        for ours, plain in zip(results, rt, strict=True):
            assert [s.output_ids for s in ours.steps] == [s.output_ids for s in plain.steps]
        assert sum(s.decode_passes for s in steps) < sum(s.decode_passes for r in rt for s in r.steps)


def test_eval_writes_the_drafters_only_for_methods_that_have_new_ones(
    tiny_model: Path, streams_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    args = eval_args(tiny_model, streams_file, "--threads", "2", "--method", "lookup", "-o", str(out))
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    by_method = {m: [r for r in rows if r["method"] == m] for m in ("rt", "lookup")}
    assert all("drafted_by" not in r and "verify_passes" not in r for r in by_method["rt"])
    looked = by_method["lookup"]
    assert looked and all(len(r["drafted_by"]) == len(r["output_ids"]) for r in looked)
    assert any("lookup" in r["drafted_by"] for r in looked)
    run = json.loads((out / "run.json").read_text())
    reports = {m["key"]: m for m in run["methods"]}
    assert "drafters" not in reports["rt"]["counts"]
    drafters = reports["lookup"]["counts"]["drafters"]
    kept = sum(r["drafted_by"].count("lookup") for r in looked)
    assert drafters["by_drafter"]["lookup"]["accepted"] == kept
    assert drafters["by_drafter"]["lookup"]["ao"] == reports["lookup"]["metrics"]["ao"]
    passes = sum(r["decode_passes"] + r["verify_passes"] for r in looked)
    assert drafters["passes_per_update"] == round(passes / len(looked), 3)
    lines = drafter_lines(run["methods"])  # under eval's and bench's tables: the lookup only
    assert len(lines) == 1 and "lookup A/D" in lines[0] and "passes/update" in lines[0]
    # simul show marks the lookup's accepted tokens, wherever they are in the output
    marked = 0
    for row in looked:
        record = StepRecord.from_json({**row, "t_prompt": 0.0, "t_gen": 0.0})  # times: time_ms
        spans = output_spans(None, record)
        tail = "".join(s.text for s in spans if "tail" in s.kinds)
        assert all("accepted" in s.kinds for s in spans if "tail" in s.kinds)
        marked += bool(tail)
        if "lookup" not in row["drafted_by"]:
            assert not tail
    assert marked > 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--method", "rt", "--draft-max", "3"], "--draft-max sets the n-gram drafter"),
        (["--method", "ssbd", "--ngram-max", "3"], "or --tail-draft"),
        (["--method", "cd", "--tail-draft", "lookup"], "CD keeps its draft unverified"),
        (["--method", "lookup", "--tail-draft", "lookup"], "drafts with its own n-gram drafter"),
        (["--method", "lookup", "--beta", "0.3"], "exact greedy acceptance"),
        (["--method", "ssbd", "--tail-draft", "lookup", "--target-bias-beta", "0.2"], "choose one"),
        (["--method", "ngram-cache", "--ngram-max", "5"], "at most 4"),
    ],
)
def test_options_a_method_ignores_are_refused(
    tiny_model: Path, streams_file: Path, extra: list[str], message: str
) -> None:
    result = runner.invoke(app, eval_args(tiny_model, streams_file, *extra))
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split()), result.output


def test_bench_and_sweep_take_the_n_gram_methods_and_the_tail_drafter() -> None:
    drafts = DraftOptions(draft_max=3)
    keys = [
        m.key
        for m in bench_methods(
            0.2,
            "keep",
            0,
            True,
            True,
            spec_methods(["lookup", "ngram-cache"], RequestOptions(), drafts),
            "lookup",
            drafts,
        )
    ]
    assert keys == [
        "rt",
        "ssbd-b0.2",
        "ssbd-b0.2-tail-lookup-dmax3",
        "cd",
        "lookup-dmax3",
        "ngram-cache-dmax3",
    ]
    assert [m.key for m in bench_methods(0.2, "keep", 0, False, False)] == ["rt", "ssbd-b0.2"]
    with pytest.raises(UsageError, match="--draft-max set the n-gram drafter"):
        bench_methods(0.2, "keep", 0, False, True, drafts=drafts)
    with pytest.raises(UsageError, match="--ngram-cache-file is ngram-cache's static cache"):
        bench_methods(
            0.2,
            "keep",
            0,
            False,
            True,
            spec_methods(["lookup"], RequestOptions(), DraftOptions()),
            drafts=DraftOptions(ngram_cache_file=Path("x")),
        )
    tail = NgramDraft.of("ngram-cache", tail=True)
    swept = sweep_methods([0.0, 0.2], [0, 2], ["output"], True, 0.2, [2], tail)
    assert [m.key for m in swept if m.name == "ssbd"] == [
        "ssbd-b0-tail-ngram-cache",
        "ssbd-b0.2-tail-ngram-cache",
        "ssbd-b0.2-output2-tail-ngram-cache",
        "ssbd-b0.2-tail-ngram-cache-la2",
    ]


def test_a_talk_with_a_tail_drafter_records_its_drafters_and_shows(tiny_model: Path, tmp_path: Path) -> None:
    """A long-form stream (a whole talk): the windows' drafters, token by token, in steps.jsonl, the
    per-drafter counts in run.json, and `simul show` reading it back (the open window's draft marked)."""
    talk = (
        Path(__file__).resolve().parent.parent
        / "fixtures/streams/acl6060-dev-110-first12-en-de-longform.jsonl"
    )
    out = tmp_path / "talk"
    extra = ["--threads", "2", "--limit", "1", "--tail-draft", "ngram-cache", "--no-baseline", "-o", str(out)]
    result = runner.invoke(app, eval_args(tiny_model, talk, *extra))
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert rows and all(len(r["drafted_by"]) == len(r["output_ids"]) for r in rows)
    assert any("ngram-cache" in r["drafted_by"] for r in rows)
    (report,) = json.loads((out / "run.json").read_text())["methods"]
    assert set(report["counts"]["drafters"]["by_drafter"]) == {"previous", "ngram-cache"}
    shown = runner.invoke(app, ["show", str(out), "--stream", rows[0]["stream"]])
    assert shown.exit_code == 0, shown.output


def test_ngram_cache_thresholds_go_by_the_place_among_the_sizes_as_in_llama_cpp() -> None:
    """llama.cpp's try_draft indexes its thresholds by the n-gram's place from ngram_min up: with ngram_min 2,
    a 2-gram takes the first thresholds (lax: seen 2 times, 66 %), not the second (2 times, 50 %)."""
    context: dict[tuple[int, ...], dict[int, int]] = {(1, 2): {3: 1, 4: 1}}  # 50 %: enough at place 1 only
    assert cache_draft([1, 2], 1, 1, 2, context, {}, {}) == [3]  # the 2-gram is second from 1-grams: 50 %
    assert cache_draft([1, 2], 1, 2, 2, context, {}, {}) == []  # first from 2-grams: 66 % needed


def test_bench_runs_the_n_gram_methods_and_gives_passes_per_update(
    tiny_model: Path, streams_file: Path
) -> None:
    args = [
        "bench",
        "--model",
        str(tiny_model),
        "--streams",
        str(streams_file),
        "--threads",
        "2",
        "--limit",
        "2",
    ]
    args += ["--method", "lookup", "--method", "ngram-cache", "--tail-draft", "lookup", "--quiet", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = {row["key"]: row for row in json.loads(result.stdout)["methods"]}
    assert list(rows) == ["rt", "ssbd-b0.2-tail-lookup", "cd", "lookup", "ngram-cache"]
    assert rows["rt"]["draft_tokens_per_update"] == 0.0
    steps = rows["rt"]["steps"]
    assert rows["rt"]["passes_per_update"] == round(rows["rt"]["decode_passes"] / steps, 3)  # no verification
    for key in ("ssbd-b0.2-tail-lookup", "lookup", "ngram-cache"):
        assert rows[key]["passes_per_update"] > 0 and rows[key]["draft_tokens_per_update"] > 0


def test_damaged_drafter_records_are_named(tmp_path: Path) -> None:
    """A steps.jsonl line whose drafters do not match its tokens, and a run.json method whose n-gram settings
    are not settings, are refused with the file and what is wrong."""
    from simul.runs.schema import RecordError, check_step_record

    record = StepRecord(0, "a b", False, None, 9, 0, 9, 0, 0, [1, 2], "x y", "x y", 0, "eog", 0.0, 0.0)
    record.drafted_by, record.offered, record.drafters_written = ["lookup", ""], {"lookup": 3}, True
    line = {**record.to_json(), "t_prompt": 0.0, "t_gen": 0.0}
    check_step_record(line)  # as written
    with pytest.raises(RecordError, match="names 1 drafters for 2 output tokens"):
        check_step_record({**line, "drafted_by": ["lookup"]})
    with pytest.raises(RecordError, match="'offered' must be an object whose every value is a whole number"):
        check_step_record({**line, "offered": {"lookup": "3"}})
    with pytest.raises(UsageError, match="must be an n-gram drafter's settings"):
        Method.from_json({"name": "lookup", "ngram": "x"})
    with pytest.raises(UsageError, match="unknown n-gram drafter"):
        NgramDraft.from_json({**NgramDraft.of("lookup", tail=False).to_json(), "kind": "oracle"})

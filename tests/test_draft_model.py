"""Draft models beside the target (issue 34): the vocabulary check (llama.cpp's rules), early-exit copies
(`simul models truncate`, --draft-layers), and `spec` on tiny model pairs made by simul.testing: two tiny
GGUFs with the same vocabulary and different weights, a truncated copy of one, and one with another
vocabulary."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import gguf
import numpy as np
import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.common.errors import UsageError
from simul.common.hashing import sha256_file
from simul.decoding import trace as tr
from simul.decoding.backend import LlamaBackend
from simul.decoding.backend.vocabulary import VocabularyFacts, first_difference
from simul.decoding.draft_model import DraftSettings
from simul.decoding.early_exit import early_exit_copy, read_early_exit, truncate_model
from simul.decoding.engine import Engine, EngineSettings
from simul.machine.calibration import PassCosts
from simul.metrics.families.speed import acceptance_by_position
from simul.metrics.registry import DRAFT_MODEL_METRICS
from simul.metrics.speed import modelled_speedup_with_draft
from simul.reports.bench import draft_cost, run_draft_cost
from simul.reports.draft_notes import draft_model_lines
from simul.request.methods import Method
from simul.testing.tiny_gguf import build_tiny_gguf
from tests.claims import check_decisions
from tests.helpers import eval_args, make_streams

runner = CliRunner()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The target (seed 0), a draft of the same vocabulary and other weights (seed 2), the target's first
    block alone, and a model of another vocabulary."""
    d = tmp_path_factory.mktemp("pair")
    target = build_tiny_gguf(d / "target.gguf", seed=0)
    return {
        "target": target,
        "draft": build_tiny_gguf(d / "draft.gguf", seed=2),
        "first1": truncate_model(target, 1, d / "first1.gguf").path,
        "other": build_tiny_gguf(d / "other.gguf", seed=0, vocabulary="other"),
    }


# -- the vocabulary check ---------------------------------------------------------------------------------


@dataclass
class FakeVocabulary:
    facts: VocabularyFacts
    texts: list[bytes]

    def vocabulary_facts(self) -> VocabularyFacts:
        return self.facts

    def token_text(self, token: int) -> bytes:
        return self.texts[token]


BASE = VocabularyFacts(kind=1, n_tokens=300, add_bos=True, bos=1, add_eos=False, eos=2)
TEXTS = [f"t{i}".encode() for i in range(600)]


@pytest.mark.parametrize(
    ("facts", "texts", "named"),
    [
        (
            replace(BASE, kind=2),
            TEXTS,
            "vocabulary types differ (the target's is SPM (1), the draft's BPE (2))",
        ),
        (replace(BASE, add_bos=False), TEXTS, "the target adds BOS and the draft does not"),
        (replace(BASE, bos=3), TEXTS, "the BOS tokens differ (id 1 in the target, 3 in the draft)"),
        (replace(BASE, eos=7), TEXTS, "the EOS tokens differ (id 2 in the target, 7 in the draft)"),
        (
            replace(BASE, n_tokens=429),
            TEXTS,
            "differ by more than 128 tokens of padding (300 in the target, 429",
        ),
        (BASE, [*TEXTS[:40], b"x", *TEXTS[41:]], "token 40 is 't40' in the target and 'x' in the draft"),
    ],
)
def test_each_rule_of_llamacpp_is_named(facts: VocabularyFacts, texts: list[bytes], named: str) -> None:
    assert named in str(first_difference(FakeVocabulary(BASE, TEXTS), FakeVocabulary(facts, texts)))


def test_padding_and_the_first_ids_are_allowed_to_differ() -> None:
    """Sizes within 128 tokens pass (Qwen2.5 0.5B/7B), and ids below 5 are not compared (llama.cpp's
    SPEC_VOCAB_CHECK_START_TOKEN_ID); only the shared range is."""
    renumbered = [b"a", b"b", b"c", b"d", b"e", *TEXTS[5:]]
    assert (
        first_difference(FakeVocabulary(BASE, TEXTS), FakeVocabulary(replace(BASE, n_tokens=428), renumbered))
        is None
    )


def test_tiny_pairs_are_judged_on_the_real_vocabularies(pair: dict[str, Path]) -> None:
    backends = {name: LlamaBackend(path, n_ctx=256, n_threads=1) for name, path in pair.items()}
    try:
        target = backends["target"]
        assert first_difference(target, backends["draft"]) is None
        assert first_difference(target, backends["first1"]) is None
        assert str(first_difference(target, backends["other"])).startswith("token 259 is ")
    finally:
        for backend in backends.values():
            backend.close()


def test_a_draft_of_another_vocabulary_is_refused(pair: dict[str, Path], streams_file: Path) -> None:
    args = eval_args(pair["target"], streams_file, "--method", "spec", "--draft-model", str(pair["other"]))
    result = runner.invoke(app, [*args, "--threads", "1"])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "its vocabulary is not the one of target.gguf" in text and "token 259 is" in text


# -- early-exit copies ------------------------------------------------------------------------------------


def test_truncate_keeps_the_first_blocks_the_norm_and_the_head(pair: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "copy.gguf"
    result = runner.invoke(
        app, ["models", "truncate", str(pair["target"]), "--layers", "1", "-o", str(out), "--json"]
    )
    assert result.exit_code == 0, result.output
    written = json.loads(result.stdout)
    assert written["layers"] == 1 and written["source_blocks"] == 2
    assert written["source_sha256"] == sha256_file(pair["target"])
    source, copy = gguf.GGUFReader(pair["target"]), gguf.GGUFReader(out)
    names = {t.name for t in copy.tensors}
    assert names == {t.name for t in source.tensors if not t.name.startswith("blk.1.")}
    assert {"output.weight", "output_norm.weight", "token_embd.weight", "blk.0.attn_q.weight"} <= names
    for tensor in copy.tensors:  # byte for byte
        original = next(t for t in source.tensors if t.name == tensor.name)
        assert np.array_equal(np.asarray(tensor.data), np.asarray(original.data))
    block_count = copy.get_field("llama.block_count")
    assert block_count is not None and block_count.contents() == 1
    backend = LlamaBackend(out, n_ctx=256, n_threads=1)
    try:
        assert backend.n_layers == 1
    finally:
        backend.close()
    info = read_early_exit(out)
    assert info is not None and info.layers == 1
    assert read_early_exit(pair["target"]) is None


def test_truncate_refuses_what_it_cannot_copy(pair: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "copy.gguf"
    for layers in ("2", "0"):
        result = runner.invoke(
            app, ["models", "truncate", str(pair["target"]), "--layers", layers, "-o", str(out)]
        )
        assert result.exit_code == 2 and "fewer blocks than the model's 2" in result.output, result.output
    assert not out.exists()
    # an architecture whose tensors it does not map
    mamba = tmp_path / "mamba.gguf"
    writer = gguf.GGUFWriter(mamba, "mamba")
    writer.add_block_count(2)
    writer.add_tensor("blk.0.ssm_in.weight", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    result = runner.invoke(app, ["models", "truncate", str(mamba), "--layers", "1", "-o", str(out)])
    assert result.exit_code == 2 and "cannot make an early-exit copy of a 'mamba' model" in result.output
    # a tensor neither in a block nor shared
    odd = tmp_path / "odd.gguf"
    writer = gguf.GGUFWriter(odd, "llama")
    writer.add_block_count(2)
    writer.add_tensor("blk.0.attn_q.weight", np.zeros((4, 4), dtype=np.float32))
    writer.add_tensor("vision.patch.weight", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    result = runner.invoke(app, ["models", "truncate", str(odd), "--layers", "1", "-o", str(out)])
    assert result.exit_code == 2 and "cannot place tensor 'vision.patch.weight'" in result.output
    assert not out.exists() and not list(tmp_path.glob("*.part"))


def test_draft_layers_makes_the_copy_once(
    pair: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIMUL_CACHE_DIR", str(tmp_path / "cache"))
    made = early_exit_copy(pair["target"], 1)
    assert made.path.parent == tmp_path / "cache" / "drafts"
    assert made.path.name.startswith(sha256_file(pair["target"]))
    stamp = made.path.stat().st_mtime_ns
    import simul.decoding.early_exit as early_exit

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the cached copy was made again")

    monkeypatch.setattr(early_exit, "truncate_model", never)
    again = early_exit_copy(pair["target"], 1)
    assert again.path == made.path and again.path.stat().st_mtime_ns == stamp


# -- spec -------------------------------------------------------------------------------------------------


def test_spec_keeps_only_the_targets_argmax(pair: dict[str, Path]) -> None:
    """Every token spec's draft model proposes and the target keeps is the argmax of its verification row
    (tests.claims: exact), every other output token is the target's own greedy pick, and the outputs are RT's
    (the tiny model's choices have wide margins; on real models batched rows may flip near-ties)."""
    for draft in ("draft", "first1"):
        engine = Engine(
            EngineSettings(model=pair["target"], threads=1, draft=DraftSettings(model=pair[draft]))
        )
        try:
            rt = [engine.decoder(Method("rt")).decode(s) for s in make_streams()]
            with tr.recording(keep_rows=True) as recorded:
                spec = [engine.decoder(Method("spec", draft_max=4)).decode(s) for s in make_streams()]
        finally:
            engine.close()
        seen = check_decisions(recorded, spec)
        verified = recorded.of_kind(tr.VERIFY)
        assert verified and {(d.drafter, d.rule) for d in verified} == {("model", "exact")}
        # the other weights' drafts are all rejected, the target's own first block's all kept
        assert seen["verify rejected (not the argmax)" if draft == "draft" else "verify kept"] > 0
        for a, b in zip(rt, spec, strict=True):
            assert [s.output_ids for s in a.steps] == [s.output_ids for s in b.steps]
        steps = [s for r in spec for s in r.steps]
        assert sum(s.draft_passes for s in steps) > 0
        assert sum(s.decode_passes for s in steps) < sum(s.decode_passes for r in rt for s in r.steps)


def test_spec_records_its_draft_model(pair: dict[str, Path], streams_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = eval_args(pair["target"], streams_file, "--method", "spec", "--draft-model", str(pair["draft"]))
    result = runner.invoke(
        app, [*args, "--threads", "1", "--draft-max", "3", "--draft-p-min", "0.2", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    run = json.loads((out / "run.json").read_text())
    digest = sha256_file(pair["draft"])
    assert run["config"]["draft_model"]["sha256"] == run["config"]["draft_model_sha256"] == digest
    keys = [m["key"] for m in run["methods"]]
    assert keys == ["rt", f"spec-max3-p0.2-draft-{digest[:12]}"]
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert all("draft_passes" not in s for s in steps if s["method"] == "rt")
    assert any(s.get("draft_passes", 0) > 0 for s in steps if s["method"] != "rt")
    rt, spec = run["methods"]
    assert "draft_passes" not in rt["counts"] and "draft_seconds" not in rt["counts"]
    assert spec["counts"]["draft_passes"] == sum(s.get("draft_passes", 0) for s in steps) > 0
    assert spec["greedy_exact"] is True
    drafts = [d for s in steps if s["method"] != "rt" for d in s["model_drafts"]]
    counts = spec["counts"]
    assert drafts and all(0 <= kept <= offered <= 3 for offered, kept in drafts)
    assert (counts["model_drafts"], counts["model_drafted"], counts["model_accepted"]) == (
        len(drafts),
        sum(d[0] for d in drafts),
        sum(d[1] for d in drafts),
    )
    assert counts["model_rejections"] == sum(1 for offered, kept in drafts if kept < offered) > 0
    assert len(counts["acceptance_by_position"]) == max(d[0] for d in drafts)
    # the draft figures `simul diff` compares: only for the method that drafts with the model
    assert not set(DRAFT_MODEL_METRICS) & set(rt["metrics"])
    metrics = spec["metrics"]
    assert metrics["draft_acceptance"] == round(100 * counts["model_accepted"] / counts["model_drafted"], 2)
    # the timing figures from the steps' own seconds (timings.jsonl: 6 decimals a step; the counts round
    # their sums to 4, too coarse for the tiny model's milliseconds)
    timed = [json.loads(line) for line in (out / "timings.jsonl").read_text().splitlines()]
    draft_seconds = sum(t.get("t_draft", 0.0) for t in timed if t["method"] == spec["key"])
    decode_seconds = sum(t["t_decode"] for t in timed if t["method"] == spec["key"])
    one_token = decode_seconds / counts["decode_passes"]
    assert metrics["draft_ms"] == pytest.approx(
        1000 * draft_seconds / counts["model_drafted"], rel=5e-3, abs=2e-3
    )
    assert metrics["draft_cost"] == pytest.approx(
        draft_seconds / counts["model_drafted"] / one_token, rel=5e-3, abs=2e-3
    )


def test_diff_compares_the_draft_figures(pair: dict[str, Path], streams_file: Path, tmp_path: Path) -> None:
    runs = []
    for name, p_min in (("a", "0.2"), ("b", "0.9")):
        out = tmp_path / name
        args = eval_args(
            pair["target"], streams_file, "--method", "spec", "--draft-model", str(pair["draft"])
        )
        result = runner.invoke(
            app, [*args, "--threads", "1", "--draft-max", "3", "--draft-p-min", p_min, "-o", str(out)]
        )
        assert result.exit_code == 0, result.output
        runs.append(out)
    keys = [m["key"] for m in json.loads((runs[1] / "run.json").read_text())["methods"]]
    a_key = next(
        m["key"] for m in json.loads((runs[0] / "run.json").read_text())["methods"] if m["key"] != "rt"
    )
    diff = runner.invoke(
        app,
        [
            "diff",
            str(runs[0]),
            str(runs[1]),
            "--pair",
            f"{a_key}={keys[1]}",
            "--json",
            "--max-drop",
            "draft_acceptance=100",
            "--max-increase",
            "draft_cost=none",
        ],
    )
    assert diff.exit_code == 0, diff.output
    doc = json.loads(diff.stdout)
    spec = next(m for m in doc["methods"] if m["base"] == a_key)
    rows = {r["name"]: r for r in spec["metrics"]}
    assert {"draft_acceptance", "draft_ms", "draft_cost"} <= set(rows)
    assert rows["draft_acceptance"]["threshold"] == 100.0 and rows["draft_acceptance"]["higher_is_better"]
    rt = next(m for m in doc["methods"] if m["base"] == "rt")
    assert not {"draft_acceptance", "draft_ms", "draft_cost"} & {r["name"] for r in rt["metrics"]}
    wrong = runner.invoke(app, ["diff", str(runs[0]), str(runs[1]), "--max-drop", "draft_ms=1"])
    assert wrong.exit_code == 2 and "use --max-increase" in wrong.output


# a draft-model method's counts for the caption tests: c_L from the run = (0.02 / 20) / (0.04 / 10) = 0.25
CAPTION_COUNTS = {
    "draft_passes": 20,
    "draft_seconds": 0.02,
    "model_drafted": 9,
    "model_accepted": 5,
    "model_rejections": 2,
    "steps": 4,
    "decode_seconds": 0.04,
    "decode_passes": 10,
}


def test_acceptance_by_position_and_the_caption() -> None:
    drafts = [[3, 3], [3, 1], [2, 0], [1, 1]]
    # position 0: 4 drafts reach it, 3 keep it; 1: 3 reach, 1 keeps; 2: 2 reach, 1 keeps
    assert acceptance_by_position(drafts) == [0.75, 0.3333, 0.5]
    assert acceptance_by_position([]) == []
    counts = {**CAPTION_COUNTS, "acceptance_by_position": acceptance_by_position(drafts)}
    (line,) = draft_model_lines([{"label": "SPEC", "counts": counts, "draft_max": 3}, {"counts": {}}])
    # alpha = 5 / (5 + 2); c_L = (0.02 / 20) / (0.04 / 10) = 0.25; Leviathan: (1 - a^4) / ((1 - a)(3 c + 1))
    alpha = 5 / 7
    bound = (1 - alpha**4) / ((1 - alpha) * (3 * 0.25 + 1))
    assert line == (
        "SPEC: 5.0 draft passes per update; 2.22 ms drafting per drafted token "
        "(target one-token pass 4.00 ms); "
        f"kept by draft position 0.75 0.33 0.50; Leviathan bound {bound:.2f}x "
        "(alpha 0.71, K 3, c_L 0.25 from the run)"
    )


def test_spec_batches_the_draft_model_under_parallel(
    pair: dict[str, Path], streams_file: Path, tmp_path: Path
) -> None:
    """--parallel 2: the draft model's passes are batched too, and the outputs are those of one stream at a
    time (the tiny model's wide margins)."""
    outputs = {}
    for parallel in ("1", "2"):
        out = tmp_path / f"p{parallel}"
        args = eval_args(
            pair["target"], streams_file, "--method", "spec", "--draft-model", str(pair["first1"])
        )
        result = runner.invoke(
            app, [*args, "--threads", "1", "--parallel", parallel, "--no-baseline", "-o", str(out)]
        )
        assert result.exit_code == 0, result.output
        outputs[parallel] = [
            (s["stream"], s["step"], s["output_ids"])
            for s in map(json.loads, (out / "steps.jsonl").read_text().splitlines())
        ]
    assert outputs["1"] == outputs["2"]


def test_shards_merge_only_with_the_same_draft(
    pair: dict[str, Path], streams_file: Path, tmp_path: Path
) -> None:
    def shard(k: str, draft: str) -> Path:
        out = tmp_path / f"shard{k}-{draft}"
        args = eval_args(pair["target"], streams_file, "--method", "spec", "--draft-model", str(pair[draft]))
        result = runner.invoke(
            app, [*args, "--threads", "1", "--shard", f"{k}/2", "--no-baseline", "-o", str(out)]
        )
        assert result.exit_code == 0, result.output
        return out

    one, two, other = shard("1", "draft"), shard("2", "draft"), shard("2", "first1")
    refused = runner.invoke(app, ["merge", str(tmp_path / "bad"), str(one), str(other), "--quiet"])
    assert refused.exit_code == 2 and "different draft models" in refused.output, refused.output
    merged = runner.invoke(app, ["merge", str(tmp_path / "merged"), str(one), str(two), "--quiet"])
    assert merged.exit_code == 0, merged.output


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--method", "spec"], "--method spec drafts with a draft model"),
        (["--method", "ssbd", "--draft-layers", "1"], "no method here drafts with one"),
        (["--draft-threads", "2"], "--draft-threads set(s) how the draft model runs, and there is none"),
        (["--method", "spec", "--draft-layers", "1", "--draft-max", "0"], "--draft-max must be 1 or more"),
        (
            ["--method", "spec", "--draft-layers", "1", "--draft-min", "5", "--draft-max", "4"],
            "--draft-min must be",
        ),
        (
            ["--method", "spec", "--draft-layers", "1", "--draft-p-min", "1.5"],
            "--draft-p-min must be a probability",
        ),
        (
            ["--method", "ssbd", "--draft-max", "4"],
            "--draft-max sets the n-gram drafter, and --method ssbd has none",
        ),
        (["--method", "spec", "--draft-layers", "1", "--beta", "0.2"], "drop --beta, or pass --method ssbd"),
        (["--method", "spec", "--draft-layers", "1", "--draft-model", "x.gguf"], "give the draft model once"),
        (["--method", "spec", "--draft-layers", "5"], "fewer blocks than the model's 2"),
        (["--method", "spec", "--draft-layers", "1", "--bild-rollback", "2"], "pass --method bild"),
        (["--method", "bild", "--draft-layers", "1", "--draft-p-min", "0.5"], "pass --bild-fallback P"),
        (
            ["--method", "bild", "--draft-layers", "1", "--bild-rollback", "0"],
            "--bild-rollback must be a positive",
        ),
        (
            ["--method", "bild", "--draft-layers", "1", "--bild-fallback", "2"],
            "--bild-fallback must be a probability",
        ),
        (["--method", "bild", "--draft-layers", "1", "--fuse"], "--method bild has no such draft"),
        (["--method", "rt", "--draft-layers", "1", "--tail-draft", "model"], "drafts after SSBD's draft"),
        (
            ["--method", "spec", "--draft-layers", "1", "--ngram-max", "3"],
            "--ngram-max set(s) the n-gram drafter, and --method spec drafts with the draft model",
        ),
        (
            ["--beta", "0.2", "--draft-layers", "1", "--tail-draft", "model", "--ngram-cache-file", "x.txt"],
            "--ngram-cache-file set(s) the n-gram drafter, and --tail-draft model drafts with the draft",
        ),
        (
            ["--method", "tests.plugin:Absent", "--draft-max", "4", "--tail-draft", "model"],
            "--tail-draft, --draft-max set simul's own methods, and --method tests.plugin:Absent",
        ),
        (["--method", "spec", "--draft-layers", "1", "--tail-draft", "model"], "has its own draft model"),
        (
            ["--beta", "0.2", "--draft-layers", "1", "--tail-draft", "model", "--target-bias-beta", "0.5"],
            "--tail-draft model would never be asked",
        ),
    ],
)
def test_draft_usage_errors(
    pair: dict[str, Path],
    streams_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    extra: list[str],
    named: str,
) -> None:
    monkeypatch.setenv("SIMUL_CACHE_DIR", str(tmp_path / "cache"))
    result = runner.invoke(app, [*eval_args(pair["target"], streams_file, *extra), "--threads", "1"])
    assert result.exit_code == 2, result.output
    assert named in " ".join(result.output.split())


def test_draft_settings_refuse_a_missing_file() -> None:
    with pytest.raises(UsageError, match="does not exist"):
        DraftSettings(model=Path("/nonexistent/draft.gguf")).identity()


@pytest.mark.slow
def test_spec_on_ray_equals_one_process(pair: dict[str, Path], streams_file: Path, tmp_path: Path) -> None:
    """--ray: each worker loads the draft beside the target; the run is the one-process run."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'simul[ray]')")
    from tests.test_merge import steps_without_timing

    args = eval_args(pair["target"], streams_file, "--method", "spec", "--draft-model", str(pair["first1"]))
    runs = {}
    for name, extra in (("single", ()), ("ray", ("--ray", "local", "--ray-workers", "2"))):
        runs[name] = tmp_path / name
        result = runner.invoke(app, [*args, "--threads", "1", *extra, "-o", str(runs[name])])
        assert result.exit_code == 0, result.output
    assert steps_without_timing(runs["single"]) == steps_without_timing(runs["ray"])
    run = json.loads((runs["ray"] / "run.json").read_text())
    assert run["config"]["draft_model_sha256"] == sha256_file(pair["first1"])


# -- bild -------------------------------------------------------------------------------------------------


def test_bild_keeps_what_its_rollback_rule_keeps(pair: dict[str, Path]) -> None:
    """Every token bild keeps satisfies BiLD's rollback rule against its own row (tests.claims: rollback),
    every rejected one breaks it and is replaced by the target's pick; with a loose threshold it keeps draft
    tokens that are not the target's argmax (not greedy-exact), with a tight one none."""
    engine = Engine(EngineSettings(model=pair["target"], threads=1, draft=DraftSettings(model=pair["draft"])))
    try:
        seen = {}
        for rollback in (10.0, 0.01):  # the other weights' drafts cost 5 to 11 nats under the target
            method = Method("bild", fallback=0.0, rollback=rollback)
            assert not method.greedy_exact and method.to_json()["greedy_exact"] is False
            with tr.recording(keep_rows=True) as recorded:
                results = [engine.decoder(method).decode(s) for s in make_streams()]
            seen[rollback] = check_decisions(recorded, results)
            verified = recorded.of_kind(tr.VERIFY)
            assert verified and {(d.drafter, d.rule, d.bias) for d in verified} == {
                ("model", "rollback", rollback)
            }
    finally:
        engine.close()
    assert (
        seen[10.0]["verify kept (not the argmax)"] > 0 and seen[10.0]["verify rejected (not the argmax)"] > 0
    )
    assert seen[0.01]["verify rejected (not the argmax)"] > 0
    assert not any(key.startswith("verify kept") for key in seen[0.01])


def test_bild_is_recorded_as_not_greedy_exact(
    pair: dict[str, Path], streams_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    args = eval_args(
        pair["target"], streams_file, "--method", "bild", "--draft-layers", "1", "--threads", "1"
    )
    env = {"SIMUL_CACHE_DIR": str(tmp_path / "cache")}
    result = runner.invoke(
        app, [*args, "--bild-fallback", "0.6", "--bild-rollback", "3", "-o", str(out)], env=env
    )
    assert result.exit_code == 0, result.output
    bild = json.loads((out / "run.json").read_text())["methods"][1]
    assert bild["key"] == "bild-max10-fb0.6-rb3-draft-exit1"
    assert (bild["greedy_exact"], bild["fallback"], bild["rollback"]) == (False, 0.6, 3.0)
    assert Method.from_json(bild).key == bild["key"]


# -- SSBD with a draft-model tail ---------------------------------------------------------------------------


@pytest.mark.parametrize("resync", [0, 2])
def test_ssbd_tail_draft_model(pair: dict[str, Path], resync: int) -> None:
    """SSBD's previous output under the biased rule, and past it the draft model's tokens under exact greedy
    acceptance (tests.claims checks both rules, and that the model's tokens come only after the previous
    output's draft); the outputs are plain SSBD's (the tail is exact) with fewer one-token passes. With
    --resync, the draft model is asked after its drafts, with a row in hand (copied: see _continue)."""
    engine = Engine(
        EngineSettings(model=pair["target"], threads=1, draft=DraftSettings(model=pair["first1"]))
    )
    try:
        plain = [engine.decoder(Method("ssbd", beta=0.2, resync=resync)).decode(s) for s in make_streams()]
        method = Method("ssbd", beta=0.2, resync=resync, tail_model=True, draft_max=4)
        with tr.recording(keep_rows=True) as recorded:
            tailed = [engine.decoder(method).decode(s) for s in make_streams()]
    finally:
        engine.close()
    check_decisions(recorded, tailed)
    rules = {(d.drafter, d.rule) for d in recorded.of_kind(tr.VERIFY)}
    assert ("model", "exact") in rules and ("previous", "biased") in rules
    for a, b in zip(plain, tailed, strict=True):
        assert [s.output_ids for s in a.steps] == [s.output_ids for s in b.steps]
    steps = [s for r in tailed for s in r.steps]
    assert sum(s.drafted_by.count("model") for s in steps) > 0
    assert sum(s.decode_passes for s in steps) < sum(s.decode_passes for r in plain for s in r.steps)
    assert method.key == "ssbd-b0.2-tailmodel-max4" + (f"-resync{resync}" if resync else "")


def test_ssbd_tail_draft_model_under_parallel(
    pair: dict[str, Path], streams_file: Path, tmp_path: Path
) -> None:
    outputs = {}
    for parallel in ("1", "2"):
        out = tmp_path / f"p{parallel}"
        args = eval_args(
            pair["target"], streams_file, "--beta", "0.2", "--resync", "2", "--tail-draft", "model"
        )
        extra = [
            "--draft-model",
            str(pair["first1"]),
            "--threads",
            "1",
            "--parallel",
            parallel,
            "-o",
            str(out),
        ]
        result = runner.invoke(app, [*args, *extra])
        assert result.exit_code == 0, result.output
        outputs[parallel] = [
            (s["method"], s["stream"], s["step"], s["output_ids"])
            for s in map(json.loads, (out / "steps.jsonl").read_text().splitlines())
        ]
        run = json.loads((out / "run.json").read_text())
        assert run["methods"][1]["tail_model"] is True and run["methods"][1]["greedy_exact"] is True
    assert outputs["1"] == outputs["2"]


def test_spec_on_a_talk(pair: dict[str, Path]) -> None:
    """Long-form: the draft model's sequence starts each talk from the canonical state, and spec's talk
    outputs are RT's (exact greedy), with its drafts recorded across the windows of each update."""
    from simul.decoding.longform import WindowPolicy
    from tests.test_longform_decoding import SENTENCES, make_talk

    talk = make_talk("t0", SENTENCES)
    settings = EngineSettings(
        model=pair["target"],
        n_ctx=1024,
        threads=1,
        window=WindowPolicy(8, 1),
        draft=DraftSettings(pair["first1"]),
    )
    engine = Engine(settings)
    try:
        rt = engine.decoder(Method("rt")).decode(talk)
        with tr.recording() as recorded:
            spec = engine.decoder(Method("spec", draft_max=4)).decode(talk)
    finally:
        engine.close()
    assert [s.output for s in spec.steps] == [s.output for s in rt.steps]
    assert sum(len(s.model_drafts) for s in spec.steps) > 0
    assert {(d.drafter, d.rule) for d in recorded.of_kind(tr.VERIFY)} == {("model", "exact")}


# -- calibrated draft costs (simul bench) -----------------------------------------------------------------


def test_the_caption_takes_c_l_from_the_calibration_when_there_is_one() -> None:
    counts = CAPTION_COUNTS
    costs = PassCosts(2, 4.0, 1.0, 16, None, draft_one_token_ms=1.2)
    (line,) = draft_model_lines([{"label": "SPEC", "counts": counts, "draft_max": 3}], costs)
    alpha = 5 / 7
    bound = (1 - alpha**4) / ((1 - alpha) * (3 * 0.3 + 1))
    assert line.endswith(f"Leviathan bound {bound:.2f}x (alpha 0.71, K 3, c_L 0.30 calibrated)"), line
    (line,) = draft_model_lines(
        [{"label": "SPEC", "counts": counts, "draft_max": 3}], replace(costs, draft_one_token_ms=None)
    )
    assert line.endswith("c_L 0.25 from the run)"), line


def test_d_comes_from_the_calibrated_draft_pass_and_the_run_counts() -> None:
    counts = {"draft_passes": 20, "draft_seconds": 0.02, "model_drafted": 8}
    costs = PassCosts(2, 4.0, 1.0, 16, None, draft_one_token_ms=2.0)
    # c_L = 2 / 4 = 0.5; d = c_L x draft passes / drafted tokens = 0.5 x 20 / 8
    assert draft_cost(counts, costs) == pytest.approx(1.25)
    # as the run measured it: 0.02 s / 8 tokens = 2.5 ms per token over a 4 ms one-token pass
    assert run_draft_cost(counts, costs) == pytest.approx(0.625)
    assert draft_cost(counts, replace(costs, draft_one_token_ms=None)) == pytest.approx(0.625)
    assert draft_cost({"draft_passes": 0, "model_drafted": 0}, costs) == 0.0
    assert draft_cost(counts, None) == 0.0 and run_draft_cost(counts, None) is None


def test_the_calibrated_draft_pass_round_trips_and_damage_is_refused() -> None:
    costs = PassCosts(2, 4.0, 1.0, 16, None, ((16, 16.0),), draft_one_token_ms=1.5)
    data = costs.to_json()
    assert data["draft_one_token_ms"] == 1.5 and data["c_draft"] == 0.375
    assert PassCosts.from_json(data) == costs
    assert "draft_one_token_ms" not in replace(costs, draft_one_token_ms=None).to_json()
    assert PassCosts.from_json({**data, "draft_one_token_ms": -1.0}) is None
    assert PassCosts.from_json({**data, "draft_one_token_ms": "x"}) is None


def test_bench_calibrates_the_draft_model_and_bounds_spec_with_it(
    pair: dict[str, Path], streams_file: Path
) -> None:
    result = runner.invoke(
        app,
        [
            "bench",
            "--model",
            str(pair["target"]),
            "--streams",
            str(streams_file),
            "--threads",
            "2",
            "--no-cd",
            "--method",
            "spec --draft-max 3",
            "--method",
            "ssbd --beta 0.2 --tail-draft model --draft-max 3",
            "--draft-model",
            str(pair["first1"]),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    costs = PassCosts.from_json(doc["pass_costs"])
    assert costs is not None and costs.draft_one_token_ms is not None and costs.c_draft is not None
    rows = {m["key"].split("-")[0] + ("-tail" if "tailmodel" in m["key"] else ""): m for m in doc["methods"]}
    spec, tail = rows["spec"], rows["ssbd-tail"]
    assert "calibrated)" in " ".join(result.stderr.split())
    # spec drafts only with the model; SSBD's previous output drafts for free beside its model tail
    assert spec["d_share"] == 1.0 and 0.0 < tail["d_share"] < 1.0
    for row in (spec, tail):
        assert row["d_draft"] is not None and row["d_draft_run"] is not None
        ad, ao = row["metrics"]["ad"] / 100, row["metrics"]["ao"] / 100
        expected = modelled_speedup_with_draft(ad, ao, row["c_run"], row["d_draft"] * row["d_share"])
        assert row["bound"] == pytest.approx(expected, rel=5e-3, abs=5e-3)

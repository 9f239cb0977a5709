"""Shards and merge on the tiny model: `--shard K/N` runs merged by `simul merge` equal one process."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simul.cli import app
from simul.cli.scaleout import optional_ray_value
from simul.common.errors import SimulError, UsageError
from simul.metrics.registry import METRICS
from simul.runs.shard import Shard, parse_shard, plan, select, shard_of
from simul.streams.format import write_streams
from tests.helpers import SENTENCES, eval_args, isa_flag_this_cpu_lacks, lag_stream

runner = CliRunner()
QUALITY = [name for name, info in METRICS.items() if not info.timing]
N_STREAMS = 6


def quality(run_dir: Path) -> dict[str, dict[str, Any]]:
    run = json.loads((run_dir / "run.json").read_text())
    return {m["key"]: {k: m["metrics"].get(k) for k in QUALITY} for m in run["methods"]}


def steps_without_timing(run_dir: Path) -> list[dict[str, Any]]:
    """steps.jsonl with the wall-clock fields (t_*) left out: everything else must match exactly."""
    rows = []
    for line in (run_dir / "steps.jsonl").read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        rows.append({k: v for k, v in obj.items() if not k.startswith("t_")})
    return rows


@pytest.fixture(scope="module")
def streams_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("streams") / "streams.jsonl"
    write_streams(path, [lag_stream(f"s{i}", *SENTENCES[i % len(SENTENCES)]) for i in range(N_STREAMS)])
    return path


@pytest.fixture(scope="module")
def runs(tiny_model: Path, streams_file: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One single-process run and the same run as three shards, merged."""
    root = tmp_path_factory.mktemp("runs")
    extra = ("--beta", "0.2", "--threads", "2", "--n-ctx", "1024")
    single = root / "single"
    result = runner.invoke(app, eval_args(tiny_model, streams_file, *extra, "--out", str(single)))
    assert result.exit_code == 0, result.output
    out = {"single": single}
    for k in (1, 2, 3):
        shard = root / f"shard{k}"
        result = runner.invoke(
            app, eval_args(tiny_model, streams_file, *extra, "--shard", f"{k}/3", "--out", str(shard))
        )
        assert result.exit_code == 0, result.output
        out[f"shard{k}"] = shard
    merged = root / "merged"
    result = runner.invoke(
        app, ["merge", str(merged), *(str(out[f"shard{k}"]) for k in (3, 1, 2)), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    out["merged"] = merged
    return out


def test_shard_assignment_is_by_id_and_covers_every_stream() -> None:
    ids = [f"flores200-devtest-{i}" for i in range(200)]
    streams = [lag_stream(i, "a b c d", "x") for i in ids]
    for n in (1, 2, 4, 7):
        owners = [shard_of(i, n) for i in ids]
        assert all(1 <= k <= n for k in owners)
        picked = [select(streams, Shard(k, n)) for k in range(1, n + 1)]
        positions = sorted(p for sel in picked for p in sel.positions)
        assert positions == list(range(len(ids)))  # disjoint and complete
        assert [s.id for s in picked[0].streams] == [ids[p] for p in picked[0].positions]
    # the owner depends on the id only, not on the order or the other streams
    assert select(list(reversed(streams)), Shard(2, 4)).streams[::-1] == select(streams, Shard(2, 4)).streams
    assert shard_of("flores200-devtest-1", 4) == shard_of("flores200-devtest-1", 4)
    assert len(plan(streams[:1], 4)) == 1


@pytest.mark.parametrize("text", ["0/4", "5/4", "1-4", "a/b", "", "2/0"])
def test_bad_shard_specs_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse_shard(text)


def test_bad_shard_option_exits_2(tiny_model: Path, streams_file: Path) -> None:
    result = runner.invoke(app, eval_args(tiny_model, streams_file, "--shard", "3/2"))
    assert result.exit_code == 2
    assert "--shard 3/2" in result.output
    result = runner.invoke(app, eval_args(tiny_model, streams_file, "--shard", "1/2", "--ray", "local"))
    assert result.exit_code == 2
    assert "--shard and --ray" in result.output


def test_bare_ray_means_a_local_instance() -> None:
    assert optional_ray_value(["eval", "--ray"]) == ["eval", "--ray", "local"]
    assert optional_ray_value(["sweep", "--ray", "--quiet"]) == ["sweep", "--ray", "local", "--quiet"]
    assert optional_ray_value(["eval", "--ray", "auto"]) == ["eval", "--ray", "auto"]
    assert optional_ray_value(["show", "--ray"]) == ["show", "--ray"]


def test_shard_run_records_its_share(runs: dict[str, Path]) -> None:
    seen: list[int] = []
    for k in (1, 2, 3):
        run = json.loads((runs[f"shard{k}"] / "run.json").read_text())
        shard = run["config"]["shard"]
        assert (shard["index"], shard["count"], shard["streams_total"]) == (k, 3, N_STREAMS)
        assert run["config"]["streams"]["count"] == len(shard["positions"])
        assert run["status"] == "complete"
        assert run["comet"]["available"] is False and "simul merge" in run["comet"]["reason"]
        ids = [json.loads(line)["id"] for line in (runs[f"shard{k}"] / "streams.jsonl").open()]
        assert all(shard_of(i, 3) == k for i in ids)
        seen += shard["positions"]
    assert sorted(seen) == list(range(N_STREAMS))


def test_merged_run_equals_single_process_run(runs: dict[str, Path]) -> None:
    single, merged = runs["single"], runs["merged"]
    assert quality(merged) == quality(single)
    for name in ("streams.jsonl", "per_stream.jsonl"):
        assert (merged / name).read_bytes() == (single / name).read_bytes(), name
    assert steps_without_timing(merged) == steps_without_timing(single)
    a = json.loads((single / "run.json").read_text())
    b = json.loads((merged / "run.json").read_text())
    assert a["signatures"] == b["signatures"]
    assert b["config"]["streams"]["evaluated_sha256"] == a["config"]["streams"]["evaluated_sha256"]
    assert "shard" not in b["config"] and b["config"]["streams"]["count"] == N_STREAMS
    assert b["status"] == "complete" and b["streams_done"] == N_STREAMS
    # per-shard machine and timing kept; the merged speed comes from all the steps
    assert [s["index"] for s in b["shards"]] == [1, 2, 3]
    assert sum(s["streams"] for s in b["shards"]) == N_STREAMS
    for s in b["shards"]:
        assert s["environment"]["cpu"] and s["timing"]["rt"]["tps"] > 0
    gen = sum(s["timing"]["rt"]["gen_seconds"] for s in b["shards"])
    rt = next(m for m in b["methods"] if m["key"] == "rt")
    assert rt["counts"]["gen_seconds"] == pytest.approx(gen, abs=1e-3)
    # the merged TPS comes from the merged steps' own seconds (timings.jsonl, 6 decimals a step), not from the
    # shards' gen_seconds (4 decimals each: on the tiny model's ~0.1 s that rounding alone moves TPS by 0.1 %)
    step_gen = sum(
        json.loads(line)["t_gen"]
        for line in (merged / "timings.jsonl").read_text(encoding="utf-8").splitlines()
        if json.loads(line)["method"] == "rt"
    )
    assert rt["metrics"]["tps"] == pytest.approx(rt["counts"]["output_tokens"] / step_gen, abs=0.01)
    diff = runner.invoke(app, ["diff", str(single), str(merged), "--json"])
    assert diff.exit_code == 0, diff.output


def test_merged_run_reads_like_any_run(runs: dict[str, Path]) -> None:
    scored = runner.invoke(app, ["score", str(runs["merged"]), "--json", "--quiet"])
    assert scored.exit_code == 0, scored.output
    rescored = {
        m["key"]: {k: m["metrics"].get(k) for k in QUALITY} for m in json.loads(scored.stdout)["methods"]
    }
    assert rescored == quality(runs["single"])
    shown = runner.invoke(app, ["show", str(runs["merged"]), "--stream", "s3"])
    assert shown.exit_code == 0, shown.output


def test_merge_computes_comet_once_over_all_streams(runs: dict[str, Path], tiny_comet: Path) -> None:
    merged = runs["merged"].parent / "merged-comet"
    result = runner.invoke(
        app,
        [
            "merge",
            str(merged),
            *(str(runs[f"shard{k}"]) for k in (1, 2, 3)),
            "--comet-model",
            str(tiny_comet),
            "--quiet",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    single = runner.invoke(
        app, ["score", str(runs["single"]), "--comet-model", str(tiny_comet), "--json", "--quiet"]
    )
    assert single.exit_code == 0, single.output
    got = {m["key"]: m["metrics"]["comet"] for m in json.loads(result.stdout)["methods"]}
    want = {m["key"]: m["metrics"]["comet"] for m in json.loads(single.stdout)["methods"]}
    assert got == want and all(v is not None for v in got.values())


def edited_copy(src: Path, dst: Path, edit: Any) -> Path:
    shutil.copytree(src, dst)
    run = json.loads((dst / "run.json").read_text())
    edit(run)
    (dst / "run.json").write_text(json.dumps(run))
    return dst


def refusal(out: Path, *dirs: Path) -> str:
    result = runner.invoke(app, ["merge", str(out), *(str(d) for d in dirs), "--quiet"])
    assert result.exit_code == 2, result.output
    assert "cannot merge" in result.output
    assert not (out / "run.json").exists()
    return " ".join(result.output.split())


def test_merge_refuses_missing_overlapping_and_foreign_shards(runs: dict[str, Path], tmp_path: Path) -> None:
    s1, s2, s3 = runs["shard1"], runs["shard2"], runs["shard3"]
    out = tmp_path / "out"
    text = refusal(out, s1, s3)
    assert "missing shards: 2/3" in text and "streams are in no shard" in text
    text = refusal(out, s1, s2, s3, s2)
    assert "shard 2/3 is given twice" in text
    text = refusal(out, s1, s2, runs["single"])
    assert "is not a shard run" in text
    text = refusal(out, s1, s2, tmp_path / "nowhere")
    assert "does not exist" in text


def test_merge_refuses_shards_that_do_not_belong_together(runs: dict[str, Path], tmp_path: Path) -> None:
    s1, s2, s3 = runs["shard1"], runs["shard2"], runs["shard3"]
    out = tmp_path / "out"

    def set_config(key: str, value: Any) -> Any:
        return lambda run: run["config"].__setitem__(key, value)

    other_ctx = edited_copy(s3, tmp_path / "ctx", set_config("n_ctx", 512))
    assert "different config.n_ctx: 1024" in refusal(out, s1, s2, other_ctx)
    other_model = edited_copy(s3, tmp_path / "model", set_config("model_sha256", "f" * 64))
    assert "different models" in refusal(out, s1, s2, other_model)
    other_file = edited_copy(
        s3, tmp_path / "file", lambda run: run["config"]["streams"].__setitem__("sha256", "0" * 64)
    )
    assert "different stream files" in refusal(out, s1, s2, other_file)
    other_sig = edited_copy(s3, tmp_path / "sig", lambda run: run["signatures"].__setitem__("chrf", "x"))
    assert "different chrf signature" in refusal(out, s1, s2, other_sig)
    other_llama = edited_copy(
        s3, tmp_path / "llama", lambda run: run["environment"].__setitem__("llama_cpp_python", "0.0.1")
    )
    assert "different environment.llama_cpp_python" in refusal(out, s1, s2, other_llama)

    # in fast mode the thread count and the CPU's instruction sets change llama.cpp's sums: a near-tie can
    # flip an output; in exact mode the thread count does not (tests/test_exact.py): shards may differ in it
    def fast(run: dict[str, Any]) -> None:
        run["config"]["exact"] = False

    fast_dirs = [edited_copy(s, tmp_path / f"fast{k}", fast) for k, s in enumerate((s1, s2, s3))]
    other_threads = edited_copy(fast_dirs[2], tmp_path / "threads", set_config("threads", 1))
    text = refusal(out, fast_dirs[0], fast_dirs[1], other_threads)
    assert "different config.threads: 2 in" in text and "1 in" in text and "same --threads" in text
    exact_threads = edited_copy(s3, tmp_path / "exact-threads", set_config("threads", 1))
    merged = runner.invoke(app, ["merge", str(tmp_path / "merged"), str(s1), str(s2), str(exact_threads)])
    assert merged.exit_code == 0, merged.output
    own_isa = json.loads((s3 / "run.json").read_text())["environment"]["cpu_isa"]
    flag = isa_flag_this_cpu_lacks()
    assert isinstance(own_isa, list)  # recorded by this simul
    other_isa = edited_copy(
        s3, tmp_path / "isa", lambda run: run["environment"].__setitem__("cpu_isa", [*own_isa, flag])
    )
    text = refusal(out, s1, s2, other_isa)
    assert "different environment.cpu_isa: none of those in" in text and f"+{flag} in" in text
    # a shard written before simul recorded the instruction sets is not refused for it
    unrecorded = edited_copy(s3, tmp_path / "unrecorded", lambda run: run["environment"].pop("cpu_isa"))
    assert (
        runner.invoke(app, ["merge", str(tmp_path / "m"), str(s1), str(s2), str(unrecorded), "-q"]).exit_code
        == 0
    )
    other_cut = edited_copy(s3, tmp_path / "cut", lambda run: run["config"]["shard"].__setitem__("count", 4))
    assert "different numbers of shards" in refusal(out, s1, s2, other_cut)


def test_merge_refuses_an_unfinished_shard(runs: dict[str, Path], tmp_path: Path) -> None:
    unfinished = edited_copy(
        runs["shard2"], tmp_path / "s2", lambda run: run.__setitem__("status", "running")
    )
    text = refusal(tmp_path / "out", runs["shard1"], unfinished, runs["shard3"])
    assert "shard 2/3) is not complete (status running" in text and "--resume" in text
    # a shard whose steps were cut short (a crash) although run.json says complete
    cut = tmp_path / "cut"
    shutil.copytree(runs["shard3"], cut)
    lines = (cut / "steps.jsonl").read_text().splitlines(keepends=True)
    (cut / "steps.jsonl").write_text("".join(lines[:-1]))
    assert "steps.jsonl" in refusal(tmp_path / "out", runs["shard1"], runs["shard2"], cut)


def test_merge_keeps_an_existing_run_unless_overwrite(runs: dict[str, Path]) -> None:
    shards = [str(runs[f"shard{k}"]) for k in (1, 2, 3)]
    again = runner.invoke(app, ["merge", str(runs["merged"]), *shards, "--quiet"])
    assert again.exit_code == 1 and "--overwrite" in again.output
    into_shard = runner.invoke(app, ["merge", shards[0], *shards, "--quiet"])
    assert into_shard.exit_code == 2 and "into a shard directory" in into_shard.output


def test_resuming_a_shard_with_another_shard_is_refused(
    tiny_model: Path, streams_file: Path, runs: dict[str, Path], tmp_path: Path
) -> None:
    partial = edited_copy(runs["shard1"], tmp_path / "s1", lambda run: run.__setitem__("status", "running"))
    extra = ("--beta", "0.2", "--threads", "2", "--n-ctx", "1024", "--out", str(partial), "--resume")
    result = runner.invoke(app, eval_args(tiny_model, streams_file, *extra, "--shard", "2/3"))
    assert result.exit_code == 2 and "shard differs" in result.output


def test_sweep_shards_merge_into_a_sweep(tiny_model: Path, streams_file: Path, tmp_path: Path) -> None:
    args = ["sweep", "--model", str(tiny_model), "--streams", str(streams_file), "--comet-model", "none"]
    args += ["--beta", "0", "--mask-k", "0", "--no-cd", "--limit", "3", "--threads", "2", "--n-ctx", "1024"]
    single = runner.invoke(app, [*args, "--out", str(tmp_path / "single"), "--quiet"])
    assert single.exit_code == 0, single.output
    shards = []
    for k in (1, 2):
        shard = tmp_path / f"shard{k}"
        result = runner.invoke(app, [*args, "--shard", f"{k}/2", "--out", str(shard)])
        assert result.exit_code == 0, result.output
        assert "simul merge" in result.output and not (shard / "sweep-beta.png").exists()
        shards.append(str(shard))
    merged = runner.invoke(app, ["merge", str(tmp_path / "merged"), *shards, "--json"])
    assert merged.exit_code == 0, merged.output
    assert "Table 3" in merged.output and (tmp_path / "merged" / "sweep-beta.png").exists()
    assert [r["label"] for r in json.loads(merged.stdout)["table3"]] == ["RT", "beta 0"]
    assert quality(tmp_path / "merged") == quality(tmp_path / "single")


def test_ray_worker_refuses_an_out_it_cannot_see(tmp_path: Path) -> None:
    """On a cluster without a shared file system the worker says so instead of writing elsewhere."""
    from simul.request.methods import Method
    from simul.runs.evaluation import EvalRequest
    from simul.runs.ray_runner import RayOptions, ShardWorker, _cause

    request = EvalRequest(streams_path=tmp_path / "x.jsonl", methods=[Method("rt")])
    with pytest.raises(SimulError, match="shares"):
        ShardWorker(request, str(tmp_path))
    raised = (
        "ActorDiedError: died\n  File x\nsimul.common.errors.SimulError: the Ray worker on n1 cannot see /o"
    )
    assert _cause(RuntimeError(raised)) == "the Ray worker on n1 cannot see /o"
    assert _cause(RuntimeError("worker killed\nmore")) == "worker killed"
    assert RayOptions(workers=3).shard_count == 6
    for bad in ({"workers": 0}, {"shards": 0}, {"num_cpus": 0}, {"retries": -1}):
        with pytest.raises(UsageError):
            RayOptions(**bad)  # type: ignore[arg-type]

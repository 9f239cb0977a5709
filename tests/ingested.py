"""Run directories built by `simul ingest` from the hand-written fixtures in tests/data/ingest (no model)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from simul.cli import app

DATA = Path(__file__).resolve().parent / "data" / "ingest"

# (format, outputs file, streams file)
FIXTURES = {
    "ssbd-ref": ("ssbd_ref_out.jsonl", "streams.jsonl"),
    "simuleval": ("simuleval_instances.log", "streams.jsonl"),
    "simul": ("simul_outputs.jsonl", "streams.jsonl"),
    "simulstream": ("simulstream_metrics.jsonl", "timed_streams.jsonl"),
}

ZH_STREAMS = [
    {
        "id": "zh1",
        "source": ["Brisbane Open starts", "Brisbane Open starts on Monday."],
        "reference": "布里斯班 Open 周一开始。",
        "outputs": ["布里斯班 Open", "布里斯班 Open 将于周一开始。"],
    },
    {
        "id": "zh2",
        "source": ["The cat sat", "The cat sat on the mat."],
        "reference": "猫坐在垫子上。",
        "outputs": ["猫坐着", "猫坐在垫子上。"],
    },
]


def write_zh_fixture(folder: Path) -> tuple[Path, Path]:
    """An en->zh stream file and simul-format outputs whose texts keep spaces inside Chinese."""
    streams = folder / "zh_streams.jsonl"
    outputs = folder / "zh_outputs.jsonl"
    stream_lines = []
    output_lines = []
    for item in ZH_STREAMS:
        sources = item["source"]
        obj = {
            "format": "simul-stream",
            "version": 1,
            "id": item["id"],
            "src": "en",
            "tgt": "zh",
            "steps": [{"source": s, "final": i == len(sources) - 1} for i, s in enumerate(sources)],
            "reference": item["reference"],
            "provenance": {"dataset": "test"},
        }
        stream_lines.append(json.dumps(obj, ensure_ascii=False))
        output_lines.append(
            json.dumps(
                {**obj, "outputs": [{"output": o, "seconds": 0.1} for o in item["outputs"]]},
                ensure_ascii=False,
            )
        )
    streams.write_text("\n".join(stream_lines) + "\n", encoding="utf-8")
    outputs.write_text("\n".join(output_lines) + "\n", encoding="utf-8")
    return outputs, streams


def ingest_args(fmt: str, outputs: Path, streams: Path, out: Path, *extra: str) -> list[str]:
    """`simul ingest` arguments without COMET (the commands that are expected to refuse use them too)."""
    return [
        "ingest",
        str(outputs),
        "--format",
        fmt,
        "--streams",
        str(streams),
        "--out",
        str(out),
        "--comet-model",
        "none",
        *extra,
    ]


def ingest(fmt: str, outputs: Path, streams: Path, out: Path, *extra: str) -> Path:
    result = CliRunner().invoke(app, ingest_args(fmt, outputs, streams, out, "--quiet", *extra))
    assert result.exit_code == 0, result.output
    return out


def ingest_fixture(fmt: str, out: Path, *extra: str) -> Path:
    outputs, streams = FIXTURES[fmt]
    return ingest(fmt, DATA / outputs, DATA / streams, out, *extra)


def metrics(run_dir: Path) -> dict[str, float | None]:
    run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    return dict(run["methods"][-1]["metrics"])

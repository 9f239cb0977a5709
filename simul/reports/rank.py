"""`simul rank`: systems ranked as the IWSLT 2026 simultaneous track ranks them.

The track (its page, as changed on 2026-03-25) ranks systems by XCOMET-XL within latency bands, a system's
band coming from its computation-unaware LongYAAL on the dev set (Low up to 2 s, High up to 4 s:
simul.metrics.bands), and reports StreamLAAL and computation-aware latency beside it, the latter with the
hardware it was measured on. simul ranks every method of every run given, simul's own and ingested systems
(``simul ingest``) alike:

1. *Groups.* Systems are ranked against each other only when their figures were computed on the same streams
   and references (run.json's ``config.streams.evaluated_sha256``, what `simul diff` compares), which also
   fixes the language pair and whether they are talks (long-form) or sentences. Each group is one table.
2. *Bands.* Each system's band from LongYAAL (sentence-level runs: YAAL); systems without one (untimed text
   streams) are listed apart.
3. *Metric.* ``auto`` (the default) takes XCOMET where every system of the group has it from the same model
   (the same signature parameters), else COMET likewise, else chrF; or the metric asked for. A system that
   lacks it is listed as unranked, with the reason.
4. *Ranking.* Within a band, by the metric, best first.
5. *Neighbours.* Each pair of neighbours in a band gets sacrebleu's paired bootstrap
   (simul.reports.significance): corpus chrF and BLEU recomputed from sacrebleu's statistics of the resampled
   segments, COMET and XCOMET the mean of the resampled segment scores; each system's mean ± 95 % interval,
   the interval of the difference and p. Segments are the re-segmented reference segments for talks and the
   streams for sentences.

Beside each system: StreamLAAL (long-form ``long_laal``; sentence-level: LAAL), computation-aware LongYAAL
(``ca_long_yaal``; sentence-level ``yaal_ca``) and the hardware: the devices a simul run decoded on, or what
``simul ingest --hardware`` recorded for another system's logs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError, UsageError
from simul.common.languages import get_language
from simul.common.safe_text import excerpt
from simul.metrics.bands import BAND_TITLES, MethodBand, method_band
from simul.metrics.registry import METRICS, names
from simul.metrics.signatures import Signature
from simul.reports.significance import (
    RANK_SEED,
    RankBootstrap,
    SystemScores,
    corpus_scores,
    rank_bootstrap,
    segment_mean_scores,
)
from simul.runs.directory import STATUS_COMPLETE, load_run, load_run_json, read_per_stream, refuse_if_written

QUALITY = names(lambda m: m.quality)  # what a system can be ranked by
METRIC_CHOICES = ("auto", *QUALITY)
# the default's order of preference: the first that every system has from one model, else the last
AUTO = tuple(sorted(names(lambda m: m.rank_auto > 0), key=lambda name: METRICS[name].rank_auto))
# system score = mean of segment scores (the metric records say which)
SEGMENT_MEANS = tuple(name for name, info in METRICS.items() if info.segment_mean)
BAND_ORDER = ("low", "high", "over", None)


@dataclass
class Segments:
    """A system's scored segments, by key (talk and segment index, or stream id), in the run's order."""

    keys: list[tuple[str, int]]
    hypotheses: list[str]
    references: list[tuple[str, ...]]
    learned: dict[str, list[float | None]]  # comet / xcomet per segment


@dataclass
class System:
    run: Path
    key: str  # method key
    name: str
    pair: str
    form: str  # talks or sentences
    streams_sha: str
    tgt: str
    metrics: dict[str, Any]
    signatures: dict[str, Any]
    band: MethodBand
    stream_laal: float | None
    ca_yaal: float | None
    latency_unit: str
    hardware: str
    segments: Segments | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "run": str(self.run),
            "method": self.key,
            "band": self.band.to_json(),
            "metrics": {k: self.metrics.get(k) for k in QUALITY},
            "stream_laal": self.stream_laal,
            "ca_long_yaal": self.ca_yaal,
            "latency_unit": self.latency_unit,
            "hardware": self.hardware,
        }


@dataclass
class Ranked:
    band: str | None
    systems: list[System]
    neighbours: list[RankBootstrap | None] = field(default_factory=list)

    def to_json(self, metric: str) -> dict[str, Any]:
        return {
            "band": self.band,
            "title": BAND_TITLES[self.band],
            "systems": [
                {"rank": i + 1, "score": s.metrics.get(metric), **s.to_json()}
                for i, s in enumerate(self.systems)
            ],
            "neighbours": [
                {
                    "better": a.name,
                    "worse": b.name,
                    **(n.to_json() if n is not None else {"bootstrap": None}),
                }
                for (a, b), n in zip(itertools.pairwise(self.systems), self.neighbours, strict=True)
            ],
        }


@dataclass
class Group:
    pair: str
    form: str
    streams_sha: str
    metric: str
    metric_why: str
    signature: str | None
    bands: list[Ranked]
    unranked: list[tuple[System, str]]

    def to_json(self) -> dict[str, Any]:
        return {
            "pair": self.pair,
            "form": self.form,
            "streams_sha256": self.streams_sha,
            "metric": self.metric,
            "metric_why": self.metric_why,
            "signature": self.signature,
            "bands": [b.to_json(self.metric) for b in self.bands],
            "unranked": [{**s.to_json(), "why": why} for s, why in self.unranked],
        }


@dataclass
class Ranking:
    groups: list[Group]
    samples: int
    seed: int = RANK_SEED

    def to_json(self) -> dict[str, Any]:
        return {
            "bootstrap": {
                "samples": self.samples,
                "seed": self.seed,
                "test": "sacrebleu paired bootstrap (chrF, BLEU) / resampled segments (COMET, XCOMET)",
            },
            "groups": [g.to_json() for g in self.groups],
        }


def hardware_of(run: Mapping[str, Any]) -> str:
    """What a run's figures were measured on: an ingested system's ``--hardware`` (or that it was not given),
    or the devices a simul run decoded on (GPUs when layers were offloaded, else the CPU and threads)."""
    config = run.get("config", {})
    ingest = config.get("ingest")
    if isinstance(ingest, dict):
        given = ingest.get("hardware")
        return str(given) if given else "not given (simul ingest --hardware)"
    env = run.get("environment", {})
    hardware = env.get("hardware") if isinstance(env.get("hardware"), dict) else {}
    # a hand-edited or foreign run.json may hold anything here: only a list of device objects is read
    listed = hardware.get("devices")
    devices = [d for d in listed if isinstance(d, dict)] if isinstance(listed, list) else []
    gpus = [str(d.get("description") or d.get("name")) for d in devices if d.get("type") not in (None, "CPU")]
    if gpus and hardware.get("offloaded_layers"):
        return ", ".join(gpus)
    cpu = env.get("cpu") or next((d.get("description") for d in devices if d.get("type") == "CPU"), None)
    threads = config.get("threads")
    plural = "" if threads == 1 else "s"
    return f"{cpu or 'CPU'}" + (f", {threads} thread{plural}" if threads else "")


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _finite(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """A method's figures with NaN and infinite ones as missing (None): run.json may hold them (it is read
    with its NaN and Infinity), but such a figure places a system in no band and in no order, and the
    ranking's JSON could not carry it."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in metrics.items()}


def systems_of(run_dir: Path) -> list[System]:
    """Every scored method of a complete run as a system to rank."""
    if run_dir.is_dir():
        refuse_if_written(run_dir)
    run = load_run_json(run_dir)
    if run.get("status") != STATUS_COMPLETE or "methods" not in run:
        raise SimulError(
            f"{run_dir} is not a complete, scored run (status: {excerpt(str(run.get('status')))}); finish it "
            f"first (`simul score {run_dir}` finishes a run whose scoring failed)"
        )
    config = run["config"]
    streams = config["streams"]
    tgt = streams.get("tgt")
    try:
        known = isinstance(tgt, str) and bool(get_language(tgt))
    except SimulError:
        known = False
    if not isinstance(tgt, str) or not known:
        raise SimulError(
            f"{run_dir}: run.json's config.streams.tgt is {excerpt(repr(tgt))}, not a target language code; "
            "the figures cannot be scored without it: restore run.json or decode the run again"
        )
    sha = streams.get("evaluated_sha256") or streams.get("sha256") or "?"
    ingest = config.get("ingest")
    out = []
    for method in run["methods"]:
        counts = method.get("counts") or {}
        metrics = _finite(method.get("metrics") or {})
        longform = isinstance(counts.get("longform"), dict)
        label = str(method.get("label", method["key"]))
        name = label if isinstance(ingest, dict) else f"{run_dir.name}/{label}"
        out.append(
            System(
                run=run_dir,
                key=str(method["key"]),
                name=name,
                pair=f"{streams.get('src')}-{tgt}",
                form="talks" if longform else "sentences",
                streams_sha=str(sha),
                tgt=tgt,
                metrics=metrics,
                signatures=run.get("signatures") or {},
                band=method_band({**method, "metrics": metrics}),
                stream_laal=_float(metrics.get("long_laal" if longform else "latency")),
                ca_yaal=_float(metrics.get(METRICS["long_yaal" if longform else "yaal"].ca or "")),
                latency_unit=str(
                    (counts.get("longform") or {}).get("latency_unit")
                    if longform
                    else counts.get("latency_unit", "?")
                ),
                hardware=hardware_of(run),
            )
        )
    return out


def _segments(system: System, cache: dict[Path, Any]) -> Segments:
    """The segments a system was scored on: re-segmented reference segments (talks, from per_stream.jsonl)
    or streams (sentences: final outputs from steps.jsonl, COMET from per_stream.jsonl)."""
    if system.run not in cache:
        cache[system.run] = (read_per_stream(system.run), None)
    rows, loaded = cache[system.run]
    keys: list[tuple[str, int]] = []
    hyps: list[str] = []
    refs: list[tuple[str, ...]] = []
    learned: dict[str, list[float | None]] = {name: [] for name in SEGMENT_MEANS}
    if system.form == "talks":
        talk_rows = [row for (m, _), row in rows.items() if m == system.key]
        for row in talk_rows:
            for seg in row.get("segments") or []:
                keys.append((str(row["stream"]), int(seg["index"])))
                hyps.append(str(seg["hypothesis"]))
                refs.append(tuple(str(r) for r in seg["references"]))
                for name in SEGMENT_MEANS:
                    learned[name].append(_float(seg.get(name)))
        return Segments(keys, hyps, refs, learned)
    if loaded is None:
        loaded = load_run(system.run)
        cache[system.run] = (rows, loaded)
    for result in loaded.results[system.key]:
        stream = loaded.streams[result.stream_id]
        if not stream.references:
            continue
        keys.append((result.stream_id, 0))
        hyps.append(result.final_output)
        refs.append(tuple(stream.references))
        row = rows.get((system.key, result.stream_id), {})
        for name in SEGMENT_MEANS:
            learned[name].append(_float(row.get(name)))
    return Segments(keys, hyps, refs, learned)


def signature_of(system: System, name: str) -> str | None:
    """The signature of a system's figure: a run of talks keeps its re-segmented scores' signatures as
    ``longform_NAME`` (simul.metrics.scoring), a sentence-level run as ``NAME``."""
    key = f"longform_{name}" if system.form == "talks" else name
    value = system.signatures.get(key)
    return str(value) if value else None


def _choose_metric(systems: Sequence[System], asked: str) -> tuple[str, str, str | None]:
    """The metric to rank a group by, why, and its signature."""

    def common(name: str) -> str | None:
        texts = [signature_of(s, name) for s in systems]
        if any(t is None for t in texts) or any(s.metrics.get(name) is None for s in systems):
            return None
        if len({Signature.parse(str(t)).parameter_text for t in texts}) != 1:
            return None
        return texts[0]

    if asked != "auto":
        return asked, f"--metric {asked}", common(asked) or signature_of(systems[0], asked)
    *preferred, last = AUTO
    for name in preferred:
        sig = common(name)
        if sig is not None:
            return name, f"every system has {METRICS[name].title} from the same model", sig
    tried = ", else ".join(METRICS[name].title for name in preferred)
    why = f"no learned metric from one model for every system ({tried}): {METRICS[last].title}"
    return last, why, common(last)


def _bootstrap(
    a: System, b: System, metric: str, samples: int, cache: dict[Path, Any]
) -> RankBootstrap | None:
    if samples <= 0:
        return None
    for system in (a, b):
        if system.segments is None:
            system.segments = _segments(system, cache)
    sa, sb = a.segments, b.segments
    assert sa is not None and sb is not None
    if sa.keys != sb.keys or not sa.keys:
        return None
    scores: tuple[SystemScores, SystemScores]
    if metric in SEGMENT_MEANS:
        va, vb = sa.learned[metric], sb.learned[metric]
        if any(v is None for v in va + vb):
            return None
        fa = [float(v) for v in va if v is not None]
        fb = [float(v) for v in vb if v is not None]
        scores = segment_mean_scores(fa), segment_mean_scores(fb)
    else:
        scores = (
            corpus_scores(metric, sa.hypotheses, sa.references, a.tgt),
            corpus_scores(metric, sb.hypotheses, sb.references, b.tgt),
        )
    return rank_bootstrap(*scores, samples)


def rank(run_dirs: Sequence[Path], metric: str = "auto", samples: int = 1000) -> Ranking:
    """Rank every method of ``run_dirs`` (the module's docstring)."""
    if metric not in METRIC_CHOICES:
        raise UsageError(f"--metric {excerpt(metric)}: choose one of {', '.join(METRIC_CHOICES)}")
    if not run_dirs:
        raise UsageError("give at least one run directory")
    seen: dict[Path, None] = {}
    for path in run_dirs:
        resolved = path.resolve()
        if resolved in seen:
            raise UsageError(f"{path} is given twice")
        seen[resolved] = None
    systems = [s for path in run_dirs for s in systems_of(path)]
    by_group: dict[str, list[System]] = {}
    for system in systems:
        by_group.setdefault(system.streams_sha, []).append(system)
    cache: dict[Path, Any] = {}
    groups = []
    for sha, members in by_group.items():
        name, why, sig = _choose_metric(members, metric)
        unranked = [(s, f"no {name} figure") for s in members if s.metrics.get(name) is None]
        rankable = [s for s in members if s.metrics.get(name) is not None]
        bands = []
        for band in BAND_ORDER:
            inside = [s for s in rankable if s.band.band == band]
            if not inside:
                continue
            inside.sort(key=lambda s: (-float(s.metrics[name]), s.name))
            ranked = Ranked(band, inside)
            ranked.neighbours = [
                _bootstrap(x, y, name, samples, cache) for x, y in itertools.pairwise(inside)
            ]
            bands.append(ranked)
        groups.append(Group(members[0].pair, members[0].form, sha, name, why, sig, bands, unranked))
    groups.sort(key=lambda g: (g.pair, g.form))
    return Ranking(groups, samples)

"""Compare two runs: every metric with its delta and direction, thresholds for CI, and paired statistics.

A change is a *regression* when a metric moves the wrong way by more than its threshold (``--max-drop`` for
metrics where higher is better, ``--max-increase`` where lower is better). For chrF, BLEU and COMET a paired
bootstrap over streams (Koehn, 2004, "Statistical Significance Tests for Machine Translation Evaluation")
tells whether the change is beyond noise: streams are resampled with replacement, both runs are scored on
each resample, and p is the share of resamples in which the difference does not have the observed sign.
A threshold crossed with p >= alpha is reported as *within noise*; it still counts as a regression (the
threshold decides), unless the caller allows noise (``simul diff --allow-noise``), which then lets it pass.
A speed figure (TPS, speedup, and their e2e forms) is judged by the 95 % intervals both runs carry
(run.json's ``speed_intervals``, simul.metrics.intervals): a crossing whose two intervals overlap is within
noise, since the spread each run shows covers the change.

Two runs are compared only when their numbers measure the same thing: the same streams and references, and
metric signatures with the same *parameters* (tokenizer, number of references, n-gram orders, COMET model,
NE unit: simul.metrics.signatures). Otherwise the comparison is refused (:class:`Incomparable`, exit 2).
Who computed a number is *provenance*: the library versions in the signatures and in run.json, COMET's batch
size, the CPU's instruction sets. A provenance difference is a note naming both sides, and a refusal only
with ``strict_versions`` (library versions and batch size; the CPU is always a note). A thresholded metric
that the base run has and the new run lacks (COMET when its model could not be loaded) is refused too,
unless ``allow_missing`` names it: a check that cannot run must not pass.

Each method's IWSLT 2026 latency band (simul.metrics.bands: Low up to 2 s, High up to 4 s of LongYAAL, YAAL
for sentences) is compared too: a method that leaves the base run's band is noted, and is a regression with
``keep_band`` (`simul diff --keep-band`), whichever way it moved, since a system is ranked within its band.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError, UsageError
from simul.common.safe_text import excerpt
from simul.metrics.bands import BAND_TITLES, method_band
from simul.metrics.intervals import read_interval
from simul.metrics.registry import METRICS, metric_info, names, needing
from simul.metrics.scoring import not_available
from simul.metrics.signatures import ProvenanceChange, compare_signatures, short
from simul.reports import stream_origin
from simul.reports.engine_notes import control_noise
from simul.reports.run_conditions import (
    hardware_difference,
    isa_change,
    version_changes,
    wait_policy_difference,
)
from simul.reports.significance import DiffBootstrap, corpus_scores, diff_bootstrap, segment_mean_scores
from simul.reports.timing_notes import TimingNotes
from simul.runs.directory import (
    STATUS_COMPLETE,
    LoadedRun,
    load_run,
    load_run_json,
    read_per_stream,
    refuse_if_written,
)
from simul.streams.format import Stream
from simul.streams.references import describe_references

# Defaults chosen to catch real quality or stability losses; wall-clock figures (tps, speedup, p50/p95) have
# no default because they differ between machines and loads: opt in with e.g. --max-drop speedup=0.05.
DEFAULT_MAX_DROP = {"comet": 0.005, "xcomet": 0.005, "chrf": 0.5, "bleu": 1.0}
DEFAULT_MAX_INCREASE = {"ne": 0.05, "ne_display": 0.05}
# corpus metrics resampled by streams, and every metric whose system score is a mean of segment scores
CORPUS_RESAMPLED = names(lambda m: m.corpus_resampled)
SEGMENT_MEANS = names(lambda m: m.segment_mean)
BOOTSTRAP_METRICS = (*CORPUS_RESAMPLED, *SEGMENT_MEANS)


@dataclass
class Side:
    path: Path
    run: dict[str, Any]
    loaded: LoadedRun | None  # None when only run.json is available
    per_stream: dict[tuple[str, str], dict[str, Any]]  # (method key, stream id) -> row


def load_side(path: Path) -> Side:
    directory = path if path.is_dir() else path.parent
    if directory.is_dir():
        refuse_if_written(directory)
    run = load_run_json(path)
    if run.get("status") != STATUS_COMPLETE:
        raise SimulError(f"{path} is not a complete run (status: {run.get('status')}); finish it first")
    if "methods" not in run:
        raise SimulError(f"{path} has no metrics; score it with `simul score {directory} --update`")
    loaded = None
    if (directory / "steps.jsonl").exists() and (directory / "streams.jsonl").exists():
        loaded = load_run(directory)
    return Side(path=path, run=run, loaded=loaded, per_stream=read_per_stream(directory))


def incompatibilities(
    base: Mapping[str, Any],
    new: Mapping[str, Any],
    streams: tuple[Mapping[str, Stream], Mapping[str, Stream]] | None = None,
) -> list[str]:
    """Why two runs cannot be compared honestly (different streams, references, or signature parameters).
    ``streams``: both runs' streams, when their directories have them, to say how the streams differ."""
    reasons = []
    b_streams, n_streams = base["config"]["streams"], new["config"]["streams"]
    if b_streams.get("evaluated_sha256") != n_streams.get("evaluated_sha256"):
        how = stream_origin.explain(*streams) if streams is not None else ""
        reasons.append(
            f"different streams ({b_streams.get('count')} from {Path(b_streams.get('path', '?')).name} vs "
            f"{n_streams.get('count')} from {Path(n_streams.get('path', '?')).name}"
            + (f": {how}" if how else "")
            + ")"
        )
    b_refs, n_refs = b_streams.get("references"), n_streams.get("references")
    if b_refs and n_refs and b_refs.get("sha256") != n_refs.get("sha256"):
        reasons.append(
            f"different reference sets ({describe_references(b_refs)} vs {describe_references(n_refs)}, "
            "or other reference texts)"
        )
    reasons += compare_signatures(base.get("signatures", {}), new.get("signatures", {}))[0]
    return reasons


def provenance_changes(base: Mapping[str, Any], new: Mapping[str, Any]) -> list[ProvenanceChange]:
    """Who computed the numbers, where it differs: the signatures' library versions and COMET batch size,
    the package versions run.json records, and the CPU's instruction sets."""
    changes = compare_signatures(base.get("signatures", {}), new.get("signatures", {}))[1]
    changes += version_changes(base, new)
    isa = isa_change(base, new)
    if isa is not None:
        changes.append(isa)
    return changes


def provenance_notes(changes: Sequence[ProvenanceChange], strict_versions: bool = False) -> list[str]:
    """The notes that name both sides of every provenance difference: what ``--strict-versions`` refuses
    (unless it was given: then they are reasons), simul's own version, the CPU."""
    notes = []
    versions = [c.describe() for c in changes if c.strict]
    if versions and not strict_versions:
        notes.append(
            "provenance differs (who computed the figures, not what they measure: compared anyway; "
            "--strict-versions refuses): " + "; ".join(versions)
        )
    for change in changes:
        if change.what == "simul":
            notes.append(f"made by another simul: {change.describe()}")
    for change in changes:
        if change.what == "CPU instruction sets":
            notes.append(
                f"decoded on CPUs with other instruction sets (base: {change.base}; new: {change.new}): "
                "llama.cpp runs other kernels there, and a near-tie can flip a greedy output"
            )
    return notes


def missing_metrics(
    pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
    thresholds: Mapping[str, float | None],
    allow: Iterable[str],
    new_run: Mapping[str, Any],
    notes: list[str],
) -> list[str]:
    """A reason for each thresholded metric that the base run has and the new run lacks (for some method
    pair), unless ``allow`` names it: its threshold cannot be checked, so the comparison cannot pass. A metric
    that the new run cannot have by construction (an ingested system's format does not record what it needs:
    ``config.ingest.not_available``) is not a failure; a note in ``notes`` names it."""
    allowed = set(allow)
    by_design = {name for kind in not_available(new_run) for name in needing(kind)}
    lacking: dict[str, list[str]] = {}
    designed: dict[str, None] = {}
    for b_method, n_method in pairs:
        for name in METRICS:
            if thresholds.get(name) is None or name in allowed:
                continue
            if b_method["metrics"].get(name) is not None and n_method["metrics"].get(name) is None:
                if name in by_design:
                    designed.setdefault(METRICS[name].title, None)
                else:
                    lacking.setdefault(name, []).append(str(n_method.get("label", n_method["key"])))
    if designed:
        kinds = ", ".join(sorted(not_available(new_run)))
        notes.append(
            f"not checked: {', '.join(designed)} (the new run's records have no {kinds}: its format does not "
            "record them)"
        )
    reasons = []
    for name, labels in lacking.items():
        why = ""
        comet = new_run.get("comet")
        if name in ("comet", "xcomet") and isinstance(comet, dict) and comet.get("reason"):
            why = f" (COMET was not available: {short(comet['reason'], limit=160)})"
        reasons.append(
            f"the new run has no {METRICS[name].title} for {', '.join(labels)}, which the base run has and a "
            f"threshold checks{why}; pass --allow-missing {name} to compare without it"
        )
    return reasons


def parse_pairs(items: Sequence[str]) -> list[tuple[str, str]]:
    """``BASE_KEY=NEW_KEY`` items of ``simul diff --pair``; a key may appear in one pair per side only."""
    pairs: list[tuple[str, str]] = []
    seen: dict[str, dict[str, str]] = {"base": {}, "new": {}}
    for item in items:
        b_key, sep, n_key = (part.strip() for part in item.partition("="))
        if not sep or not b_key or not n_key:
            raise UsageError(
                f"--pair takes BASE_KEY=NEW_KEY (method keys as in run.json), e.g. --pair rt=ext-mysystem; "
                f"got {excerpt(item)}"
            )
        for side, key in (("base", b_key), ("new", n_key)):
            if key in seen[side]:
                raise UsageError(
                    f"--pair {excerpt(item)}: {side} method {excerpt(key)} is already paired "
                    f"(--pair {excerpt(seen[side][key])}); pair each method once"
                )
            seen[side][key] = item
        pairs.append((b_key, n_key))
    return pairs


def pair_methods(
    base: Sequence[dict[str, Any]],
    new: Sequence[dict[str, Any]],
    explicit: Sequence[tuple[str, str]] = (),
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The ``explicit`` pairs (``--pair``) first; then, among the methods they leave, those with the same key
    are paired, and if one method is left on each side, those two are paired too (so SSBD with beta 0.2 can
    be compared with SSBD with beta 0.5)."""
    base_by_key = {m["key"]: m for m in base}
    new_by_key = {m["key"]: m for m in new}
    pairs = []
    for b_key, n_key in explicit:
        for side, key, present in (("base", b_key, base_by_key), ("new", n_key, new_by_key)):
            if key not in present:
                raise UsageError(
                    f"--pair {excerpt(f'{b_key}={n_key}')}: the {side} run has no method {excerpt(key)}; "
                    f"its methods are: {', '.join(present)}"
                )
        pairs.append((base_by_key[b_key], new_by_key[n_key]))
    taken_base = {b for b, _ in explicit}
    taken_new = {n for _, n in explicit}
    base = [m for m in base if m["key"] not in taken_base]
    new = [m for m in new if m["key"] not in taken_new]
    new_left = {m["key"]: m for m in new}
    pairs += [(m, new_left[m["key"]]) for m in base if m["key"] in new_left]
    left_base = [m for m in base if m["key"] not in new_left]
    base_keys = {m["key"] for m in base}
    left_new = [m for m in new if m["key"] not in base_keys]
    if len(left_base) == 1 and len(left_new) == 1:
        pairs.append((left_base[0], left_new[0]))
    if not pairs:
        raise UsageError(
            "the runs share no method: base has "
            + ", ".join(base_by_key)
            + "; new has "
            + ", ".join(new_by_key)
            + " (pair methods with different keys with --pair BASE_KEY=NEW_KEY)"
        )
    return pairs


def unpaired(
    base: Sequence[dict[str, Any]],
    new: Sequence[dict[str, Any]],
    pairs: Sequence[tuple[dict[str, Any], dict[str, Any]]],
) -> str | None:
    """A note naming the methods left out of the comparison, if any."""
    b_done = {b["key"] for b, _ in pairs}
    n_done = {n["key"] for _, n in pairs}
    parts = []
    for side, methods, done in (("base", base, b_done), ("new", new, n_done)):
        left = [m["key"] for m in methods if m["key"] not in done]
        if left:
            parts.append(f"{side} {', '.join(left)}")
    if not parts:
        return None
    return "not compared (no pair): " + "; ".join(parts) + " (add --pair BASE_KEY=NEW_KEY to compare them)"


def parse_thresholds(items: Sequence[str], option: str) -> dict[str, float | None]:
    """``metric=value`` pairs; ``value`` may be ``none`` to switch a default off."""
    out: dict[str, float | None] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"{option} takes metric=value, e.g. {option} chrf=0.5; got {item!r}")
        info = metric_info(name.strip())
        if not info.directional:
            raise UsageError(
                f"{info.name} is a diagnostic with no better direction; {option} takes metrics that have one"
            )
        wants_higher = option == "--max-drop"
        if info.higher_is_better != wants_higher:
            other = "--max-increase" if wants_higher else "--max-drop"
            raise UsageError(
                f"{info.name} is {'higher' if info.higher_is_better else 'lower'}-is-better; use {other}"
            )
        if value.strip().lower() in ("none", "off"):
            out[info.name] = None
            continue
        try:
            out[info.name] = float(value)
        except ValueError:
            raise UsageError(f"{option} {item!r}: {value!r} is not a number") from None
        if out[info.name] is not None and (out[info.name] or 0.0) < 0:
            raise UsageError(f"{option} {item!r}: thresholds are amounts of change and must be >= 0")
    return out


@dataclass
class MetricRow:
    name: str
    base: float | None
    new: float | None
    higher_is_better: bool
    threshold: float | None = None
    bootstrap: DiffBootstrap | None = None
    # why a speed figure of either run is unreliable (the process got clearly less CPU than it asked for)
    base_unreliable: str | None = None
    new_unreliable: str | None = None
    # False for diagnostics with no better direction (SWF, EFSW, DSPTV): their change is "changed"
    directional: bool = True
    # quality metrics of runs in fast mode with an SSBD beta-0 control: the larger of the two runs' |control -
    # RT| (simul.reports.engine_notes), under which a change cannot be told from kernel noise
    kernel_noise: float | None = None
    # speed figures: the base run's and the new run's 95 % interval (low, high), when both runs have one
    intervals: tuple[tuple[float, float], tuple[float, float]] | None = None

    @property
    def within_intervals(self) -> bool:
        """Whether the runs' intervals of this speed figure overlap (the change is within their spread)."""
        if self.intervals is None:
            return False
        (b_low, b_high), (n_low, n_high) = self.intervals
        return not (n_high < b_low or n_low > b_high)

    @property
    def within_kernel_noise(self) -> bool:
        delta = self.delta
        return self.kernel_noise is not None and delta is not None and 0 < abs(delta) <= self.kernel_noise

    @property
    def unreliable(self) -> bool:
        return self.base_unreliable is not None or self.new_unreliable is not None

    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.new is None else self.new - self.base

    @property
    def direction(self) -> str:
        delta = self.delta
        if delta is None:
            return "n/a"
        if abs(delta) < 1e-12:
            return "same"
        if not self.directional:
            return "changed"
        return "better" if (delta > 0) == self.higher_is_better else "worse"

    @property
    def crossed(self) -> bool:
        delta = self.delta
        if delta is None or self.threshold is None or not self.directional:
            return False
        loss = -delta if self.higher_is_better else delta
        return loss > self.threshold + 1e-12

    @property
    def verdict(self) -> str:
        if self.crossed:
            if (
                (self.bootstrap is not None and self.bootstrap.p >= ALPHA)
                or self.within_kernel_noise
                or self.within_intervals
            ):
                return "within noise"
            return "REGRESSION"
        return self.direction

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "base": self.base,
            "new": self.new,
            "delta": None if self.delta is None else round(self.delta, 4),
            "higher_is_better": self.higher_is_better if self.directional else None,
            "direction": self.direction,
            "threshold": self.threshold,
            "crossed": self.crossed,
            "bootstrap": self.bootstrap.to_json() if self.bootstrap else None,
            "kernel_noise": self.kernel_noise,
            "within_kernel_noise": self.within_kernel_noise,
            "intervals": (
                None
                if self.intervals is None
                else {"base": list(self.intervals[0]), "new": list(self.intervals[1])}
            ),
            "within_intervals": self.within_intervals,
            "verdict": self.verdict,
            "timing_unreliable": (
                {"base": self.base_unreliable, "new": self.new_unreliable} if self.unreliable else None
            ),
        }


ALPHA = 0.05


@dataclass
class MethodComparison:
    base_key: str
    new_key: str
    label: str
    rows: list[MetricRow]
    streams: dict[str, Any] = field(default_factory=dict)
    band: tuple[str | None, str | None] = (None, None)  # IWSLT 2026 band of base and new (bands.py)

    @property
    def left_band(self) -> bool:
        """Whether the new run's method is outside the band the base run's was in."""
        return self.band[0] is not None and self.band[1] != self.band[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base_key,
            "new": self.new_key,
            "label": self.label,
            "metrics": [r.to_json() for r in self.rows],
            "streams": self.streams,
            "band": {"base": self.band[0], "new": self.band[1], "left": self.left_band},
        }


@dataclass
class Comparison:
    base: Path
    new: Path
    methods: list[MethodComparison]
    reasons: list[str]
    notes: list[str]
    allow_noise: bool = False
    provenance: list[ProvenanceChange] = field(default_factory=list)
    strict_versions: bool = False
    allow_missing: list[str] = field(default_factory=list)
    keep_band: bool = False

    @property
    def band_regressions(self) -> list[MethodComparison]:
        """Methods that left the base run's latency band, when the band must be kept (``keep_band``)."""
        return [m for m in self.methods if m.left_band] if self.keep_band else []

    @property
    def regressions(self) -> list[tuple[str, MetricRow]]:
        """Metrics past their threshold; those within noise too, unless noise is allowed."""
        failing = {"REGRESSION"} if self.allow_noise else {"REGRESSION", "within noise"}
        return [(m.label, r) for m in self.methods for r in m.rows if r.verdict in failing]

    def to_json(self) -> dict[str, Any]:
        return {
            "base": str(self.base),
            "new": str(self.new),
            "comparable": not self.reasons,
            "reasons": self.reasons,
            "notes": self.notes,
            "methods": [m.to_json() for m in self.methods],
            "regressions": [
                {"method": label, "metric": r.name, "within_noise": r.verdict == "within noise"}
                for label, r in self.regressions
            ],
            "allow_noise": self.allow_noise,
            "provenance": [c.to_json() for c in self.provenance],
            "strict_versions": self.strict_versions,
            "allow_missing": self.allow_missing,
            "keep_band": self.keep_band,
            "band_regressions": [
                {"method": m.label, "base": m.band[0], "new": m.band[1]} for m in self.band_regressions
            ],
        }


def compare(
    base_path: Path,
    new_path: Path,
    max_drop: Mapping[str, float | None],
    max_increase: Mapping[str, float | None],
    force: bool = False,
    bootstrap_samples: int = 1000,
    worst: int = 5,
    allow_noise: bool = False,
    pairs: Sequence[tuple[str, str]] = (),
    strict_versions: bool = False,
    allow_missing: Sequence[str] = (),
    keep_band: bool = False,
) -> Comparison:
    """Compare two runs; ``pairs`` are ``--pair`` (base key, new key) pairs of methods with different keys;
    ``strict_versions`` refuses provenance differences (library versions, COMET batch size);
    ``allow_missing`` names thresholded metrics the new run may lack."""
    base, new = load_side(base_path), load_side(new_path)
    both = (base.loaded.streams, new.loaded.streams) if base.loaded and new.loaded else None
    reasons = incompatibilities(base.run, new.run, both)
    provenance = provenance_changes(base.run, new.run)
    if strict_versions:
        reasons += [f"different {c.describe()} (--strict-versions)" for c in provenance if c.strict]
    thresholds: dict[str, float | None] = {**DEFAULT_MAX_DROP, **DEFAULT_MAX_INCREASE}
    thresholds.update(max_drop)
    thresholds.update(max_increase)
    paired = pair_methods(base.run["methods"], new.run["methods"], pairs)
    lacking_notes: list[str] = []
    reasons += missing_metrics(paired, thresholds, allow_missing, new.run, lacking_notes)
    for b_method, n_method in paired:
        ne_units = _ne_units(b_method.get("counts", {}), n_method.get("counts", {}))
        if ne_units:
            reasons.append(f"{_label(b_method, n_method)}: NE in different units ({ne_units})")
    if reasons and not force:
        raise Incomparable(reasons)
    notes = provenance_notes(provenance, strict_versions) + lacking_notes
    b_model, n_model = base.run["config"]["model"], new.run["config"]["model"]
    if b_model.get("sha256") != n_model.get("sha256"):
        notes.append(f"different models: {b_model.get('file')} vs {n_model.get('file')}")
    hardware = hardware_difference(base.run, new.run)
    if hardware:
        timing = ", ".join(name for name, info in METRICS.items() if info.timing)
        notes.append(
            f"timing metrics ({timing}) were measured on different hardware ({hardware}): their changes say "
            "nothing about the code"
        )
    policy = wait_policy_difference(base.run, new.run)
    if policy:
        timing = ", ".join(name for name, info in METRICS.items() if info.timing)
        notes.append(
            f"timing metrics ({timing}) were measured with different OpenMP wait policies ({policy}): a "
            "thread that sleeps at each barrier makes one-token passes slower than one that spins, so their "
            "changes may come from the policy"
        )
    b_timing, n_timing = TimingNotes.from_run(base.run), TimingNotes.from_run(new.run)
    floors = kernel_noise_floors(base.run, new.run, notes)
    comparisons = []
    if pairs:
        left_out = unpaired(base.run["methods"], new.run["methods"], paired)
        if left_out:
            notes.append(left_out)
    for b_method, n_method in paired:
        label = _label(b_method, n_method)
        rows = []
        for name, info in METRICS.items():
            b_val, n_val = b_method["metrics"].get(name), n_method["metrics"].get(name)
            if b_val is None and n_val is None:
                continue
            rows.append(
                MetricRow(
                    name,
                    b_val,
                    n_val,
                    info.higher_is_better,
                    thresholds.get(name),
                    base_unreliable=b_timing.reason(b_method["key"], name),
                    new_unreliable=n_timing.reason(n_method["key"], name),
                    directional=info.directional,
                    kernel_noise=floors.get(name),
                    intervals=_intervals(base.run, new.run, b_method["key"], n_method["key"], name),
                )
            )
        units = _unit_differences(b_method.get("counts", {}), n_method.get("counts", {}))
        if units:
            notes.append(f"{label}: figures in different units ({units}); compare those figures with care")
        comparison = MethodComparison(b_method["key"], n_method["key"], label, rows)
        comparison.band = (method_band(b_method).band, method_band(n_method).band)
        if comparison.left_band:
            base_band, new_band = (BAND_TITLES[b] for b in comparison.band)
            notes.append(f"{label} left its latency band: {base_band} in the base run, {new_band} in the new")
        _add_paired_statistics(comparison, base, new, bootstrap_samples, worst, notes)
        comparisons.append(comparison)
    return Comparison(
        base_path,
        new_path,
        comparisons,
        reasons,
        notes,
        allow_noise,
        provenance=provenance,
        strict_versions=strict_versions,
        allow_missing=list(allow_missing),
        keep_band=keep_band,
    )


def _intervals(
    base: Mapping[str, Any], new: Mapping[str, Any], b_key: str, n_key: str, name: str
) -> tuple[tuple[float, float], tuple[float, float]] | None:
    b = read_interval(base.get("speed_intervals"), b_key, name)
    n = read_interval(new.get("speed_intervals"), n_key, name)
    return None if b is None or n is None else (b, n)


def kernel_noise_floors(
    base: Mapping[str, Any], new: Mapping[str, Any], notes: list[str]
) -> dict[str, float]:
    """Per quality metric, the kernel noise under which a change between the two runs means nothing: the
    larger |SSBD beta 0 - RT| of the runs decoded in fast mode (0 for a run in exact mode, where the control
    equals RT by construction). Empty when a fast-mode run has no control (the noise is then unknown: a note
    says so) or both runs are exact."""
    modes = [bool((run.get("config") or {}).get("exact")) for run in (base, new)]
    if modes[0] != modes[1]:
        notes.append(
            "the runs were decoded in different engine modes (exact and fast): in fast mode a row's logits "
            "depend on the width of its pass, so quality changes may come from kernel noise"
        )
    floors: dict[str, float] = {}
    for run, exact in zip((base, new), modes, strict=True):
        if exact:
            continue
        noise = control_noise(run.get("methods") or [])
        if not noise:
            notes.append(
                "a run decoded in fast mode holds no SSBD beta-0 control beside RT, so its kernel noise is "
                'unknown (add --method "ssbd --beta 0" to bench, or decode with --exact)'
            )
            return {}
        for name, value in noise.items():
            floors[name] = max(floors.get(name, 0.0), value)
    return floors


def _label(b_method: Mapping[str, Any], n_method: Mapping[str, Any]) -> str:
    if b_method["key"] == n_method["key"]:
        return str(b_method["label"])
    return f"{b_method['label']} -> {n_method['label']}"


def _ne_units(base: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """Both NE units when two methods' counts record different ones (NE counts tokens of that unit: two
    units are two metrics)."""
    b, n = base.get("ne_unit"), new.get("ne_unit")
    if b is None or n is None or b == n:
        return None
    return f"{short(b)} vs {short(n)}"


def _unit_differences(base: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """Which units of the count-based figures differ between two methods' counts, for a note: the latency
    units, and the NE unit where one run did not record it (runs written before simul recorded units show
    them as unknown; two recorded NE units that differ are refused, :func:`_ne_units`)."""
    out = []
    for key in ("latency_unit", "target_latency_unit", "ne_unit"):
        b, n = base.get(key, "unknown"), new.get(key, "unknown")
        if b != n and not (key == "ne_unit" and _ne_units(base, new)):
            out.append(f"{key} {short(b)} vs {short(n)}")
    return ", ".join(out)


def _add_paired_statistics(
    comparison: MethodComparison, base: Side, new: Side, samples: int, worst: int, notes: list[str]
) -> None:
    b_key, n_key = comparison.base_key, comparison.new_key
    if base.loaded is None or new.loaded is None:
        notes.append("paired statistics need steps.jsonl and streams.jsonl in both run directories")
        return
    b_results = {r.stream_id: r for r in base.loaded.results[b_key]}
    n_results = {r.stream_id: r for r in new.loaded.results[n_key]}
    ids = [sid for sid in b_results if sid in n_results and base.loaded.streams[sid].references]
    if not ids:
        return
    refs = [base.loaded.streams[sid].references for sid in ids]
    hyps_b = [b_results[sid].final_output for sid in ids]
    hyps_n = [n_results[sid].final_output for sid in ids]
    tgt = base.loaded.streams[ids[0]].tgt
    by_name = {r.name: r for r in comparison.rows}
    for name in CORPUS_RESAMPLED:
        if name in by_name and samples > 0:
            scores_b, scores_n = (
                corpus_scores(name, hyps_b, refs, tgt),
                corpus_scores(name, hyps_n, refs, tgt),
            )
            by_name[name].bootstrap = diff_bootstrap(scores_b, scores_n, samples)
    for learned in SEGMENT_MEANS:
        comet_b = [base.per_stream.get((b_key, sid), {}).get(learned) for sid in ids]
        comet_n = [new.per_stream.get((n_key, sid), {}).get(learned) for sid in ids]
        if learned in by_name and samples > 0 and all(c is not None for c in comet_b + comet_n):
            cb = [float(c) for c in comet_b if c is not None]
            cn = [float(c) for c in comet_n if c is not None]
            by_name[learned].bootstrap = diff_bootstrap(
                segment_mean_scores(cb), segment_mean_scores(cn), samples
            )
    # per-stream view from sentence chrF
    from simul.metrics.quality import sentence_chrf

    deltas = []
    for sid, ref, hb, hn in zip(ids, refs, hyps_b, hyps_n, strict=True):
        deltas.append((sentence_chrf(hn, ref) - sentence_chrf(hb, ref), sid, hb, hn))
    worse = [d for d in deltas if d[0] < -1e-9]
    better = [d for d in deltas if d[0] > 1e-9]
    worse.sort()
    comparison.streams = {
        "compared": len(deltas),
        "worse": len(worse),
        "better": len(better),
        "same": len(deltas) - len(worse) - len(better),
        "worst": [
            {"stream": sid, "chrf_delta": round(delta, 2), "base": hb, "new": hn}
            for delta, sid, hb, hn in worse[:worst]
        ],
    }


class Incomparable(SimulError):
    """The runs differ in what makes their numbers comparable."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__("refusing to compare: " + "; ".join(reasons) + " (pass --force to compare anyway)")
        self.reasons = reasons

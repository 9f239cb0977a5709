"""Turn per-step records into the figures of a run, one method at a time.

Everything here is computed from what a run directory stores (step records and streams), so that
`simul score` recomputes exactly what `simul eval` reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simul.common.languages import get_language
from simul.decoding.records import StepRecord, StreamResult
from simul.metrics.acceptance import acceptance
from simul.metrics.degeneracy import Degeneracy, degeneracy
from simul.metrics.delays import StreamDelays, stream_delays
from simul.metrics.erasure import normalized_erasure, stream_erasure
from simul.metrics.latency import Lagging
from simul.metrics.quality import corpus_bleu, corpus_chrf, sentence_chrf
from simul.metrics.speed import row_cost, speed, speedup
from simul.metrics.talk_cost import talk_cost
from simul.metrics.tokenizers import get_tokenizer
from simul.metrics.units import source_unit, target_unit
from simul.request.methods import Method
from simul.streams.format import Stream

# What a run lacks when its outputs came from another system (``simul ingest``), and the figures that need
# it: those are reported as not available (None), never as zero.
MISSING_FIELDS: dict[str, tuple[str, ...]] = {
    "draft": ("ad", "ao", "ideal_speedup", "efficiency", "row_cost", "agreement_rt"),
    "model_tokens": (
        "tps",
        "tps_e2e",
        "speedup",
        "speedup_e2e",
        "ao",
        "ideal_speedup",
        "efficiency",
        "row_cost",
        "agreement_rt",
    ),
    "timing": (
        "tps",
        "tps_e2e",
        "speedup",
        "speedup_e2e",
        "efficiency",
        "row_cost",
        "p50_update_ms",
        "p95_update_ms",
        "latency_ca",
        "al_ca",
        "dal_ca",
        "yaal_ca",
    ),
    # append-only outputs (SimulEval's instances.log) cannot show an erasure
    "revisions": ("ne", "ne_display", "ne_mean", "ne_display_mean"),
}
_MISSING_COUNTS: dict[str, tuple[str, ...]] = {
    "draft": ("draft_tokens", "accepted_tokens", "resync_drafted", "resync_accepted", "frozen_steps"),
    "model_tokens": ("output_tokens", "verify_rows", "decode_passes"),
    "timing": (
        "gen_seconds",
        "prompt_seconds",
        "prompt_eval_seconds",
        "verify_seconds",
        "decode_seconds",
    ),
    "revisions": ("erased_tokens", "erased_display_tokens"),
}


@dataclass
class MethodReport:
    """A method's figures plus its per-stream figures (for paired comparisons)."""

    method: Method
    metrics: dict[str, float | None]
    per_stream: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _mean(values: Sequence[float | None]) -> float | None:
    """The mean of the values that exist, rounded to 4 decimals (None when none does)."""
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 4) if present else None


# run.json names of the long-form latencies (simul.metrics.longform.latency's keys)
LONGFORM_LATENCIES = (
    "long_yaal",
    "long_laal",
    "long_al",
    "long_dal",
    "ca_long_yaal",
    "ca_long_laal",
    "ca_long_al",
    "ca_long_dal",
)


def method_report(
    method: Method,
    results: Sequence[StreamResult],
    streams: Mapping[str, Stream],
    ne_tokenizer: str,
    rt_results: Mapping[str, StreamResult] | None = None,
    rt_tps: float | None = None,
    rt_tps_e2e: float | None = None,
    missing: frozenset[str] = frozenset(),
) -> MethodReport:
    """Metrics of one method over its stream results (COMET is added separately); ``missing`` names what
    the records do not hold (keys of MISSING_FIELDS), whose figures become None."""
    tokenize = get_tokenizer(ne_tokenizer)
    all_steps: list[StepRecord] = [s for r in results for s in r.steps]
    acc = acceptance((s.drafted_total, s.accepted_total, len(s.output_ids)) for s in all_steps)
    spd = speed((len(s.output_ids), s.t_prompt, s.t_gen) for s in all_steps)

    raw_tok = [[tokenize(s.output) for s in r.steps] for r in results]
    disp_tok = [[tokenize(s.display) for s in r.steps] for r in results]
    ne = normalized_erasure(raw_tok)
    ne_display = normalized_erasure(disp_tok)

    # Corpus BLEU and chrF over the streams that have a reference (a stream without one is left out, and
    # ``references`` in the counts says on how many streams they were computed); every reference is used.
    with_ref = [r for r in results if streams[r.stream_id].references]
    hyps = [r.final_output for r in with_ref]
    refs = [streams[r.stream_id].references for r in with_ref]
    tgt = streams[results[0].stream_id].tgt if results else "en"
    src_lang = get_language(streams[results[0].stream_id].src) if results else get_language("en")
    timed = all(s.time_ms is not None for s in all_steps)
    bleu = chrf = None
    signatures: dict[str, str] = {}
    if with_ref:
        b = corpus_bleu(hyps, refs, tgt)
        c = corpus_chrf(hyps, refs)
        bleu, chrf = b.score, c.score
        signatures = {"bleu": b.signature, "chrf": c.signature}

    per_stream: list[dict[str, Any]] = []
    lags: list[Lagging] = []
    lags_aware: list[Lagging] = []
    all_delays: list[StreamDelays] = []
    for result, raw, disp in zip(results, raw_tok, disp_tok, strict=True):
        stream = streams[result.stream_id]
        delays = stream_delays(result, stream)
        all_delays.append(delays)
        lag = delays.lagging()
        lags.append(lag)
        lags_aware.append(delays.lagging_aware())
        erased, final_len = stream_erasure(raw)
        erased_d, _ = stream_erasure(disp)
        row: dict[str, Any] = {
            "stream": result.stream_id,
            "chrf": round(sentence_chrf(result.final_output, stream.references), 4)
            if stream.reference
            else None,
            "erased": None if "revisions" in missing else erased,
            "erased_display": None if "revisions" in missing else erased_d,
            "final_tokens": final_len,
            "latency": _round(lag.laal, 4),
            "yaal": _round(lag.yaal, 4),
            "accepted": None if "draft" in missing else sum(s.accepted_total for s in result.steps),
            "output_tokens": None
            if "model_tokens" in missing
            else sum(len(s.output_ids) for s in result.steps),
            "steps": len(result.steps),
        }
        per_stream.append(row)

    agreement = None
    if rt_results is not None and method.name != "rt":
        same = total = 0
        for result in results:
            rt = rt_results.get(result.stream_id)
            if rt is None:
                continue
            for mine, theirs in zip(result.steps, rt.steps, strict=False):
                total += 1
                same += mine.output_ids == theirs.output_ids
        agreement = 100.0 * same / total if total else None

    method_speedup = 1.0 if method.name == "rt" else (speedup(spd.tps, rt_tps) if rt_tps else None)
    method_speedup_e2e = (
        1.0 if method.name == "rt" else (speedup(spd.tps_e2e, rt_tps_e2e) if rt_tps_e2e else None)
    )
    ideal = acc.ideal_speedup
    efficiency = method_speedup / ideal if (method_speedup is not None and ideal) else None
    verify_seconds = sum(s.t_verify for s in all_steps)
    decode_seconds = sum(s.t_decode for s in all_steps)
    verify_rows = sum(s.verify_rows for s in all_steps)
    decode_passes = sum(s.decode_passes for s in all_steps)
    cost = row_cost(verify_seconds, verify_rows, decode_seconds, decode_passes)
    metrics: dict[str, float | None] = {
        "comet": None,
        "bleu": _round(bleu, 4),
        "chrf": _round(chrf, 4),
        "ne": round(ne.value, 4),
        "ne_display": round(ne_display.value, 4),
        "ne_mean": round(ne.mean, 4),
        "ne_display_mean": round(ne_display.mean, 4),
        "ad": _round(acc.ad, 2),
        "ao": round(acc.ao, 2),
        "tps": round(spd.tps, 2),
        "speedup": _round(method_speedup, 3),
        "tps_e2e": round(spd.tps_e2e, 2),
        "speedup_e2e": _round(method_speedup_e2e, 3),
        "ideal_speedup": _round(ideal, 3),
        "efficiency": _round(efficiency, 3),
        "row_cost": _round(cost, 3),
        "latency": _mean([lag.laal for lag in lags]),
        "al": _mean([lag.al for lag in lags]),
        "dal": _mean([lag.dal for lag in lags]),
        "yaal": _mean([lag.yaal for lag in lags]),
        "latency_ca": _mean([lag.laal for lag in lags_aware]),
        "al_ca": _mean([lag.al for lag in lags_aware]),
        "dal_ca": _mean([lag.dal for lag in lags_aware]),
        "yaal_ca": _mean([lag.yaal for lag in lags_aware]),
        "p50_update_ms": round(spd.p50_update_ms, 2),
        "p95_update_ms": round(spd.p95_update_ms, 2),
        "agreement_rt": _round(agreement, 2),
        **_degeneracy(results, streams, all_delays).metrics(),
        # long-form runs only (simul.metrics.scoring fills them in); None elsewhere, so every run has the keys
        **dict.fromkeys(LONGFORM_LATENCIES),
        "cost_growth": None,
    }
    extra = {
        "streams": len(results),
        "references": len(with_ref),
        "steps": len(all_steps),
        "output_tokens": acc.output,
        "draft_tokens": acc.drafted,
        "accepted_tokens": acc.accepted,
        "erased_tokens": ne.erased,
        "erased_display_tokens": ne_display.erased,
        "final_tokens": ne.final_tokens,
        "gen_seconds": round(spd.gen_seconds, 4),
        "prompt_seconds": round(spd.prompt_seconds, 4),
        "prompt_eval_seconds": round(sum(s.t_prompt_eval for s in all_steps), 4),
        "verify_seconds": round(verify_seconds, 4),
        "decode_seconds": round(decode_seconds, 4),
        "verify_rows": verify_rows,
        "decode_passes": decode_passes,
        "ending_tokens": sum(s.ending_tokens for s in all_steps),
        "resync_drafted": sum(s.resync_drafted for s in all_steps),
        "resync_accepted": sum(s.resync_accepted for s in all_steps),
        "frozen_steps": sum(
            1 for s in all_steps if s.draft_tokens and s.accepted == s.draft_tokens and s.new_tokens == 0
        ),
        "signatures": signatures,
        "latency_unit": source_unit(src_lang.short, bool(all_steps) and timed),
        "target_latency_unit": target_unit(tgt),
        "latency_ca_unit": "ms",
        "ne_unit": ne_tokenizer,
    }
    for field_name in missing:
        for name in MISSING_FIELDS.get(field_name, ()):
            metrics[name] = None
        for name in _MISSING_COUNTS.get(field_name, ()):
            extra[name] = None
    if missing:
        extra["not_available"] = sorted(missing)
    if any(streams[r.stream_id].longform for r in results):
        _add_talk_figures(results, metrics, extra, per_stream)
    return MethodReport(method=method, metrics=metrics, per_stream=per_stream, extra=extra)


def _add_talk_figures(
    results: Sequence[StreamResult],
    metrics: dict[str, float | None],
    extra: dict[str, Any],
    per_stream: list[dict[str, Any]],
) -> None:
    """Long-form runs: the cost of updates along the talks (metrics.talk_cost); the short-form latencies,
    which measure a sentence from its start, are left out (long-form latency: simul.metrics.longform)."""
    extra["talk_cost"] = talk_cost([r.steps for r in results])
    metrics["cost_growth"] = extra["talk_cost"]["cost_growth"]
    for row, result in zip(per_stream, results, strict=True):
        row["talk_cost"] = talk_cost([result.steps])
    for name in ("latency", "al", "dal", "yaal", "latency_ca", "al_ca", "dal_ca", "yaal_ca"):
        metrics[name] = None
    for row in per_stream:
        row["latency"] = row["yaal"] = None


def _degeneracy(
    results: Sequence[StreamResult], streams: Mapping[str, Stream], delays: Sequence[StreamDelays]
) -> Degeneracy:
    """OmniSTEval's short-form degeneracy diagnostics (``metrics/degeneracy.py``); none for long-form runs,
    which OmniSTEval does not compute them for."""
    if any(streams[r.stream_id].longform for r in results):
        return Degeneracy.none()
    return degeneracy(delays)


def reports_for(
    methods: Sequence[Method],
    results: Mapping[str, list[StreamResult]],
    streams: Mapping[str, Stream],
    ne_tokenizer: str,
    missing: frozenset[str] = frozenset(),
) -> list[MethodReport]:
    """Reports for every method; RT (when present) is computed first so the others get their speedup."""
    by_key = {m.key: m for m in methods}
    rt_key = next((m.key for m in methods if m.name == "rt" and not m.mask_k), None)
    rt_key = rt_key or next((m.key for m in methods if m.name == "rt"), None)
    rt_report = None
    rt_map = None
    if rt_key is not None:
        rt_report = method_report(by_key[rt_key], results[rt_key], streams, ne_tokenizer, missing=missing)
        rt_map = {r.stream_id: r for r in results[rt_key]}
    reports = []
    for method in methods:
        if method.key == rt_key and rt_report is not None:
            reports.append(rt_report)
            continue
        reports.append(
            method_report(
                method,
                results[method.key],
                streams,
                ne_tokenizer,
                rt_results=rt_map,
                rt_tps=rt_report.metrics["tps"] if rt_report else None,
                rt_tps_e2e=rt_report.metrics["tps_e2e"] if rt_report else None,
                missing=missing,
            )
        )
    return reports

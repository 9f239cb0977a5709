"""Which speed figures of a run to mark as unreliable (``!``), and why: read back from run.json's
``environment.cpu_usage`` (simul.machine.cpu_usage, the rule that judges each method's CPU share) and
``environment.pass_costs`` (simul.machine.calibration), for the tables, `simul score`, `simul diff` and the
--json documents.

A method's timing figures (every metric the registry marks ``timing``) are marked when its own timing was
unreliable; the figures relative to RT (RELATIVE_TO_RT) also when RT's was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simul.machine.calibration import MAX_SLOWDOWN, PassCosts, run_slowdown
from simul.machine.cpu_usage import MIN_SHARE
from simul.machine.load_following import changes_note
from simul.machine.threads import fewer_threads_note
from simul.metrics.registry import METRICS, names
from simul.request.methods import Method

# What makes a method's timing unreliable, in the words of the tables and `simul diff`.
UNRELIABLE_WHY = (
    f"the process got less than {100 * MIN_SHARE:.0f}% of the CPU time it asked for (other jobs were "
    "running), or its forward passes cost more or less than the machine's calibrated ones"
)
# Figures relative to RT's speed in the same run: unreliable when RT's timing is.
RELATIVE_TO_RT = names(lambda m: m.relative_to_rt)
MARK = "!"


def describe(record: Mapping[str, Any], threads: int | None = None) -> str:
    """The measured ratio in words: ``got 43% of the CPU time it asked for, CPU/wall 0.86, load 5.2``."""
    try:
        return _describe(record, threads)
    except (TypeError, ValueError):  # a hand-edited or damaged run.json
        return "unreadable CPU record"


def _describe(record: Mapping[str, Any], threads: int | None) -> str:
    parts = []
    if record.get("basis") == "runqueue" and record.get("cpu_share") is not None:
        parts.append(f"got {100 * record['cpu_share']:.0f}% of the CPU time it asked for")
    if record.get("cpu_per_wall") is not None:
        per_wall = f"CPU/wall {record['cpu_per_wall']:.2f}"
        parts.append(per_wall + (f" for {threads} thread{'s' if threads != 1 else ''}" if threads else ""))
    if record.get("load1_mean") is not None:
        parts.append(f"load {record['load1_mean']:.1f}")
    return ", ".join(parts) if parts else "no CPU measurement"


@dataclass(frozen=True)
class TimingNotes:
    """Which methods of a run had unreliable timings, and why; read from run.json."""

    unreliable: dict[str, str]  # method key -> the measured ratio in words
    labels: dict[str, str]  # method key -> label
    rt_key: str | None  # the RT method the speedups are relative to
    # why the run used fewer threads than the machine's cores (simul.machine.threads), for the caption
    threads_note: str | None = None
    # the thread changes of exact mode's load following (simul.machine.load_following), for the caption
    changes_note: str | None = None

    @classmethod
    def from_run(cls, run: Mapping[str, Any]) -> TimingNotes:
        environment = run.get("environment")
        usage = environment.get("cpu_usage") if isinstance(environment, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        # Only what the schema (simul.runs.schema) allows reaches the words printed from here: a whole number
        # of threads, and the records of the run's own methods (whose keys simul made).
        threads = usage.get("threads")
        threads = (
            threads if isinstance(threads, int) and not isinstance(threads, bool) and threads > 0 else None
        )
        records = usage.get("methods")
        methods = [Method.from_json(m) for m in (run.get("config") or {}).get("methods", [])]
        known = {m.key for m in methods}
        unreliable = {
            key: describe(record, threads)
            for key, record in (records.items() if isinstance(records, dict) else ())
            if key in known and isinstance(record, dict) and record.get("reliable") is False
        }
        # As in metrics.compute: the speedups are relative to RT without mask-k, else to any RT.
        rts = [m for m in methods if m.name == "rt"]
        rt = next((m for m in rts if not m.mask_k), rts[0] if rts else None)
        costs = environment.get("pass_costs") if isinstance(environment, dict) else None
        overhead = pass_cost_reasons(costs, run.get("methods"), [m.key for m in methods])
        for key, why in overhead.items():
            unreliable[key] = f"{unreliable[key]}; {why}" if key in unreliable else why
        choice = environment.get("thread_choice") if isinstance(environment, dict) else None
        changes = environment.get("thread_changes") if isinstance(environment, dict) else None
        changed = changes_note(changes)
        if changed and isinstance(changes, list):  # every speed figure was taken under changing threads
            why = f"taken under changing threads ({len(changes)} changes)"
            for key in known:
                unreliable[key] = f"{unreliable[key]}; {why}" if key in unreliable else why
        return cls(
            unreliable,
            {m.key: m.label for m in methods},
            rt.key if rt else None,
            fewer_threads_note(choice),
            changed,
        )

    def marks(self, method_key: str) -> set[str]:
        """The metrics of one method to mark: every timing figure when the method's own timing is
        unreliable, and the figures relative to RT when RT's is."""
        names = {name for name, info in METRICS.items() if info.timing}
        if method_key == self.rt_key:  # RT's own speedup is 1 by definition
            names -= set(RELATIVE_TO_RT)
        if method_key in self.unreliable:
            return names
        if self.rt_key is not None and self.rt_key in self.unreliable:
            return names & set(RELATIVE_TO_RT)
        return set()

    def reason(self, method_key: str, metric: str) -> str | None:
        """Why ``metric`` of a method is unreliable (with the measured ratio), or None when it is not."""
        if metric not in self.marks(method_key):
            return None
        if method_key in self.unreliable:
            return self.unreliable[method_key]
        rt = self.rt_key or ""
        return f"{self.labels.get(rt, rt)} (the baseline) {self.unreliable.get(rt, '')}"

    def note(self) -> str | None:
        """One line for a table's caption, or None when every timing was reliable."""
        if not self.unreliable:
            return None
        each = "; ".join(f"{self.labels.get(k, k)} {why}" for k, why in sorted(self.unreliable.items()))
        return f"{MARK} speed figures unreliable: {UNRELIABLE_WHY}: {each}"


def pass_cost_reasons(costs: Any, methods: Any, keys: list[str]) -> dict[str, str]:
    """Methods whose timings the calibration (simul.machine.calibration, run.json's
    environment.pass_costs) makes unreliable, and why: every method when the machine's per-pass overhead
    was out of line (threads gaining too little over one thread); a method whose mean one-token pass in the
    run was more than MAX_SLOWDOWN times the calibrated one (the machine got slower during the run) or less
    than its 1/MAX_SLOWDOWN (the calibration ran slow, so the bounds and c built on it are not the run's)."""
    calibrated = PassCosts.from_json(costs)
    if calibrated is None:
        return {}
    out: dict[str, str] = {}
    problem = calibrated.problem()
    if problem:
        out = {key: problem for key in keys}
    for method in methods if isinstance(methods, list) else ():
        counts = method.get("counts") if isinstance(method, dict) else None
        if not isinstance(counts, dict) or not isinstance(method.get("key"), str):
            continue
        try:
            ratio = run_slowdown(calibrated, float(counts["decode_seconds"]), int(counts["decode_passes"]))
        except (KeyError, TypeError, ValueError):
            continue
        if ratio is None or 1.0 / MAX_SLOWDOWN <= ratio <= MAX_SLOWDOWN:
            continue
        why = (
            f"one-token passes took {ratio:.2f}x the {calibrated.one_token_ms:.1f} ms calibrated before "
            "the run"
        )
        if ratio < 1.0:
            why += " (the calibration met a slower machine: Bound and c are not this run's)"
        key = method["key"]
        out[key] = f"{out[key]}; {why}" if key in out else why
    return out

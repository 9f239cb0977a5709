"""What one forward pass costs on this machine, measured before a benchmark: the bound of SSBD's speedup.

SSBD's generation time per output token relative to RT's is, with a draft row in a verification pass costing
c one-token decodes (simul.metrics.speed, docs/results.md "What limits the speedup"),

    (1 - A/O) + c * A/O / A/D        so    speedup = 1 / ((1 - A/O) + c * A/O / A/D)

c falls as a verification pass gets wider (its fixed cost, reading the weights and the per-pass overhead, is
shared by more rows). Measured on the run's own model, context and threads, on a draft of DRAFT rows with
logits at every row (as SSBD verifies):

    one_token_ms   mean time of a one-token greedy pass, best of REPEATS runs of PASSES passes
    row_ms         time of a DRAFT-row verification pass / DRAFT, best of REPEATS
    c_min          = row_ms / one_token_ms
    bound(A/D, A/O) = 1 / ((1 - A/O) + c_min * A/O / A/D)

``bound`` (computed from these measurements by simul.metrics.speed.calibrated_bound, with the speed model
there) is the speedup the machine allows at the run's acceptance rates when every verified row costs what
it costs in a wide pass and nothing else (tokenizing, argmax, acceptance tests) takes time. A run's drafts
are shorter than DRAFT rows (as long as the previous output), and a narrow pass shares its fixed cost among
fewer rows, so the calibration also times passes of every width up to DRAFT rows (WIDTHS). With T(n) the
time of an n-row pass (beyond DRAFT along the slope of the upper half), the rows the run verified in passes
of n_1, n_2, ... rows cost

    c_run = sum_i T(n_i) / (sum_i n_i * one_token_ms)        bound_run = 1 / ((1 - A/O) + c_run * A/O / A/D)

``bound_run`` is what the machine allows for this run's drafts: the measured speedup falls short of it only
by the Python-side work of an update and by anything that slowed the run's passes (other jobs; one far above
it means RT was slowed by something SSBD escapes, as OpenMP wake-ups at every one-token pass were: issue
23). Either is a timing to distrust.

With N > 1 threads the one-token pass is also timed with one thread (``llama_set_n_threads``; the thread count
does not change what a pass computes). The threads' *efficiency* is

    efficiency = one_token_ms(1 thread) / (N * one_token_ms(N threads))

1.0 when N threads make a pass N times faster. Each thread beyond the first must win at least
MIN_THREAD_GAIN of a one-thread pass's speed, i.e. one_token_ms(1) / one_token_ms(N) >= 1 + MIN_THREAD_GAIN *
(N - 1) (on 2 threads: a pass at least 1.25x faster than on one thread; efficiency >= 0.625). Below that the
threads spend their time waiting for each other rather than computing: the per-pass overhead is out of line
with what the machine computes (a thread woken from sleep at each of the hundreds of barriers of a pass, a
core taken by another job), and every timing of the run is marked unreliable. On 2 idle cores of the
development machine a pass on 2 threads was 1.8x faster than on one with a spinning wait and 1.0x with
OpenMP's passive one; the threshold lies between them with room on both sides, and leaves 8
threads that give 2.75x (efficiency 0.34, a memory-bound machine) unmarked.

During the run, RT's one-token passes should cost what they cost here: a run whose mean one-token pass is
more than MAX_SLOWDOWN times the calibrated one met a slower machine (another job started, the CPU was
throttled), and is marked too; so is one whose mean pass is less than 1/MAX_SLOWDOWN of it, where the
calibration met the slower machine and its bound and c do not describe the run (a 2-core Zen 5 VM calibrated
a 1.5B model's one-token pass at 116.7 ms, with 3-row passes at 760 ms and 4-row ones at 61 ms, and then ran
its RT passes at about 37 ms).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import numpy as np

from simul.machine.clock import (
    wall as lane_wall,  # without the waits for other lanes (simul bench --parallel)
)

PROMPT = "English: The committee will publish its report on the new railway line early next year.\nGerman:"
DRAFT = 32  # rows of the calibration's verification pass (c_min)
# Rows of the passes timed for T(n): every width, since T is not linear in the rows (on the development
# machine a pass of 5 rows took 44 ms against 29 ms for 4, where llama.cpp changes kernels).
WIDTHS = tuple(range(2, DRAFT + 1))
PASSES = 24  # one-token passes per measurement
REPEATS = 3  # best of
MIN_THREAD_GAIN = 0.25
MAX_SLOWDOWN = 1.5


class Calibratable(Protocol):
    """What calibration needs of a backend (simul.decoding.backend.LlamaBackend has it)."""

    n_threads: int
    n_vocab: int

    def tokenize(self, text: str, add_special: bool = False, parse_special: bool = False) -> list[int]: ...
    def eval(self, tokens: list[int], logits_from: int | None = None) -> Any: ...
    def reset(self) -> None: ...
    def set_threads(self, n: int) -> None: ...


@dataclass(frozen=True)
class PassCosts:
    """The calibration's measurements (milliseconds) and what follows from them."""

    threads: int
    one_token_ms: float
    row_ms: float
    draft: int
    one_token_single_ms: float | None  # with one thread; None when the run has one thread or a GPU
    widths: tuple[tuple[int, float], ...] = ()  # (rows, ms per pass) of verification passes, by rows
    # the draft model's one-token pass after the same prompt, when the run has a draft model
    draft_one_token_ms: float | None = None
    # the draft-row verification pass with one thread (None: not measured): whether the threads pay where
    # the work is arithmetic; a one-token pass that reads the weights at the memory's pace on one thread as
    # on two says nothing about waiting threads (gemma-3-270m with patch simul-exact/4's tile kernels)
    draft_single_ms: float | None = None

    @property
    def c_draft(self) -> float | None:
        """c_L of Leviathan et al. (ICML 2023, Theorem 3.8): the draft model's one-token pass over the
        target's, both calibrated on the run's own prompt, model files and threads."""
        if self.draft_one_token_ms is None or self.one_token_ms <= 0:
            return None
        return self.draft_one_token_ms / self.one_token_ms

    def pass_ms(self, rows: int) -> float:
        """T(rows): milliseconds of a verification pass of ``rows`` rows, linear between the measured widths
        (from the one-token pass at 1 row), beyond the widest along the slope of its upper half."""
        if self.widths:
            points = [(1, self.one_token_ms), *sorted(self.widths)]
        else:
            points = [(1, self.one_token_ms), (self.draft, self.row_ms * self.draft)]
        last_n, last_t = points[-1]
        if rows >= last_n:
            mid_n, mid_t = min(points, key=lambda p: abs(p[0] - last_n / 2))
            slope = (last_t - mid_t) / (last_n - mid_n) if last_n > mid_n else 0.0
            return last_t + slope * (rows - last_n)
        for (n0, t0), (n1, t1) in itertools.pairwise(points):
            if rows <= n1:
                return t0 + (t1 - t0) * (rows - n0) / (n1 - n0)
        return last_t  # pragma: no cover - rows < last_n always meets a pair

    def run_row_cost(self, pass_rows: list[int]) -> float | None:
        """c_run: the cost per row of verification passes of these widths, in one-token passes."""
        rows = sum(n for n in pass_rows if n > 0)
        if rows <= 0 or self.one_token_ms <= 0:
            return None
        return sum(self.pass_ms(n) for n in pass_rows if n > 0) / (rows * self.one_token_ms)

    @property
    def c_min(self) -> float:
        return self.row_ms / self.one_token_ms if self.one_token_ms > 0 else float("nan")

    @property
    def efficiency(self) -> float | None:
        if self.one_token_single_ms is None or self.threads <= 1 or self.one_token_ms <= 0:
            return None
        return self.one_token_single_ms / (self.threads * self.one_token_ms)

    def problem(self) -> str | None:
        """Why the machine's per-pass overhead is out of line, or None.

        The threads should make a pass at least 1 + MIN_THREAD_GAIN x (threads - 1) times faster than one
        thread. Where the draft-row pass was timed on one thread too, that pass decides: a one-token pass can
        be bound by reading the weights, which more threads do not speed up, while a wide pass is bound by
        its arithmetic, which they do unless they wait for each other."""
        eff = self.efficiency
        if eff is None or self.one_token_single_ms is None:
            return None
        gain = self.one_token_single_ms / self.one_token_ms
        need = 1.0 + MIN_THREAD_GAIN * (self.threads - 1)
        if gain >= need:
            return None
        one_token = (
            f"a one-token pass took {self.one_token_ms:.1f} ms on {self.threads} threads against "
            f"{self.one_token_single_ms:.1f} ms on one ({gain:.2f}x faster, less than {need:.2f}x; "
            f"thread efficiency {eff:.2f})"
        )
        wide_ms = self.row_ms * self.draft
        if self.draft_single_ms is not None and wide_ms > 0:
            wide_gain = self.draft_single_ms / wide_ms
            if wide_gain >= need:
                return None  # bound by the memory, not by waiting
            one_token += (
                f", and a {self.draft}-row pass {wide_ms:.1f} ms against {self.draft_single_ms:.1f} ms "
                f"({wide_gain:.2f}x)"
            )
        return (
            one_token
            + ": the threads wait for each other more than they compute (OpenMP wake-ups, a busy core)"
        )

    def to_json(self) -> dict[str, Any]:
        eff = self.efficiency
        return {
            "threads": self.threads,
            "draft": self.draft,
            "one_token_ms": round(self.one_token_ms, 3),
            "row_ms": round(self.row_ms, 3),
            "c_min": round(self.c_min, 4),
            "one_token_single_ms": None
            if self.one_token_single_ms is None
            else round(self.one_token_single_ms, 3),
            "efficiency": None if eff is None else round(eff, 3),
            "widths": [[n, round(ms, 3)] for n, ms in self.widths],
            "problem": self.problem(),
            **({} if self.draft_single_ms is None else {"draft_single_ms": round(self.draft_single_ms, 3)}),
            # only with a draft model, so that other runs' records keep their keys
            **(
                {}
                if self.draft_one_token_ms is None
                else {
                    "draft_one_token_ms": round(self.draft_one_token_ms, 3),
                    "c_draft": round(self.c_draft or 0.0, 4),
                }
            ),
        }

    @classmethod
    def from_json(cls, data: Any) -> PassCosts | None:
        """The record back from run.json (``environment.pass_costs``); None when it is missing or damaged."""
        if not isinstance(data, Mapping):
            return None
        try:
            single = data.get("one_token_single_ms")
            widths = tuple((int(n), float(ms)) for n, ms in data.get("widths") or ())
            if any(n < 1 or not ms > 0 for n, ms in widths):
                return None
            costs = cls(
                threads=int(data["threads"]),
                one_token_ms=float(data["one_token_ms"]),
                row_ms=float(data["row_ms"]),
                draft=int(data["draft"]),
                one_token_single_ms=None if single is None else float(single),
                widths=tuple(sorted(widths)),
                draft_one_token_ms=None
                if data.get("draft_one_token_ms") is None
                else float(data["draft_one_token_ms"]),
                draft_single_ms=None
                if data.get("draft_single_ms") is None
                else float(data["draft_single_ms"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        if not (
            costs.one_token_ms > 0
            and costs.row_ms >= 0
            and np.isfinite([costs.one_token_ms, costs.row_ms]).all()
        ):
            return None
        if costs.draft_one_token_ms is not None and not (
            costs.draft_one_token_ms > 0 and np.isfinite(costs.draft_one_token_ms)
        ):
            return None
        if costs.draft_single_ms is not None and not (
            costs.draft_single_ms > 0 and np.isfinite(costs.draft_single_ms)
        ):
            return None
        return costs


def _best(repeats: int, measure: Callable[[], float]) -> float:
    return min(measure() for _ in range(repeats))


def _best_in_turns(repeats: int, measures: Mapping[int, Callable[[], float]]) -> dict[int, float]:
    """The best of ``repeats`` measurements of each, the measurements taking turns: round r measures every
    width once. A slow spell of the machine then costs each width at most the rounds it lasts, where
    measuring one width ``repeats`` times in a row let a spell of a few seconds take all of one width's
    (a 2-core VM put 3-row passes at 760 ms and 4-row ones at 61 ms that way)."""
    best = {key: float("inf") for key in measures}
    for _ in range(repeats):
        for key, measure in measures.items():
            best[key] = min(best[key], measure())
    return best


def calibrate(
    backend: Calibratable,
    single_thread: bool = True,
    passes: int = PASSES,
    draft: int = DRAFT,
    repeats: int = REPEATS,
    clock: Callable[[], float] = lane_wall,
    prompt_tokens: Sequence[int] | None = None,
) -> PassCosts:
    """Measure the backend's one-token pass and verified-row costs (see the module docstring) after
    ``prompt_tokens`` (a run passes its own prompt, as its decoder tokenizes it: a pass costs more after a
    longer context; None: PROMPT); the backend's cache is cleared before and after."""
    prompt = list(prompt_tokens) if prompt_tokens is not None else backend.tokenize(PROMPT, add_special=True)
    # A fixed draft of ordinary tokens: what a pass costs does not depend on which tokens they are.
    draft_tokens = [int(t) for t in np.resize(np.array(prompt[1:], dtype=np.int64), draft)]

    def one_token() -> float:
        return _one_token_pass(backend, prompt, passes, clock)

    def verify(rows: int) -> float:
        backend.reset()
        backend.eval(prompt)
        start = clock()
        backend.eval(draft_tokens[:rows], logits_from=0)
        return (clock() - start) * 1000.0

    try:
        widths = [n for n in sorted({*WIDTHS, draft}) if n <= draft]
        measures: dict[int, Callable[[], float]] = {1: one_token, **{n: partial(verify, n) for n in widths}}
        timed = _best_in_turns(repeats, measures)
        one = timed.pop(1)
        row = timed[draft] / draft
        single: float | None = None
        wide_single: float | None = None
        if single_thread and backend.n_threads > 1:
            backend.set_threads(1)
            try:
                alone = _best_in_turns(repeats, {1: one_token, draft: partial(verify, draft)})
                single, wide_single = alone[1], alone[draft]
            finally:
                backend.set_threads(backend.n_threads)
    finally:
        backend.reset()
    return PassCosts(
        backend.n_threads, one, row, draft, single, tuple(sorted(timed.items())), draft_single_ms=wide_single
    )


def _one_token_pass(
    backend: Calibratable, prompt: list[int], passes: int, clock: Callable[[], float]
) -> float:
    """Milliseconds per one-token pass, greedy from the end of ``prompt`` (the cache cleared first)."""
    backend.reset()
    rows = backend.eval(prompt, logits_from=len(prompt) - 1)
    token = int(np.argmax(rows[-1]))
    start = clock()
    for _ in range(passes):
        rows = backend.eval([token], logits_from=0)
        token = int(np.argmax(rows[-1]))
    return (clock() - start) / passes * 1000.0


def calibrate_draft(
    costs: PassCosts,
    draft: Calibratable,
    prompt_tokens: Sequence[int],
    passes: int = PASSES,
    repeats: int = REPEATS,
    clock: Callable[[], float] = lane_wall,
) -> PassCosts:
    """``costs`` with the draft model's one-token pass, measured as the target's was (best of ``repeats``
    runs of ``passes`` greedy passes after the same prompt: the draft shares the target's vocabulary); the
    draft's cache is cleared before and after."""
    try:
        ms = _best(repeats, partial(_one_token_pass, draft, list(prompt_tokens), passes, clock))
    finally:
        draft.reset()
    return dataclasses.replace(costs, draft_one_token_ms=ms)


def run_slowdown(costs: PassCosts, decode_seconds: float, decode_passes: int) -> float | None:
    """A method's mean one-token pass in the run over the calibrated one (None without passes)."""
    if decode_passes <= 0 or decode_seconds <= 0 or costs.one_token_ms <= 0:
        return None
    return (decode_seconds / decode_passes * 1000.0) / costs.one_token_ms

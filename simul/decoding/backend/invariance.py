"""Is a row's logit vector the same whether it is decoded alone or inside a forward pass of n rows?

llama.cpp picks its matrix kernels by the width of a pass: a one-token pass takes the vector kernels
(``vec_dot``/gemv on the CPU, MMVQ on CUDA), wider passes take others (llamafile's tinyBLAS, the repacked
K-quant gemm, the tiled Q6_K path, CUDA's MMQ and cuBLAS), and each adds up its products in its own order.
Greedy decoding then flips at near-ties, so a method that should reproduce re-translation (SSBD at beta 0,
an exact speculative decoder) does not, and a stream's outputs move with ``--parallel``.

``probe`` measures it the way ``../shared/probes/exact_probe.py`` does, on simul's own engine: greedy rows are
decoded one token at a time (the reference), then again in passes of n rows, and each row is compared with
its reference bit for bit. With ``companions`` > 0 every pass also carries as many other sequences of the
same context (their own prompts and tokens, cells interleaved in one cache), which is what ``--parallel``
does; the reference is still the single-sequence one.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from simul.decoding.backend.llama import LlamaBackend
from simul.decoding.backend.sequence import KVSequence, Logits

#: two translation prompts (few-shot, en -> de) whose greedy continuations the probe decodes
PROBE_PROMPTS: tuple[str, ...] = (
    "English: The weather is nice today.\nGerman: Das Wetter ist heute schön.\n"
    "English: The new diagnostic tool was tested by researchers at Stanford University last year.\nGerman:",
    "English: I would like a cup of tea, please.\nGerman: Ich hätte gern eine Tasse Tee, bitte.\n"
    "English: On Monday, scientists from the school of medicine announced a new test that sorts cells by "
    "type.\nGerman:",
)
#: what the companion sequences decode (with ``companions`` > 0)
COMPANION_PROMPT = "English: Good morning, how are you?\nGerman:"
WIDTHS: tuple[int, ...] = (1, 2, 3, 4, 5, 8, 16, 32)
#: put before each probe prompt by ``long_prompts``: enough examples that the cache passes 256 cells, where
#: llama.cpp's padded KV length (n_kv) grows from 256 to 512 and other attention paths take over
LONG_PREFIX = (
    "English: The museum opens at nine in the morning and closes at six in the evening.\n"
    "German: Das Museum öffnet um neun Uhr morgens und schließt um sechs Uhr abends.\n"
    "English: Our neighbours have two children who go to the same school as our daughter.\n"
    "German: Unsere Nachbarn haben zwei Kinder, die auf dieselbe Schule gehen wie unsere Tochter.\n"
    "English: The committee will publish its final report after the summer holidays.\n"
    "German: Der Ausschuss wird seinen Abschlussbericht nach den Sommerferien veröffentlichen.\n"
    "English: Please remember to switch off the lights when you leave the office.\n"
    "German: Bitte denken Sie daran, das Licht auszuschalten, wenn Sie das Büro verlassen.\n"
    "English: The train to Berlin was delayed by almost two hours because of the storm.\n"
    "German: Der Zug nach Berlin hatte wegen des Sturms fast zwei Stunden Verspätung.\n"
    "English: Many farmers in the region have started growing vegetables instead of wheat.\n"
    "German: Viele Bauern in der Region haben begonnen, Gemüse statt Weizen anzubauen.\n"
    "English: She has been learning to play the violin since she was seven years old.\n"
    "German: Sie lernt Geige, seit sie sieben Jahre alt ist.\n"
)


def long_prompts(prompts: Sequence[str] = PROBE_PROMPTS, repeat: int = 2) -> list[str]:
    """The probe prompts behind ``repeat`` copies of LONG_PREFIX (about 150 tokens each)."""
    return [LONG_PREFIX * repeat + p for p in prompts]


@dataclass(frozen=True)
class WidthResult:
    """Rows decoded in passes of ``width`` rows, against the same rows decoded one token at a time."""

    width: int
    rows: int
    bit_equal: int
    argmax_equal: int
    max_abs_diff: float
    pass_ms: float | None = None  # median time of one pass of ``width`` rows (``timing_repeats`` > 0)

    def to_json(self) -> dict[str, object]:
        return {
            "width": self.width,
            "rows": self.rows,
            "bit_equal": self.bit_equal,
            "argmax_equal": self.argmax_equal,
            "max_abs_diff": self.max_abs_diff,
            "pass_ms": None if self.pass_ms is None else round(self.pass_ms, 3),
        }


@dataclass(frozen=True)
class InvarianceReport:
    widths: list[WidthResult]
    companions: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        """Every row of every width bit-equal to its one-token reference (False when nothing was checked)."""
        return bool(self.widths) and all(w.bit_equal == w.rows for w in self.widths)

    @property
    def max_abs_diff(self) -> float:
        return max((w.max_abs_diff for w in self.widths), default=0.0)

    def to_json(self) -> dict[str, object]:
        return {
            "exact": self.exact,
            "max_abs_diff": self.max_abs_diff,
            "companions": self.companions,
            "widths": [w.to_json() for w in self.widths],
            "notes": list(self.notes),
        }

    def lines(self) -> list[str]:
        one = next((w.pass_ms for w in self.widths if w.width == 1), None)
        out = []
        for w in self.widths:
            cost = ""
            if w.pass_ms is not None:
                cost = f"  pass {w.pass_ms:7.2f} ms"
                if one:
                    cost += f" ({w.pass_ms / one:.2f} x one-token)"
            out.append(
                f"n={w.width:2d}: max|diff| {w.max_abs_diff:.3g}  bit-equal {w.bit_equal}/{w.rows}  "
                f"argmax equal {w.argmax_equal}/{w.rows}{cost}"
            )
        return out


def _greedy_reference(backend: LlamaBackend, prompt: list[int], rows: int) -> tuple[list[int], Logits]:
    """Decode ``rows`` tokens after ``prompt`` one at a time; returns the tokens and the logits row that
    followed each (row i: the logits after token i)."""
    seq = backend.sequence(0)
    seq.clear()
    first = backend.eval_many([(seq, prompt, len(prompt) - 1)])[0]
    assert first is not None
    token = int(np.argmax(first[-1]))
    tokens: list[int] = []
    out = []
    for _ in range(rows):
        tokens.append(token)
        row = backend.eval_many([(seq, [token], 0)])[0]
        assert row is not None
        out.append(row[0].copy())
        token = int(np.argmax(row[0]))
    return tokens, np.array(out)


def _companion_tokens(backend: LlamaBackend, companions: int) -> list[list[int]]:
    """Each companion's prompt: the same text behind 1, 2, ... extra words, so that their lengths differ
    and their cells interleave with the probed sequence's in the cache."""
    out = []
    for j in range(companions):
        text = "Well, " * (j + 1) + COMPANION_PROMPT
        out.append(backend.tokenize(text, add_special=True))
    return out


def _decode_in_passes(
    backend: LlamaBackend,
    prompt: list[int],
    tokens: list[int],
    width: int,
    companion_prompts: list[list[int]],
    after_reference: bool = False,
) -> Logits:
    """The rows of ``tokens`` decoded in passes of ``width`` (sequence 0), each pass also carrying a chunk of
    every companion's own tokens (sequences 1, 2, ...). ``after_reference``: sequence 0 holds ``prompt`` as
    :func:`_greedy_reference` evaluated it (one pass, the same as here) and what followed: truncated back to
    the prompt (exact) instead of evaluating it again, where the model's memory can."""
    probed = backend.sequence(0)
    if after_reference and not companion_prompts and probed.cache[: len(prompt)] == prompt:
        kept = probed.truncate(len(prompt)) and probed.cache == prompt
    else:
        kept = False
    others: list[KVSequence] = [backend.sequence(j + 1) for j in range(len(companion_prompts))]
    if not kept:
        backend.reset()
        first: list[tuple[KVSequence, Sequence[int], int | None]] = [(probed, prompt, len(prompt) - 1)]
        first += [(seq, p, None) for seq, p in zip(others, companion_prompts, strict=True)]
        backend.eval_many(first)
    rows: list[Logits] = []
    for start in range(0, len(tokens), width):
        chunk = tokens[start : start + width]
        requests: list[tuple[KVSequence, Sequence[int], int | None]] = [(probed, chunk, 0)]
        # the companions' tokens only fill the pass: their own prompts' tokens, again
        for seq, own in zip(others, companion_prompts, strict=True):
            requests.append((seq, _cycle(own, start, len(chunk)), None))
        got = backend.eval_many(requests)[0]
        assert got is not None
        rows.extend(r.copy() for r in got)
    return np.array(rows)


def _cycle(tokens: Sequence[int], start: int, n: int) -> list[int]:
    return [tokens[(start + i) % len(tokens)] for i in range(n)]


def _time_pass(backend: LlamaBackend, prompt: list[int], width: int, repeats: int) -> float:
    """Median milliseconds of one pass of ``width`` new rows after ``prompt`` (all rows with logits)."""
    seq = backend.sequence(0)
    times = []
    for _ in range(repeats):
        backend.reset()
        backend.eval_many([(seq, prompt, len(prompt) - 1)])
        t0 = time.perf_counter()
        backend.eval_many([(seq, _cycle(prompt, 0, width), 0)])
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000.0


#: the start-up check of a run (``self_check``): wide enough for the repacked gemm (4 rows and more, 5 with a
#: leftover row) and the tiled matmul (8 and more), short enough to take about a second on gemma-3-270m
SELF_CHECK_WIDTHS: tuple[int, ...] = (2, 5, 16)
SELF_CHECK_ROWS = 16


SHORT_PROMPT = "English: The weather is nice today.\nGerman:"


def self_check(backend: LlamaBackend) -> InvarianceReport:
    """A run's start-up check: 16 greedy rows after the first probe prompt, one token at a time and in passes
    of 2, 5 and 16 rows, on the run's own model and settings (recorded in run.json). In a context too small
    for that, a shorter prompt and fewer rows; in one too small for any, no widths and a note."""
    for prompt in (PROBE_PROMPTS[0], SHORT_PROMPT):
        room = backend.n_ctx - len(backend.tokenize(prompt, add_special=True)) - 1
        if room >= 2:
            rows = min(SELF_CHECK_ROWS, room)
            return probe(backend, prompts=[prompt], widths=SELF_CHECK_WIDTHS, rows=rows)
    return InvarianceReport([], notes=[f"not checked: a context of {backend.n_ctx} positions is too small"])


def probe(
    backend: LlamaBackend,
    prompts: Sequence[str] = PROBE_PROMPTS,
    widths: Sequence[int] = WIDTHS,
    rows: int = 40,
    companions: int = 0,
    timing_repeats: int = 0,
) -> InvarianceReport:
    """Compare rows decoded in passes of each width with the same rows decoded one token at a time.

    The backend is left with one sequence of its context size and an empty cache. With ``companions`` the
    context is reconfigured for 1 + companions sequences (one shared cache) for the batched passes; the
    one-token reference is decoded on a context of one sequence, as ``--parallel 1`` decodes.
    """
    if rows < 1:
        raise ValueError(f"rows must be at least 1, got {rows}")
    if any(w < 1 for w in widths):
        raise ValueError(f"widths must be positive, got {list(widths)}")
    n_ctx = backend.n_ctx
    backend.configure(1, n_ctx)
    encoded = [backend.tokenize(p, add_special=True) for p in prompts]
    for prompt in encoded:
        if len(prompt) + rows + 1 > n_ctx:
            raise ValueError(f"a probe of {len(prompt) + rows + 1} positions does not fit n_ctx={n_ctx}")
    # per width: rows, rows bit-equal, rows argmax-equal, max |diff|
    tally: list[list[float]] = [[0, 0, 0, 0.0] for _ in widths]

    def count(index: int, got: Logits, reference: Logits) -> None:
        diff = np.abs(got.astype(np.float64) - reference.astype(np.float64)).max(axis=1)
        tally[index][0] += len(got)
        tally[index][1] += int((diff == 0).sum())
        tally[index][2] += int((got.argmax(axis=1) == reference.argmax(axis=1)).sum())
        tally[index][3] = max(tally[index][3], float(diff.max()))

    if companions:
        refs = [_greedy_reference(backend, prompt, rows) for prompt in encoded]
        backend.configure(1 + companions, n_ctx)
        companion_prompts = _companion_tokens(backend, companions)
        for index, width in enumerate(widths):
            for prompt, (tokens, reference) in zip(encoded, refs, strict=True):
                count(index, _decode_in_passes(backend, prompt, tokens, width, companion_prompts), reference)
        backend.configure(1, n_ctx)
    else:
        # prompt by prompt: every width's passes follow the reference's own evaluation of the prompt
        for prompt in encoded:
            tokens, reference = _greedy_reference(backend, prompt, rows)
            for index, width in enumerate(widths):
                got = _decode_in_passes(backend, prompt, tokens, width, [], after_reference=True)
                count(index, got, reference)
    results = [
        WidthResult(width, int(t[0]), int(t[1]), int(t[2]), float(t[3]))
        for width, t in zip(widths, tally, strict=True)
    ]
    if timing_repeats > 0:
        results = [
            WidthResult(
                r.width,
                r.rows,
                r.bit_equal,
                r.argmax_equal,
                r.max_abs_diff,
                _time_pass(backend, encoded[0], r.width, timing_repeats),
            )
            for r in results
        ]
    backend.reset()
    return InvarianceReport(results, companions)

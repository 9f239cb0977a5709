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
        """Every row of every width bit-equal to its one-token reference."""
        return all(w.bit_equal == w.rows for w in self.widths)

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
) -> Logits:
    """The rows of ``tokens`` decoded in passes of ``width`` (sequence 0), each pass also carrying a chunk of
    every companion's own tokens (sequences 1, 2, ...)."""
    backend.reset()
    probed = backend.sequence(0)
    others: list[KVSequence] = [backend.sequence(j + 1) for j in range(len(companion_prompts))]
    first: list[tuple[KVSequence, Sequence[int], int | None]] = [(probed, prompt, len(prompt) - 1)]
    first += [(seq, p, None) for seq, p in zip(others, companion_prompts, strict=True)]
    backend.eval_many(first)
    rows: list[Logits] = []
    filler = 1000  # the companions' tokens: any valid ids will do, they only fill the pass
    for start in range(0, len(tokens), width):
        chunk = tokens[start : start + width]
        requests: list[tuple[KVSequence, Sequence[int], int | None]] = [(probed, chunk, 0)]
        requests += [(seq, list(range(filler, filler + len(chunk))), None) for seq in others]
        got = backend.eval_many(requests)[0]
        assert got is not None
        rows.extend(r.copy() for r in got)
    return np.array(rows)


def _time_pass(backend: LlamaBackend, prompt: list[int], width: int, repeats: int) -> float:
    """Median milliseconds of one pass of ``width`` new rows after ``prompt`` (all rows with logits)."""
    seq = backend.sequence(0)
    times = []
    for _ in range(repeats):
        backend.reset()
        backend.eval_many([(seq, prompt, len(prompt) - 1)])
        t0 = time.perf_counter()
        backend.eval_many([(seq, list(range(1000, 1000 + width)), 0)])
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000.0


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
    refs = []
    for prompt in encoded:
        if len(prompt) + rows + 1 > n_ctx:
            raise ValueError(f"a probe of {len(prompt) + rows + 1} positions does not fit n_ctx={n_ctx}")
        refs.append(_greedy_reference(backend, prompt, rows))
    companion_prompts: list[list[int]] = []
    if companions:
        backend.configure(1 + companions, n_ctx)
        companion_prompts = _companion_tokens(backend, companions)
    results = []
    for width in widths:
        n_rows = equal = argmax_equal = 0
        worst = 0.0
        for prompt, (tokens, reference) in zip(encoded, refs, strict=True):
            got = _decode_in_passes(backend, prompt, tokens, width, companion_prompts)
            diff = np.abs(got.astype(np.float64) - reference.astype(np.float64)).max(axis=1)
            n_rows += len(tokens)
            equal += int((diff == 0).sum())
            argmax_equal += int((got.argmax(axis=1) == reference.argmax(axis=1)).sum())
            worst = max(worst, float(diff.max()))
        results.append(WidthResult(width, n_rows, equal, argmax_equal, worst))
    if companions:
        backend.configure(1, n_ctx)
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

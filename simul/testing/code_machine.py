"""The weights of the tiny test model: a "code machine" whose choices never sit near a tie.

Random weights (simul.testing.tiny_gguf's ``random`` design) give logits whose top two are often within 1e-3
of each other, while llama.cpp's CPU kernels differ by up to about 1e-2 between thread counts (flash attention
accumulates in half precision) and between CPU families: such a model's outputs flip with the machine, and a
baseline decoded on one does not hold on another. These weights build a model whose every decision is taken
with a wide margin, by construction:

* every token t has a *code* c(t) in 0..K-1 (K = ``N_CODES``); its embedding is the unit vector of its code
  plus a constant dimension;
* layer 0 has two attention heads that attend, through RoPE alone, to the token exactly ``OFFSET`` positions
  back (query and key come from the constant dimension, and the score of that offset exceeds every other by
  ``ATTENTION_GAP``, so the softmax is one-hot to within e^-16), and copy that token's code into a second
  block of dimensions; everything else (the feed-forward blocks, layer 1) is zero;
* so the final hidden state is one of K x K vectors, for the pair a = c(current token), b = c(token OFFSET
  back), and the output matrix decides the next token from the pair: after a *branching* code a (a few of
  them) the pair's own token T(a, b), with the row ``s_T (u_a + u'_b)``; after any other code a its successor
  S(a), with the row ``2 s_S u_a``; a token that shares one code with the pair scores at most 1.4 against the
  winner's 2 s (s >= 0.76);
* two codes stop: after a token of code ``END_CODE`` (every sentence-final piece has it) comes EOS, and a
  token of code ``NEWLINE_CODE`` brings the newline ``OFFSET`` tokens later (the few-shot template stops
  there). The template's own words have neither, nor a branching code.

The first output tokens follow the successors from the template's last token, the same on every step, until
a branching code consults the token ``OFFSET`` back, which is in the source for the first ``OFFSET`` - 3 of
them: outputs keep a prefix from step to step and change after it, as a simultaneous translation does. Half of
the pairs are "uncertain" (their winner has probability below 0.2), so that SSBD's biased rule at beta 0.2
accepts a draft token that is not the argmax there and rejects it elsewhere.

:func:`smallest_margin` (the smallest top-1 minus top-2 logit over all pairs) and :func:`rule_slack` (how far
the biased rule at beta 0.2 is from its threshold, over all pairs and draft tokens) are what every decision of
the model has at least, far above the kernels' noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

N_CODES = 26  # K: codes of the current and of the attended token; 2K + 1 dimensions used
OFFSET = 12  # the attended token is this many positions back
END_CODE = 0  # the current token has it: EOS comes next
NEWLINE_CODE = 1  # the attended token has it: the newline comes next
BRANCHING = range(2, 6)  # after these codes the next token depends on the attended token too
CONST_DIM = -1  # the embedding dimension that is the same for every token (queries and keys read it)

ALPHA = 1.0  # the current token's code in the final hidden state
GAMMA = 1.0  # the attended token's code
BETA = 1.0  # the constant dimension
CERTAIN_SCALES = (1.0, 1.2)  # s of a successor or of a certain pair's token: its winner has probability > 0.5
UNCERTAIN_SCALES = (0.72, 0.74)  # s of an uncertain pair's token: its winner has probability < 0.2
UNCERTAIN_SHARE = 0.5  # of the pairs
EOS_WEIGHT = 3.5  # EOS after an END_CODE token: above every other row (2 x 1.4)
NEWLINE_WEIGHT = 4.5  # above EOS too, so that the two never tie
OUTPUT_SCALE = 1.0  # multiplies the output matrix (how peaked softmax is)
ATTENTION_GAP = (
    16.0  # the attention score of the wanted offset exceeds every other by this (in exponent units)
)
RULE_BETA = 0.2  # the biased rule kept clear of its threshold (the CI run's SSBD)
RULE_CLEARANCE = 0.03  # by at least this much probability

# Weights of RoPE's frequency pairs (head size 16, base 10000) in the attention score, from a linear
# programme that maximises the smallest gap between the score at OFFSET and at any other offset in 0..4095
# (as a share of their sum); the gap they give.
ROPE_SHARES = (0.432, 0.123, 0.136, 0.084, 0.079, 0.059, 0.088, 0.0)
ROPE_GAP = 0.2

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class CodeMachine:
    """The design drawn for one seed. Output token t has the row ``s[t] * (u_{row_a[t]} + u'_{row_b[t]})``, or
    ``2 s[t] u_{row_a[t]}`` for a successor (``row_b[t] == -1``); other tokens have none (-1, -1, 0)."""

    codes: I64  # c(t) for every token id
    row_a: I64
    row_b: I64
    scale: npt.NDArray[np.float64]
    eos_id: int
    newline_id: int
    n_embd: int  # the hidden state's RMS, which the output norm divides by, depends on it

    @cached_property
    def _rows(self) -> npt.NDArray[np.float64]:
        rows = np.zeros((len(self.codes), 2 * N_CODES))
        for token in np.flatnonzero(self.scale > 0):
            a, b = int(self.row_a[token]), int(self.row_b[token])
            if b < 0:
                rows[token, a] = 2.0 * self.scale[token]
            else:
                rows[token, a] = rows[token, N_CODES + b] = self.scale[token]
        rows[self.eos_id, END_CODE] = EOS_WEIGHT
        rows[self.newline_id, N_CODES + NEWLINE_CODE] = NEWLINE_WEIGHT
        return rows * OUTPUT_SCALE

    def pair_logits(self, a: int, b: int) -> npt.NDArray[np.float64]:
        """The logits of the final hidden state of pair (a, b), as llama.cpp computes them (to rounding)."""
        hidden = np.zeros(2 * N_CODES)
        hidden[a] = ALPHA
        hidden[N_CODES + b] = GAMMA
        rms = math.sqrt((ALPHA**2 + GAMMA**2 + BETA**2) / self.n_embd)
        return np.asarray(self._rows @ hidden / rms)

    def next_token(self, tokens: list[int]) -> int:
        """The greedy next token after ``tokens`` (at least OFFSET + 1 of them)."""
        return int(
            np.argmax(self.pair_logits(int(self.codes[tokens[-1]]), int(self.codes[tokens[-1 - OFFSET]])))
        )


def _probabilities(logits: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    q = np.exp(logits - logits.max())
    return np.asarray(q / q.sum())


def smallest_margin(machine: CodeMachine) -> float:
    """The smallest top-1 minus top-2 logit over every pair (a, b): what any decision of the model has."""
    smallest = math.inf
    for a in range(N_CODES):
        for b in range(N_CODES):
            top2 = np.sort(machine.pair_logits(a, b))[-2:]
            smallest = min(smallest, float(top2[1] - top2[0]))
    return smallest


def rule_slacks(machine: CodeMachine, beta: float = RULE_BETA) -> npt.NDArray[np.float64]:
    """Per pair (a, b), the smallest distance, in probability, of SSBD's biased rule from its threshold over
    the draft tokens j that are not the argmax: min_j |(1 - beta) q_j + beta - (1 - beta) q_best|."""
    slack = np.zeros((N_CODES, N_CODES))
    for a in range(N_CODES):
        for b in range(N_CODES):
            q = _probabilities(machine.pair_logits(a, b))
            best = int(np.argmax(q))
            others = np.delete(q, best)
            slack[a, b] = float(np.abs((1 - beta) * others + beta - (1 - beta) * q[best]).min())
    return slack


def rule_slack(machine: CodeMachine, beta: float = RULE_BETA) -> float:
    """The smallest of :func:`rule_slacks`."""
    return float(rule_slacks(machine, beta).min())


def draw(
    rng: np.random.Generator,
    n_vocab: int,
    candidates: list[int],
    endings: list[int],
    plain: list[int],
    eos_id: int,
    newline_id: int,
    n_embd: int,
) -> CodeMachine:
    """Draw a design: codes for every token, output tokens from ``candidates`` and their row scales.

    ``endings`` (sentence-final pieces) get END_CODE and are among the pairs' tokens, so that they occur;
    ``plain`` (the template's words) get a successor's code that does not stop, and are never an output. The
    successors form no cycle: the code of S(a) is a branching code, END_CODE or a successor code later in a
    drawn order, so every output reaches a branching code (and so depends on the source) or ends within
    a few tokens. Row scales are drawn again for the pairs whose biased rule at RULE_BETA comes within
    RULE_CLEARANCE of its threshold.
    """
    codes = rng.integers(2, N_CODES, size=n_vocab)
    stop = rng.random(n_vocab)
    codes[stop < 1.0 / N_CODES] = END_CODE
    codes[(stop >= 1.0 / N_CODES) & (stop < 2.0 / N_CODES)] = NEWLINE_CODE
    codes[endings] = END_CODE
    successors = [a for a in range(N_CODES) if a not in BRANCHING and a != END_CODE]
    order = [successors[i] for i in rng.permutation(len(successors))]
    codes[plain] = rng.choice([a for a in order[: len(order) // 2] if a != NEWLINE_CODE], size=len(plain))
    pairs = [(a, b) for a in BRANCHING for b in range(N_CODES) if b != NEWLINE_CODE]
    taken = set(endings) | set(plain)
    rest = [t for t in candidates if t not in taken]
    rest = [rest[i] for i in rng.permutation(len(rest))]
    if len(rest) < len(successors) + len(pairs) - len(endings):
        raise ValueError(
            f"{len(successors) + len(pairs)} output tokens are needed, {len(candidates)} are given"
        )
    row_a = np.full(n_vocab, -1, dtype=np.int64)
    row_b = np.full(n_vocab, -1, dtype=np.int64)
    for rank, (a, token) in enumerate(zip(order, rest, strict=False)):
        row_a[token] = a
        codes[token] = rng.choice([*BRANCHING, END_CODE, *order[rank + 1 :]])
    pair_tokens = endings + rest[len(successors) : len(successors) + len(pairs) - len(endings)]
    for index, token in zip(rng.permutation(len(pairs)), pair_tokens, strict=True):
        row_a[token], row_b[token] = pairs[index]
    scale = np.zeros(n_vocab)
    scale[rest[: len(successors)]] = rng.uniform(*CERTAIN_SCALES, size=len(successors))
    uncertain = rng.random(n_vocab) < UNCERTAIN_SHARE
    redraw = np.array(pair_tokens)
    for _ in range(50):
        scale[redraw] = np.where(
            uncertain[redraw],
            rng.uniform(*UNCERTAIN_SCALES, size=len(redraw)),
            rng.uniform(*CERTAIN_SCALES, size=len(redraw)),
        )
        machine = CodeMachine(codes, row_a, row_b, scale, eos_id, newline_id, n_embd)
        slack = rule_slacks(machine)
        close = {(a, b) for a, b in pairs if slack[a, b] < RULE_CLEARANCE}
        if not close:
            return machine
        redraw = np.array([t for t in pair_tokens if (row_a[t], row_b[t]) in close])
    raise RuntimeError("the biased rule stays near its threshold for some pairs; try another seed")


def weights(machine: CodeMachine, n_embd: int, n_head: int, n_layer: int, n_ff: int) -> dict[str, F32]:
    """The tensors of the model (names as llama.cpp's llama architecture reads them), numpy (out, in)."""
    head_dim = n_embd // n_head
    if n_embd < 2 * N_CODES + 1 or head_dim != 2 * len(ROPE_SHARES) or n_head < 2 or 2 * head_dim < N_CODES:
        raise ValueError(
            f"the code machine needs n_embd >= {2 * N_CODES + 1} and heads of {2 * len(ROPE_SHARES)}"
        )
    n_vocab = len(machine.codes)
    const = n_embd + CONST_DIM
    embd = np.zeros((n_vocab, n_embd))
    embd[np.arange(n_vocab), machine.codes] = ALPHA
    embd[:, const] = BETA
    unit = 1.0 / math.sqrt((ALPHA**2 + BETA**2) / n_embd)  # the normalised embedding's value of 1.0

    # RoPE-only attention OFFSET positions back: per frequency pair i, query r_i (1, 0) and key r_i (cos, sin)
    # of angle OFFSET * theta_i, so that the score is sum_i r_i^2 cos(theta_i (delta - OFFSET)), delta = the
    # query's position minus the key's, and the r_i^2 = amplitude * ROPE_SHARES[i] keep it at least
    # ROPE_GAP * amplitude below its peak at every other delta; llama.cpp scales scores by 1/sqrt(head size).
    thetas = 10000.0 ** (-2.0 * np.arange(head_dim // 2) / head_dim)
    amplitude = ATTENTION_GAP * math.sqrt(head_dim) / ROPE_GAP
    radius = np.sqrt(amplitude * np.array(ROPE_SHARES))
    q_head = np.zeros(head_dim)
    k_head = np.zeros(head_dim)
    q_head[0::2] = radius
    k_head[0::2] = radius * np.cos(OFFSET * thetas)
    k_head[1::2] = radius * np.sin(OFFSET * thetas)
    wq = np.zeros((n_embd, n_embd))
    wk = np.zeros((n_embd, n_embd))
    wv = np.zeros((n_embd, n_embd))
    wo = np.zeros((n_embd, n_embd))
    for head in range(2):  # head 0 carries codes 0..15, head 1 the rest (value dimension = code)
        rows = slice(head * head_dim, (head + 1) * head_dim)
        wq[rows, const] = q_head / (BETA * unit)
        wk[rows, const] = k_head / (BETA * unit)
    for code in range(N_CODES):
        wv[code, code] = 1.0
        wo[N_CODES + code, code] = GAMMA / (ALPHA * unit)
    out = np.zeros((n_vocab, n_embd))
    out[:, : 2 * N_CODES] = machine._rows

    zero = np.zeros((n_embd, n_embd))
    tensors: dict[str, F32] = {"token_embd.weight": _f32(embd)}
    for layer in range(n_layer):
        first = layer == 0
        prefix = f"blk.{layer}"
        tensors[f"{prefix}.attn_norm.weight"] = _f32(np.ones(n_embd))
        tensors[f"{prefix}.attn_q.weight"] = _f32(wq if first else zero)
        tensors[f"{prefix}.attn_k.weight"] = _f32(wk if first else zero)
        tensors[f"{prefix}.attn_v.weight"] = _f32(wv if first else zero)
        tensors[f"{prefix}.attn_output.weight"] = _f32(wo if first else zero)
        tensors[f"{prefix}.ffn_norm.weight"] = _f32(np.ones(n_embd))
        tensors[f"{prefix}.ffn_gate.weight"] = _f32(np.zeros((n_ff, n_embd)))
        tensors[f"{prefix}.ffn_up.weight"] = _f32(np.zeros((n_ff, n_embd)))
        tensors[f"{prefix}.ffn_down.weight"] = _f32(np.zeros((n_embd, n_ff)))
    tensors["output_norm.weight"] = _f32(np.ones(n_embd))
    tensors["output.weight"] = _f32(out)
    return tensors


def rope_gap(offset: int = OFFSET, head_dim: int = 2 * len(ROPE_SHARES), positions: int = 4096) -> float:
    """The smallest gap, as a share of the peak, between the attention score at ``offset`` and at any other
    offset in 0..positions-1, with ROPE_SHARES (what ROPE_GAP promises)."""
    thetas = 10000.0 ** (-2.0 * np.arange(head_dim // 2) / head_dim)
    deltas = np.array([d for d in range(positions) if d != offset])
    scores = np.cos(np.outer(deltas - offset, thetas)) @ np.array(ROPE_SHARES)
    return float(sum(ROPE_SHARES) - scores.max())


def _f32(values: npt.NDArray[np.float64]) -> F32:
    return np.ascontiguousarray(values, dtype=np.float32)

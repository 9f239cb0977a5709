"""SSBD's acceptance rule (SPEC "Decoding one stream"): is a draft token kept under the biased mixture? (The
rule objects the decoder uses are in simul.decoding.methods.rules.)"""

from __future__ import annotations

import numpy as np

from simul.decoding.backend import Logits


def accepts(row: Logits, token: int, beta: float) -> bool:
    """True when ``token`` is the argmax of (1 - beta) * softmax(row) + beta * onehot(token); ties accept.

    Equivalent test without building the mixture: with q = softmax(row) and b the best other token,
    accept iff (1 - beta) * q[token] + beta >= (1 - beta) * q[b], i.e. q[b] - q[token] <= beta / (1 - beta).
    The softmax normaliser is only computed when the draft token is not already the argmax.
    """
    best = int(np.argmax(row))
    if best == token:
        return True
    top = float(row[best])
    own = float(row[token])
    if own >= top:  # an exact tie with the argmax
        return True
    if beta <= 0.0:
        return False
    if beta >= 0.5:  # q[b] - q[token] <= 1 <= beta / (1 - beta)
        return True
    z = float(np.exp(row - np.float32(top)).sum(dtype=np.float64))
    gap = (1.0 - np.exp(own - top)) / z  # q[best] - q[token]
    return bool(gap <= beta / (1.0 - beta))

"""Normalized erasure (NE): how much already shown output is taken back.

Formula (SPEC "Metrics"; Arivazhagan et al., 2020, "Re-translation versus Streaming for Simultaneous
Translation", IWSLT, section 3.1; the SSBD paper's NE):

    erasure(o_(t-1), o_t) = |o_(t-1)| - |LCP(o_(t-1), o_t)|
    NE = sum over streams and steps of erasure / sum over streams of |o_final|

with lengths in tokens of a fixed NE tokenizer and LCP the longest common token prefix. The first step of a
stream erases nothing (o_0 is empty). This *pooled* NE is the one of Arivazhagan et al. and of simulstream's
``NormalizedErasure`` (deleted tokens over final tokens, summed over the corpus).

The SSBD reference implementation's ``bench/score.py`` (llama.cpp ``examples/self-spec-bias``) averages per
stream instead:

    NE_mean = (1 / S) * sum over streams s of [sum over steps of erasure / |o_final,s|]

with a stream's term 0 when its final output is empty. simul reports both, labelled ``ne`` and ``ne_mean``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from simul.common.sequences import common_prefix_length


def erasure(previous: Sequence[str], current: Sequence[str]) -> int:
    """Tokens of ``previous`` that ``current`` does not keep: |prev| - |LCP(prev, cur)|."""
    return len(previous) - common_prefix_length(previous, current)


def stream_erasure(outputs: Iterable[Sequence[str]]) -> tuple[int, int]:
    """(total erasure, final length) of one stream's tokenized outputs in step order."""
    previous: Sequence[str] = ()
    total = 0
    for current in outputs:
        total += erasure(previous, current)
        previous = current
    return total, len(previous)


@dataclass(frozen=True)
class NE:
    erased: int
    final_tokens: int

    mean: float = 0.0  # the per-stream mean (SSBD reference), see the module docstring

    @property
    def value(self) -> float:
        return self.erased / self.final_tokens if self.final_tokens else 0.0


def normalized_erasure(streams: Iterable[Iterable[Sequence[str]]]) -> NE:
    """NE over streams, each given as its tokenized outputs in step order."""
    erased = 0
    final = 0
    per_stream: list[float] = []
    for outputs in streams:
        e, n = stream_erasure(outputs)
        erased += e
        final += n
        per_stream.append(e / n if n else 0.0)
    mean = sum(per_stream) / len(per_stream) if per_stream else 0.0
    return NE(erased=erased, final_tokens=final, mean=mean)

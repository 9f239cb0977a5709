"""Many streams per forward pass: one llama.cpp context with N sequences, one batch for every active stream.

Each stream is a step machine (see simul.decoding.passes) that runs on its own sequence. At every round the
scheduler collects what each active machine needs next (the new part of a prompt, a draft to verify, or one
decoded token), makes one forward pass of all of it with logits only at the rows asked for, and sends each
machine its rows. Truncations happen at once on the machine's own sequence (``llama_memory_seq_rm`` with its
sequence id), leaving the others intact. A finished stream frees its sequence for the next one. The
sequences share one cache (see LlamaBackend._create_context), so that llama_decode computes the whole batch as
one micro-batch rather than one per group of equally long requests.

With a draft model loaded beside the target, each stream also owns the draft context's sequence of the same
index (its ``partner``, simul.decoding.draft_model): in a round, the machines that ask for a pass of the draft
model (``Eval.draft``) share one forward pass of it, made before the target's pass of the others.

In fast mode the logits of a batched pass can differ in the last bits from a pass of one sequence (the
kernels cut the work differently, and where in the shared cache a sequence's cells lie sets the order of the
attention's sums), so outputs under N > 1 can differ from N = 1 at near-ties; exact mode keeps each
sequence's cells in order in a region of its own and gives N = 1's outputs (simul.decoding.backend.exactness).
Fast mode's outputs are still a function of the stream file, its order, N, the method, the model and the
settings: the schedule is deterministic, so a re-run gives the same outputs (tested); within one N, every
method sees the same streams.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from simul.decoding.backend import LlamaBackend, Logits
from simul.decoding.backend.sequence import KVSequence
from simul.decoding.passes import Eval, Passes, sequence_for

K = TypeVar("K")
R = TypeVar("R")

Job = tuple[K, Callable[[KVSequence], Passes[R]]]


@dataclass
class _Active(Generic[K, R]):
    key: K
    machine: Passes[R]
    seq: KVSequence
    request: Eval


class BatchScheduler(Generic[K, R]):
    """Runs jobs (a key and a step machine to start on a sequence) on the backend's sequences, batched."""

    def __init__(self, backend: LlamaBackend) -> None:
        self.backend = backend
        self.passes = 0  # forward passes of the target model made, for throughput figures
        self.draft_passes = 0  # and of the draft model

    def _round(self, active: list[_Active[K, R]]) -> list[Logits | None]:
        """One round: a forward pass of the draft model for the machines that asked for one (on their
        sequences' draft partners), then one of the target for the others; each machine's rows, in order.
        The two models have contexts of their own, so the rows of both passes stay valid together."""
        rows: list[Logits | None] = [None] * len(active)
        for draft in (True, False):
            picked = [i for i, a in enumerate(active) if a.request.draft == draft]
            if not picked:
                continue
            requests = [
                (
                    sequence_for(active[i].request, active[i].seq),
                    active[i].request.tokens,
                    active[i].request.logits_from,
                )
                for i in picked
            ]
            host = requests[0][0].backend
            for i, row in zip(picked, host.eval_many(requests), strict=True):
                rows[i] = row
            if draft:
                self.draft_passes += 1
            else:
                self.passes += 1
        return rows

    def run(self, jobs: Iterable[Job[K, R]], on_done: Callable[[K, R], None]) -> None:
        """Run every job; ``on_done(key, result)`` is called as each finishes (not in job order)."""
        free = list(reversed(self.backend.sequences))
        pending: Iterator[Job[K, R]] = iter(jobs)
        active: list[_Active[K, R]] = []
        exhausted = False

        def admit() -> None:
            nonlocal exhausted
            while free and not exhausted:
                try:
                    key, start = next(pending)
                except StopIteration:
                    exhausted = True
                    return
                seq = free.pop()
                machine = start(seq)
                try:
                    request = next(machine)
                except StopIteration as done:
                    free.append(seq)
                    on_done(key, done.value)
                    continue
                active.append(_Active(key, machine, seq, request))

        admit()
        while active:
            rows = self._round(active)
            running: list[_Active[K, R]] = []
            finished: list[tuple[_Active[K, R], R]] = []
            # Every machine reads its rows before the next forward pass; new streams are admitted after all
            # have been served, because starting one evaluates its canonical prefix (a pass of its own).
            for job, row in zip(active, rows, strict=True):
                try:
                    job.request = job.machine.send(row)
                    running.append(job)
                except StopIteration as done:
                    finished.append((job, done.value))
            active = running
            for job, value in finished:
                free.append(job.seq)
                on_done(job.key, value)
            admit()

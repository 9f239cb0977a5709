"""The stream decoder (SPEC "Decoding one stream"): RT, SSBD(beta), CD, output and display-only mask-k.

All are greedy. Each step builds the prompt for the current source prefix, keeps the longest common token
prefix of the KV cache, evaluates the rest of the prompt, and then:

* RT decodes from scratch after the prompt;
* SSBD takes the previous output as a draft D of m tokens and verifies it against the logits p_0..p_m
  (p_0 from the prompt's last position, p_1..p_m from one forward pass over D). D_i is accepted while it is
  the argmax of p'_i = (1 - beta) * softmax(p_i) + beta * onehot(D_i) (ties accept). At the first rejection d
  the cache is truncated after D_0..D_(d-1), the next token is the argmax of p_d (already computed) and
  greedy decoding resumes. When D_0 is already rejected by p_0, the pass over D would be wasted and is
  skipped; the outcome is the same.
* CD keeps the previous output unchanged: it evaluates it under the new prompt (logits only at its end)
  and appends.

Timing follows the paper: ``t_prompt`` covers building, tokenizing and evaluating the prompt; ``t_gen``
starts after it and includes the verification pass.

The decoder is a step machine: ``stream_steps`` is a generator that yields each forward pass it needs
(:class:`~simul.decoding.passes.Eval`) and receives its logits, so the same code runs alone
(:func:`~simul.decoding.passes.run_alone`, one pass at a time) or batched with other streams
(simul.decoding.scheduler). Truncations act on the stream's own sequence at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from simul.common.errors import SimulError
from simul.common.languages import get_language
from simul.common.text import complete_prefix, decode_text
from simul.decoding import trace
from simul.decoding.acceptance import accepts
from simul.decoding.backend import ContextOverflowError, LlamaBackend, Logits
from simul.decoding.backend.sequence import KVSequence
from simul.decoding.display.local_agreement import local_agreement
from simul.decoding.display.mask import hide_last
from simul.decoding.drafts import find_ngram, is_ending_piece
from simul.decoding.longform.policy import WindowPolicy
from simul.decoding.longform.talk import talk_positions_needed, talk_steps
from simul.decoding.passes import Eval, Passes, run_alone
from simul.decoding.records import StepRecord, StreamResult
from simul.machine import clock
from simul.request.methods import Method
from simul.request.templates import Prompt, Template
from simul.streams.format import Stream


class StreamDecoder:
    """Decodes streams step by step with one method on one backend."""

    def __init__(
        self,
        backend: LlamaBackend,
        template: Template,
        method: Method,
        max_len_ratio: float = 2.0,
        max_len_slack: int = 10,
        fuse: bool = False,
        verify_chunk: int = 0,
        window: WindowPolicy | None = None,
    ) -> None:
        self.backend = backend
        self.template = template
        self.method = method
        self.max_len_ratio = max_len_ratio
        self.max_len_slack = max_len_slack
        # Hot-path options (they do not change the algorithm, only how the forward passes are cut):
        # ``fuse`` evaluates the rest of the prompt and the draft in one pass (the pass then counts as
        # generation time, so the paper's TPS becomes a conservative figure); ``verify_chunk`` verifies long
        # drafts in chunks of that many tokens and stops at the first rejection (0: the whole draft at once).
        self.fuse = fuse
        self.verify_chunk = verify_chunk
        # How long-form streams (whole talks) are cut into windows (simul.decoding.longform).
        self.window = window or WindowPolicy()

    # -- prompt ---------------------------------------------------------------------------------------------

    def prompt_for(self, stream: Stream, source: str, context: Sequence[tuple[str, str]] = ()) -> Prompt:
        return self.template.render(get_language(stream.src), get_language(stream.tgt), source, context)

    def tokenize_prompt(self, prompt: Prompt) -> list[int]:
        """Tokenize the prompt as one text, unless the source holds special-token text.

        One text keeps the model's natural tokenization across the template/source boundary. A source whose
        text would parse as special tokens (``<end_of_turn>``) is tokenized on its own, as plain text.
        """
        backend = self.backend
        plain = backend.tokenize(prompt.source, parse_special=False)
        special = backend.tokenize(prompt.source, parse_special=True)
        if plain == special:
            return backend.tokenize(prompt.text, add_special=True, parse_special=True)
        return (
            backend.tokenize(prompt.before, add_special=True, parse_special=True)
            + plain
            + backend.tokenize(prompt.after, parse_special=True)
        )

    def start_prefix(self, stream: Stream) -> list[int]:
        """The tokens every stream of this language pair starts from: the template text before the source,
        without its last token (which may merge with the source's first word in the prompt's tokenization).
        """
        before = self.prompt_for(stream, "").before
        return self.backend.tokenize(before, add_special=True, parse_special=True)[:-1]

    def max_output_tokens(self, source: str) -> int:
        """The length cap: ``max_len_ratio`` times the source's token count plus ``max_len_slack``."""
        n_src = len(self.backend.tokenize(source))
        return int(self.max_len_ratio * n_src) + self.max_len_slack

    def positions_needed(self, stream: Stream) -> int:
        """The most KV positions any step of ``stream`` can need: its prompt plus the output length cap
        (for a long-form stream, a bound over its windows: simul.decoding.longform.talk_positions_needed)."""
        if stream.longform:
            return talk_positions_needed(self, stream, self.window)
        need = 0
        for step in stream.steps:
            n_prompt = len(self.tokenize_prompt(self.prompt_for(stream, step.source)))
            need = max(need, n_prompt + self.max_output_tokens(step.source))
        return need

    def check_fits(self, stream: Stream) -> None:
        """Raise ContextOverflowError naming the stream when any step cannot fit the context window."""
        if stream.longform:
            need = self.positions_needed(stream)
            if need > self.backend.n_ctx:
                raise ContextOverflowError(
                    f"talk {stream.id!r}: a window of up to {self.window.max_window} words with "
                    f"{self.window.context_sentences} context sentence(s) may need {need} positions, but the "
                    f"context window is {self.backend.n_ctx}",
                    needed=need,
                    remedy=" or lower --max-window / --context-sentences",
                )
            return
        for index, step in enumerate(stream.steps):
            n_prompt = len(self.tokenize_prompt(self.prompt_for(stream, step.source)))
            need = n_prompt + self.max_output_tokens(step.source)
            if need > self.backend.n_ctx:
                raise ContextOverflowError(
                    f"stream {stream.id!r} step {index}: a prompt of {n_prompt} tokens plus up to "
                    f"{need - n_prompt} output tokens needs {need} positions, but the context window is "
                    f"{self.backend.n_ctx}",
                    needed=need,
                    remedy=" or split the stream",
                )

    # -- one stream -----------------------------------------------------------------------------------------

    def decode(self, stream: Stream, seq: KVSequence | None = None) -> StreamResult:
        """Decode ``stream`` on ``seq`` (default: sequence 0), one forward pass at a time."""
        seq = seq or self.backend.sequence(0)
        return run_alone(self.stream_steps(stream, seq), seq)

    def stream_steps(self, stream: Stream, seq: KVSequence) -> Passes[StreamResult]:
        """The step machine of one stream: yields the forward passes it needs, returns the result."""
        if stream.longform:
            return (yield from talk_steps(self, stream, seq, self.window))
        result = StreamResult(stream_id=stream.id, method=self.method)
        # Every stream starts from the same state, whatever ran before (see KVSequence.start_from); within
        # the stream, each step keeps what it can of the previous step's cache.
        seq.start_from(self.start_prefix(stream))
        draft: list[int] = []
        unspaced = get_language(stream.tgt).unspaced
        for index, step in enumerate(stream.steps):
            record = yield from self.step_passes(stream, index, draft if self.method.uses_draft else [], seq)
            result.steps.append(record)
            if self.method.display == "local-agreement" and not step.final:
                outputs = [s.output for s in result.steps]
                record.display = local_agreement(outputs, self.method.agreement, unspaced)
            output = record.output_ids
            k = self.method.mask_k
            if k and self.method.mask == "output" and not step.final:
                draft = hide_last(output, k)
            else:
                draft = list(output)
        return result

    def decode_step(
        self, stream: Stream, index: int, draft: Sequence[int], seq: KVSequence | None = None
    ) -> StepRecord:
        """One step on its own (the cache of ``seq`` as it is)."""
        seq = seq or self.backend.sequence(0)
        return run_alone(self.step_passes(stream, index, draft, seq), seq)

    def step_passes(
        self,
        stream: Stream,
        index: int,
        draft: Sequence[int],
        seq: KVSequence,
        context: Sequence[tuple[str, str]] = (),
    ) -> Passes[StepRecord]:
        """One step: ``context`` holds earlier (source, target) pairs for the prompt (long-form windows)."""
        backend = self.backend
        step = stream.steps[index]
        method = self.method
        t0 = clock.wall()
        prompt = self.tokenize_prompt(self.prompt_for(stream, step.source, context))
        max_len = self.max_output_tokens(step.source)
        if len(prompt) + max_len > seq.n_ctx:
            self.check_fits(stream)  # raises with the full explanation
            raise ContextOverflowError(
                f"stream {stream.id!r} step {index}: {len(prompt) + max_len} positions do not fit this "
                f"sequence's share of the context ({seq.n_ctx}); lower --parallel or raise --n-ctx"
            )
        draft = list(draft[:max_len])
        gen = _Generation(max_len=max_len)
        if trace.current is not None:
            gen.where = (stream.id, index, method.key)
        unbiased_from = len(draft)
        if draft and not step.final and method.ending != "keep":
            ending = self._ending_length(draft)
            gen.ending_tokens = ending
            if method.ending == "reopen":
                draft = draft[: len(draft) - ending]
            else:
                unbiased_from = len(draft) - ending
        reused = seq.reuse_prefix(prompt)
        pending = prompt[reused:]
        fused = self.fuse and bool(draft) and method.name != "rt"
        cd_draft = method.name == "cd" and bool(draft)
        rows: Logits | None = None
        te = clock.wall()
        if not fused:
            rows = yield Eval(pending, None if cd_draft else len(pending) - 1)
        t1 = clock.wall()
        t_prompt_eval = 0.0 if fused else t1 - te
        lead = pending if fused else []

        if method.name == "rt" or not draft:
            assert rows is not None
            yield from self._continue(rows[0], gen, None, seq)
        elif method.name == "cd":
            te = clock.wall()
            tokens = [*lead, *draft]
            rows = yield Eval(tokens, len(tokens) - 1)
            gen.t_verify += clock.wall() - te
            gen.verify_rows += len(draft)
            assert rows is not None
            gen.output.extend(draft)
            gen.accepted = len(draft)
            if len(gen.output) >= max_len:
                gen.stop = "length"
            else:
                yield from self._continue(rows[0], gen, None, seq)
        else:
            assert method.beta is not None
            first = rows[0] if rows is not None else None
            yield from self._verify_and_continue(first, draft, method.beta, unbiased_from, gen, lead, seq)
        t2 = clock.wall()

        output = gen.output
        data = backend.detokenize(output)
        text = decode_text(data)
        k = method.mask_k
        shown = output if (step.final or not k) else hide_last(output, k)
        display = text if shown is output else decode_text(backend.detokenize(shown))
        return StepRecord(
            step=index,
            source=step.source,
            final=step.final,
            time_ms=step.time_ms,
            prompt_tokens=len(prompt),
            reused_tokens=reused,
            processed_tokens=len(pending),
            draft_tokens=len(draft),
            accepted=gen.accepted,
            output_ids=output,
            output=text,
            display=display,
            accepted_chars=_accepted_chars(data, backend.detokenize(output[: gen.accepted]), text),
            stop=gen.stop,
            t_prompt=t1 - t0,
            t_gen=t2 - t1,
            ending_tokens=gen.ending_tokens,
            resync_drafted=gen.resync_drafted,
            resync_accepted=gen.resync_accepted,
            t_prompt_eval=t_prompt_eval,
            t_verify=gen.t_verify,
            t_decode=gen.t_decode,
            verify_rows=gen.verify_rows,
            decode_passes=gen.decode_passes,
        )

    # -- decoding primitives --------------------------------------------------------------------------------

    def _ending_length(self, draft: Sequence[int]) -> int:
        """How many tokens at the end of ``draft`` are sentence-final punctuation or closing quotes."""
        n = 0
        while n < len(draft) and is_ending_piece(self.backend.piece(draft[len(draft) - 1 - n])):
            n += 1
        return n

    def _stop_reason(self, token: int) -> str | None:
        if self.backend.is_eog(token):
            return "eog"
        if self.template.stop_at_newline and b"\n" in self.backend.piece(token):
            return "newline"
        return None

    def _verify(
        self,
        first: Logits | None,
        draft: Sequence[int],
        beta: float,
        unbiased_from: int,
        gen: _Generation,
        lead: Sequence[int],
        seq: KVSequence,
    ) -> Passes[tuple[int, Logits]]:
        """Verify ``draft`` and keep exactly its accepted prefix in the cache.

        ``first`` holds the logits for the draft's first position (p_0); the draft itself goes through one
        forward pass (or one per ``verify_chunk`` tokens, stopping at the first rejection), so the logits
        p_1..p_m come with its keys and values. With ``lead`` (the rest of the prompt, when fused) p_0 comes
        from the same pass and ``first`` is None. D_i is accepted while it is the argmax of the biased
        mixture (see :func:`accepts`); tokens from ``unbiased_from`` on are verified without the bias.
        Returns the accepted length d and p_d, the logits for the next position: no extra forward pass.
        """
        m = len(draft)
        chunk = self.verify_chunk if self.verify_chunk > 0 else m
        # With beta >= 0.5 a biased draft token is accepted whatever the logits say (see accepts), so those
        # positions need no logits: only the rows from the first unbiased position on are computed.
        certain = unbiased_from if beta >= 0.5 else 0

        def bias(i: int) -> float:
            return beta if i < unbiased_from else 0.0

        def check(i: int, row: Logits | None) -> bool:
            """Is draft[i] kept? ``row`` is p_i; positions before ``certain`` are kept without one."""
            token = draft[i]
            kept = i < certain or accepts(cast(Logits, row), token, bias(i))
            if trace.current is not None:
                trace.record(trace.VERIFY, gen.where, None if i < certain else row, token, bias(i), kept)
            return kept

        row = first
        pos = 0  # draft[:pos] is accepted and in the cache; ``row`` (when known) is p_pos
        while pos < m:
            if row is not None and not check(pos, row):
                return pos, row
            part = draft[pos : pos + chunk]
            head = list(lead) if pos == 0 else []
            end = pos + len(part)
            # p_i comes from batch index len(head) - 1 + (i - pos); the first row asked for is p_i0
            i0 = max(pos if head else pos + 1, min(certain, end))
            base = len(head) - 1 - pos
            te = clock.wall()
            rows = yield Eval([*head, *part], base + i0)
            gen.t_verify += clock.wall() - te
            gen.verify_rows += len(part)
            assert rows is not None

            def p(i: int, rows: Logits = rows, i0: int = i0) -> Logits:
                return cast(Logits, rows[i - i0])

            for i in range(pos if head else pos + 1, end):
                if not check(i, p(i) if i >= certain else None):
                    self._truncate(seq, len(seq.cache) - (end - i))
                    return i, p(i)
            pos = end
            row = p(pos)
        assert row is not None
        return m, row

    def _truncate(self, seq: KVSequence, n: int) -> None:
        if not seq.truncate(n):
            raise SimulError(
                f"{self.backend.model_path}: this model's cache cannot drop part of a sequence, which SSBD "
                "needs; use --method rt, or a transformer model"
            )

    def _verify_and_continue(
        self,
        first: Logits | None,
        draft: list[int],
        beta: float,
        unbiased_from: int,
        gen: _Generation,
        lead: Sequence[int],
        seq: KVSequence,
    ) -> Passes[None]:
        """SSBD: verify ``draft`` with bias ``beta``, keep the accepted prefix, resume greedy decoding."""
        d, row = yield from self._verify(first, draft, beta, unbiased_from, gen, lead, seq)
        gen.output.extend(draft[:d])
        gen.accepted = d
        if d >= gen.max_len:
            gen.stop = "length"
            return
        rest = draft[d:] if self.method.resync and d < len(draft) else None
        target = draft[d:] if self.method.target_bias and d < len(draft) else None
        yield from self._continue(row, gen, rest, seq, target)

    def _continue(
        self,
        row: Logits,
        gen: _Generation,
        rest: list[int] | None,
        seq: KVSequence,
        target: list[int] | None = None,
    ) -> Passes[None]:
        """Greedy decoding from ``row`` (logits for the next position) until a stop token or the cap.

        With re-synchronisation on, ``rest`` is what remains of the previous output after the divergence:
        whenever the last n generated tokens occur in it, what followed them there is verified as a new draft.

        With a target bias (``target``: the rejected draft from D_d on), the first token is the model's own
        (it replaces D_d); each later token is ``target[j]`` while that is the argmax of the biased mixture
        (see :func:`accepts`), j advancing by one per kept token, and the bias ends at the first token that
        differs (the SSBD reference's target sampler).
        """
        n = self.method.resync
        beta = self.method.beta or 0.0
        target_beta = self.method.target_bias
        # index into ``target`` of the token the next one is biased toward (None: no bias); -1 for the
        # replacement of D_d, which is the model's own pick
        biased = -1 if target else None
        output = gen.output
        while True:
            token = int(np.argmax(row))
            picked = True  # the token is the argmax (not a target-biased one)
            if target is not None and biased is not None:
                if biased < 0:
                    biased = 0
                else:
                    kept = accepts(row, target[biased], target_beta)
                    if trace.current is not None:
                        trace.record(trace.TARGET, gen.where, row, target[biased], target_beta, kept)
                    if kept:
                        token = target[biased]
                        picked = False
                        biased = biased + 1 if biased + 1 < len(target) else None
                    else:
                        biased = None
            if picked and trace.current is not None:
                trace.record(trace.GREEDY, gen.where, row, token, 0.0, True)
            stop = self._stop_reason(token)
            if stop:
                gen.stop = stop
                return
            output.append(token)
            if len(output) >= gen.max_len:
                gen.stop = "length"
                return
            te = clock.wall()
            rows = yield Eval([token], 0)
            gen.t_decode += clock.wall() - te
            gen.decode_passes += 1
            assert rows is not None
            row = rows[0]
            if rest and len(output) >= n:
                at = find_ngram(rest, output[-n:])
                if at >= 0:
                    proposal = rest[at + n : at + n + gen.max_len - len(output)]
                    rest = rest[at + n :]
                    if proposal:
                        d, row = yield from self._verify(row, proposal, beta, len(proposal), gen, (), seq)
                        gen.resync_drafted += len(proposal)
                        gen.resync_accepted += d
                        output.extend(proposal[:d])
                        rest = rest[d:]
                        if len(output) >= gen.max_len:
                            gen.stop = "length"
                            return


@dataclass
class _Generation:
    """The output of one step as it is built."""

    max_len: int
    where: trace.Where | None = None  # for the decision trace, only while one is recorded
    output: list[int] = field(default_factory=list)
    accepted: int = 0
    stop: str = ""
    ending_tokens: int = 0
    resync_drafted: int = 0
    resync_accepted: int = 0
    t_verify: float = 0.0
    t_decode: float = 0.0
    verify_rows: int = 0
    decode_passes: int = 0


def _accepted_chars(full: bytes, accepted: bytes, text: str) -> int:
    """How many characters of the displayed ``text`` (stripped) come from the accepted draft bytes."""
    if not accepted:
        return 0
    decoded = complete_prefix(full).decode("utf-8", errors="replace")
    lead = len(decoded) - len(decoded.lstrip())
    acc = len(complete_prefix(accepted).decode("utf-8", errors="replace"))
    return max(0, min(len(text), acc - lead))

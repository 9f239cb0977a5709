"""The stream decoder (SPEC "Decoding one stream"): any method made of drafters, acceptance rules and a
display policy (simul.decoding.methods; docs/methods.md), RT, SSBD(beta) and CD among them.

All are greedy. Each step builds the prompt for the current source prefix, keeps the longest common token
prefix of the KV cache, evaluates the rest of the prompt, and then:

* the method's first drafter proposes a draft D of m tokens (none for RT; the previous output for SSBD and
  CD). D is verified against the logits p_0..p_m (p_0 from the prompt's last position, p_1..p_m from one
  forward pass over D): D_i is kept while its rule accepts it against p_i (SSBD: D_i is the argmax of
  p'_i = (1 - beta) * softmax(p_i) + beta * onehot(D_i), ties accept; CD: accept-all, no logits at all). At
  the first rejection d the cache is truncated after D_0..D_(d-1), the next token is the argmax of p_d
  (already computed) and greedy decoding resumes. When D_0 is already rejected by p_0, the pass over D
  would be wasted and is skipped; the outcome is the same.
* once D is used up or rejected, the other drafters (``--resync``, the target bias) are asked, in order,
  wherever the model would pick the next token itself; a draft they propose is verified the same way, and
  a one-token "steering" draft is decided on the row in hand and decoded like the model's own pick.

Timing follows the paper: ``t_prompt`` covers building, tokenizing and evaluating the prompt; ``t_gen``
starts after it and includes the verification pass.

The decoder is a step machine: ``stream_steps`` is a generator that yields each forward pass it needs
(:class:`~simul.decoding.passes.Eval`) and receives its logits, so the same code runs alone
(:func:`~simul.decoding.passes.run_alone`, one pass at a time) or batched with other streams
(simul.decoding.scheduler), whatever the method. Truncations act on the stream's own sequence at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import cast

import numpy as np

from simul.common.errors import SimulError
from simul.common.languages import get_language
from simul.common.text import complete_prefix, decode_text
from simul.decoding import trace
from simul.decoding.backend import ContextOverflowError, LlamaBackend, Logits
from simul.decoding.backend.sequence import KVSequence
from simul.decoding.longform.policy import WindowPolicy
from simul.decoding.longform.talk import talk_positions_needed, talk_steps
from simul.decoding.methods.built_in import BUILT_IN_DRAFTERS, SOURCE_DRAFTERS, shape_of
from simul.decoding.methods.chain import DraftChain
from simul.decoding.methods.model_drafter import DraftModelDrafter
from simul.decoding.methods.plugins import PluginFailed, plugin_shape
from simul.decoding.methods.protocol import DisplayView, Draft, MethodShape, Position, StepStart
from simul.decoding.passes import Eval, Passes, run_alone
from simul.decoding.records import StepRecord, StreamResult
from simul.machine import clock
from simul.request.method_settings import PLUGIN
from simul.request.methods import Method
from simul.request.templates import Prompt, Template
from simul.streams.format import Stream

# An update's output length cap: int(MAX_LEN_RATIO x the source's tokens) + MAX_LEN_SLACK tokens (the CLI's
# --max-len-ratio and --max-len-slack)
MAX_LEN_RATIO = 2.0
MAX_LEN_SLACK = 10


class StreamDecoder:
    """Decodes streams step by step with one method on one backend."""

    def __init__(
        self,
        backend: LlamaBackend,
        template: Template,
        method: Method,
        max_len_ratio: float = MAX_LEN_RATIO,
        max_len_slack: int = MAX_LEN_SLACK,
        fuse: bool = False,
        verify_chunk: int = 0,
        window: WindowPolicy | None = None,
        shape: MethodShape | None = None,
    ) -> None:
        self.backend = backend
        self.template = template
        self.method = method
        # what the method is made of (simul.decoding.methods): the built-in one for ``method`` (or the
        # plug-in's, guarded: simul.decoding.methods.plugins) unless given
        if shape is None:
            shape = plugin_shape(method) if method.name == PLUGIN else shape_of(method)
        self.shape = shape
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
        # Which drafter proposed each output token goes to steps.jsonl only for methods with a drafter other
        # than the built-in ones, so that the run files of RT, SSBD and CD (--resync and the target bias
        # included) keep their bytes (docs/methods.md, "What is recorded"); the n-gram drafters search the
        # source, tokenized on its own only for them. Both are read off the first stream's drafters
        # (:meth:`new_chain`; no drafter is made for the probe alone: a plug-in sees only its streams').
        self.writes_drafters = False
        self.source_drafters = False
        self._probed = False

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
        """The step machine of one stream: yields the forward passes it needs, returns the result. A plug-in
        method's failure names the stream (and step)."""
        try:
            return (yield from self._stream_steps(stream, seq))
        except PluginFailed as exc:
            raise exc.at(stream.id) from exc.__cause__

    def _stream_steps(self, stream: Stream, seq: KVSequence) -> Passes[StreamResult]:
        if stream.longform:
            return (yield from talk_steps(self, stream, seq, self.window))
        result = StreamResult(stream_id=stream.id, method=self.method)
        chain = self.start_stream(stream, seq)
        previous: list[int] = []
        for index in range(len(stream.steps)):
            earlier = [s.output for s in result.steps]
            try:
                record = yield from self.step_passes(
                    stream, index, previous, seq, chain=chain, earlier=earlier
                )
            except PluginFailed as exc:
                raise exc.at(stream.id, index) from exc.__cause__
            result.steps.append(record)
            previous = record.output_ids
        return result

    def new_chain(self) -> DraftChain:
        """Fresh drafters for one stream (a whole talk counts as one)."""
        chain = DraftChain.of(self.shape, self.backend)
        if not self._probed:
            names = set(chain.names())
            self.writes_drafters = not names <= BUILT_IN_DRAFTERS
            self.source_drafters = bool(names & SOURCE_DRAFTERS) or self.writes_drafters
            self._probed = True
        return chain

    def start_stream(self, stream: Stream, seq: KVSequence) -> DraftChain:
        """Start a stream on ``seq``: its drafters, fresh, and the canonical start state.

        Every stream starts from the same state, whatever ran before (see KVSequence.start_from); within the
        stream, each step keeps what it can of the previous step's cache. A method that drafts with a draft
        model starts the draft model's sequence (``seq.partner``) from the same prefix, evaluated there on
        its own.
        """
        chain = self.new_chain()
        prefix = self.start_prefix(stream)
        seq.start_from(prefix)
        if seq.partner is not None and chain.drafts_with_model:
            seq.partner.start_from(prefix)
        return chain

    def decode_step(
        self, stream: Stream, index: int, previous: Sequence[int], seq: KVSequence | None = None
    ) -> StepRecord:
        """One step on its own (the cache of ``seq`` as it is), ``previous`` being the previous output."""
        seq = seq or self.backend.sequence(0)
        return run_alone(self.step_passes(stream, index, previous, seq), seq)

    def step_passes(
        self,
        stream: Stream,
        index: int,
        previous: Sequence[int],
        seq: KVSequence,
        context: Sequence[tuple[str, str]] = (),
        chain: DraftChain | None = None,
        earlier: Sequence[str] = (),
    ) -> Passes[StepRecord]:
        """One step: ``previous`` is the stream's previous output (the first drafter's material), ``context``
        holds earlier (source, target) pairs for the prompt (long-form windows), ``chain`` the stream's
        drafters (fresh ones when None) and ``earlier`` the texts of the stream's earlier outputs (for the
        display policy)."""
        backend = self.backend
        step = stream.steps[index]
        chain = chain if chain is not None else self.new_chain()
        t0 = clock.wall()
        prompt = self.tokenize_prompt(self.prompt_for(stream, step.source, context))
        max_len = self.max_output_tokens(step.source)
        if len(prompt) + max_len > seq.n_ctx:
            self.check_fits(stream)  # raises with the full explanation
            raise ContextOverflowError(
                f"stream {stream.id!r} step {index}: {len(prompt) + max_len} positions do not fit this "
                f"sequence's share of the context ({seq.n_ctx}); lower --parallel or raise --n-ctx"
            )
        gen = _Generation(max_len=max_len)
        if trace.current is not None:
            gen.where = (stream.id, index, self.method.key)
        source = tuple(backend.tokenize(step.source)) if self.source_drafters else ()
        start = StepStart(tuple(previous), step.final, max_len, tuple(prompt), source=source)
        first = chain.first_draft(start)
        draft = first.tokens if first is not None else ()
        gen.ending_tokens = first.ending_tokens if first is not None else 0
        if first is not None and draft:
            gen.offered[first.drafter] = len(draft)
        reused = seq.reuse_prefix(prompt)
        pending = prompt[reused:]
        fused = self.fuse and bool(draft)
        # a draft taken unverified (CD's accept-all) needs no logits from the prompt pass
        unverified = first is not None and bool(draft) and not any(rule.verifies for rule in first.rules)
        rows: Logits | None = None
        te = clock.wall()
        if not fused:
            rows = yield Eval(pending, None if unverified else len(pending) - 1)
        t1 = clock.wall()
        t_prompt_eval = 0.0 if fused else t1 - te
        lead = pending if fused else []

        if first is None or not draft:
            assert rows is not None
            chain.take_over(start)
            yield from self._continue(rows[0], gen, chain, seq, after_draft=False)
        else:
            d, row = yield from self._verify(rows[0] if rows is not None else None, first, gen, lead, seq)
            gen.keep(first, d)
            gen.accepted = d
            chain.kept(first, d)
            chain.take_over(replace(start, rejected=draft[d:]))  # at every step, for drafters that learn
            if d >= gen.max_len:
                gen.stop = "length"
            else:
                yield from self._continue(row, gen, chain, seq, after_draft=True)
        t2 = clock.wall()

        output = gen.output
        data = backend.detokenize(output)
        text = decode_text(data)
        view = DisplayView(
            outputs=[*earlier, text],
            tokens=output,
            final=step.final,
            unspaced=get_language(stream.tgt).unspaced,
            text=lambda tokens: decode_text(backend.detokenize(tokens)),
        )
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
            display=self.shape.display.show(view),
            accepted_chars=_accepted_chars(data, backend.detokenize(output[: gen.accepted]), text),
            stop=gen.stop,
            t_prompt=t1 - t0,
            t_gen=t2 - t1,
            ending_tokens=gen.ending_tokens,
            resync_drafted=gen.offered.get("resync", 0),
            resync_accepted=gen.drafted_by.count("resync"),
            t_prompt_eval=t_prompt_eval,
            t_verify=gen.t_verify,
            t_decode=gen.t_decode,
            verify_rows=gen.verify_rows,
            verify_passes=gen.verify_passes,
            decode_passes=gen.decode_passes,
            t_draft=gen.t_draft,
            draft_passes=gen.draft_passes,
            model_drafts=gen.model_drafts,
            drafted_by=gen.drafted_by,
            offered=gen.offered,
            steered=gen.steered,
            drafters_written=self.writes_drafters,
            drafter_chars=self._drafter_chars(data, text, output, gen.drafted_by)
            if self.writes_drafters
            else [],
        )

    # -- decoding primitives --------------------------------------------------------------------------------

    def _drafter_chars(
        self, data: bytes, text: str, output: Sequence[int], drafted_by: Sequence[str]
    ) -> list[int]:
        """Where each run of tokens from one drafter ends, in characters of the output ``text`` (as
        ``accepted_chars`` counts them): ``simul show`` marks each drafter's part of the output."""
        ends: list[int] = []
        for i, name in enumerate(drafted_by):
            if i + 1 == len(drafted_by) or drafted_by[i + 1] != name:
                ends.append(_accepted_chars(data, self.backend.detokenize(output[: i + 1]), text))
        return ends

    def _stop_reason(self, token: int) -> str | None:
        if self.backend.is_eog(token):
            return "eog"
        if self.template.stop_at_newline and b"\n" in self.backend.piece(token):
            return "newline"
        return None

    def _verify(
        self,
        first: Logits | None,
        draft: Draft,
        gen: _Generation,
        lead: Sequence[int],
        seq: KVSequence,
    ) -> Passes[tuple[int, Logits]]:
        """Verify ``draft`` and keep exactly its accepted prefix in the cache.

        ``first`` holds the logits for the draft's first position (p_0); the draft itself goes through one
        forward pass (or one per ``verify_chunk`` tokens, stopping at the first rejection), so the logits
        p_1..p_m come with its keys and values. With ``lead`` (the rest of the prompt, when fused) p_0 comes
        from the same pass and ``first`` is None; a draft taken unverified (accept-all) has no p_0 either and
        is never cut into chunks. D_i is kept while ``draft.rules[i]`` accepts it against p_i. Returns the
        accepted length d and p_d, the logits for the next position: no extra forward pass.
        """
        tokens, rules = draft.tokens, draft.rules
        m = len(tokens)
        verified = any(rule.verifies for rule in rules)
        chunk = self.verify_chunk if self.verify_chunk > 0 and verified else m
        # A leading run of blind rules (accept-all; the biased rule at beta >= 0.5) keeps its tokens whatever
        # the logits say, so those positions need no logits: only the rows after the run are computed.
        certain = 0
        while certain < m and rules[certain].blind:
            certain += 1

        def check(i: int, row: Logits | None) -> bool:
            """Is tokens[i] kept? ``row`` is p_i; positions before ``certain`` are kept without one."""
            rule, token = rules[i], tokens[i]
            kept = i < certain or rule.accepts(cast(Logits, row), token)
            if trace.current is not None:
                seen = None if i < certain else row
                trace.record(
                    trace.VERIFY, gen.where, seen, token, rule.bias, kept, rule.name, draft.drafter, i
                )
            return kept

        row = first
        pos = 0  # tokens[:pos] is accepted and in the cache; ``row`` (when known) is p_pos
        while pos < m:
            if row is not None and not check(pos, row):
                return pos, row
            head = list(lead) if pos == 0 else []
            if row is None and not head:
                check(pos, None)  # unverified: kept without a row (certain), recorded all the same
            part = tokens[pos : pos + chunk]
            end = pos + len(part)
            # p_i comes from batch index len(head) - 1 + (i - pos); the first row asked for is p_i0
            i0 = max(pos if head else pos + 1, min(certain, end))
            base = len(head) - 1 - pos
            te = clock.wall()
            rows = yield Eval([*head, *part], base + i0)
            gen.t_verify += clock.wall() - te
            gen.verify_rows += len(part)
            gen.verify_passes += 1
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

    def _continue(
        self, row: Logits, gen: _Generation, chain: DraftChain, seq: KVSequence, after_draft: bool
    ) -> Passes[None]:
        """Greedy decoding from ``row`` (logits for the next position) until a stop token or the cap.

        Before each pick the chain's later drafters are asked for a draft at this position, except right after
        a draft (``after_draft`` at the first position): the model's own token comes first there. A draft is
        verified (:meth:`_verify`) and its kept tokens appended; a steering draft is decided on ``row`` and,
        when kept, replaces the model's pick. Eager drafters (protocol.ModelDrafter: the draft model) are
        asked at the position after the model's own pick instead, before it is evaluated: their draft then
        goes through one forward pass with that token in front, and the token costs no pass of its own.
        """
        output = gen.output
        eager = chain.eager
        # Eager drafters are never asked with a row in hand: the draft model's passes come between, and under
        # --parallel the other streams' target passes of those rounds overwrite the logits the row points to.
        asking = bool(chain.tails) and not after_draft and not eager
        while True:
            token = int(np.argmax(row))
            steered = None
            if asking and chain.drafts_with_model:
                # a draft model's passes come before the row is read, and under --parallel the other
                # streams' target passes of those rounds overwrite the logits it points to
                row = np.array(row, copy=True)
            proposal = (yield from self._propose(chain, gen, seq)) if asking else None
            asking = bool(chain.tails) and not eager
            if proposal is not None and proposal.steer:
                rule, wanted = proposal.rules[0], proposal.tokens[0]
                kept = rule.accepts(row, wanted)
                if trace.current is not None:
                    trace.record(
                        trace.STEER, gen.where, row, wanted, rule.bias, kept, rule.name, proposal.drafter
                    )
                chain.kept(proposal, int(kept))
                if kept:
                    token, steered = wanted, proposal.drafter
                gen.steered[proposal.drafter] = gen.steered.get(proposal.drafter, 0) + 1
            elif proposal is not None:
                d, row = yield from self._verify(row, proposal, gen, (), seq)
                gen.offered[proposal.drafter] = gen.offered.get(proposal.drafter, 0) + len(proposal.tokens)
                gen.keep(proposal, d)
                chain.kept(proposal, d)
                if len(output) >= gen.max_len:
                    gen.stop = "length"
                    return
                asking = False  # the model's own token follows a draft
                continue
            if steered is None and trace.current is not None:
                trace.record(trace.GREEDY, gen.where, row, token, 0.0, True)
            stop = self._stop_reason(token)
            if stop:
                gen.stop = stop
                return
            output.append(token)
            gen.drafted_by.append(steered or "")
            if len(output) >= gen.max_len:
                gen.stop = "length"
                return
            if eager:
                proposal = yield from self._propose(chain, gen, seq)
                if proposal is not None:
                    assert not proposal.steer, "a steering drafter cannot be eager"
                    d, row = yield from self._verify(None, proposal, gen, [token], seq)
                    gen.offered[proposal.drafter] = gen.offered.get(proposal.drafter, 0) + len(
                        proposal.tokens
                    )
                    gen.keep(proposal, d)
                    chain.kept(proposal, d)
                    if len(output) >= gen.max_len:
                        gen.stop = "length"
                        return
                    continue  # the model's own token follows a draft
            te = clock.wall()
            rows = yield Eval([token], 0)
            gen.t_decode += clock.wall() - te
            gen.decode_passes += 1
            assert rows is not None
            row = rows[0]

    def _propose(self, chain: DraftChain, gen: _Generation, seq: KVSequence) -> Passes[Draft | None]:
        """The later drafters' draft at the end of the output so far; the draft model's passes (of a drafter
        that runs one) are yielded, counted and timed as the step's ``draft_passes`` and ``t_draft``."""
        at = Position(gen.output, gen.max_len - len(gen.output))
        if not chain.drafts_with_model:
            return chain.propose(at)
        t0 = clock.wall()
        machine = chain.propose_passes(at, seq.partner)
        try:
            request = next(machine)
            while True:
                gen.draft_passes += 1
                request = machine.send((yield request))
        except StopIteration as done:
            draft: Draft | None = done.value
        gen.t_draft += clock.wall() - t0
        return draft


@dataclass
class _Generation:
    """The output of one step as it is built."""

    max_len: int
    where: trace.Where | None = None  # for the decision trace, only while one is recorded
    output: list[int] = field(default_factory=list)
    drafted_by: list[str] = field(default_factory=list)  # per output token, its drafter ("": the model)
    offered: dict[str, int] = field(default_factory=dict)  # tokens each drafter proposed for verification
    steered: dict[str, int] = field(default_factory=dict)  # steering drafts each drafter proposed
    accepted: int = 0
    stop: str = ""
    ending_tokens: int = 0
    t_verify: float = 0.0
    t_decode: float = 0.0
    verify_rows: int = 0
    verify_passes: int = 0  # forward passes over drafts (in memory; written with the drafters)
    decode_passes: int = 0
    t_draft: float = 0.0
    draft_passes: int = 0
    model_drafts: list[list[int]] = field(default_factory=list)  # the draft model's: [offered, kept]

    def keep(self, draft: Draft, n: int) -> None:
        """Append the first ``n`` tokens of ``draft`` to the output."""
        self.output.extend(draft.tokens[:n])
        self.drafted_by.extend([draft.drafter] * n)
        if draft.drafter == DraftModelDrafter.name:
            self.model_drafts.append([len(draft.tokens), n])


def _accepted_chars(full: bytes, accepted: bytes, text: str) -> int:
    """How many characters of the displayed ``text`` (stripped) come from the accepted draft bytes."""
    if not accepted:
        return 0
    decoded = complete_prefix(full).decode("utf-8", errors="replace")
    lead = len(decoded) - len(decoded.lstrip())
    acc = len(complete_prefix(accepted).decode("utf-8", errors="replace"))
    return max(0, min(len(text), acc - lead))

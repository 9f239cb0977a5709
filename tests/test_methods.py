"""Methods as parts (simul.decoding.methods, docs/methods.md): the drafters, the rules and the chain on their
own, and the decoder running a method it has no branch for."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from simul.decoding import trace as tr
from simul.decoding.backend import LlamaBackend
from simul.decoding.methods.built_in import shape_of
from simul.decoding.methods.chain import DraftChain
from simul.decoding.methods.display import AgreementDisplay, MaskDisplay
from simul.decoding.methods.drafters import PreviousOutput, Resync, TargetBias
from simul.decoding.methods.protocol import (
    DisplayView,
    Draft,
    Drafter,
    MethodShape,
    Position,
    Row,
    StepStart,
    Vocabulary,
)
from simul.decoding.methods.rules import ACCEPT_ALL, EXACT, BiasedRule
from simul.decoding.records import StreamResult
from simul.decoding.stream import StreamDecoder
from simul.request.methods import Method
from simul.request.templates import PRESETS
from simul.streams.format import Stream
from tests.claims import check_decisions
from tests.helpers import make_streams

TEMPLATE = PRESETS["fewshot"]
ENDING = 9  # the token whose piece is "." in the vocabulary below


class Pieces:
    """A vocabulary where token 9 is "." and every other token a word."""

    def piece(self, token: int, special: bool = False) -> bytes:
        return b"." if token == ENDING else b" w%d" % token


def step(
    previous: Sequence[int], final: bool = False, room: int = 100, rejected: Sequence[int] = ()
) -> StepStart:
    return StepStart(tuple(previous), final, room, (1, 2, 3), tuple(rejected))


def first_draft(drafter: Drafter, start: StepStart) -> Draft | None:
    return DraftChain(drafter).first_draft(start)


def test_previous_output_masks_cuts_and_treats_the_ending() -> None:
    rule = BiasedRule(0.2)
    previous = [5, 6, 7, ENDING, ENDING]
    plain = first_draft(PreviousOutput(rule, Pieces()), step(previous))
    assert plain is not None and plain.tokens == tuple(previous) and plain.rules == (rule,) * 5
    assert plain.drafter == "previous" and plain.ending_tokens == 0
    masked = first_draft(PreviousOutput(rule, Pieces(), mask_k=2), step(previous, room=2))
    assert masked is not None and masked.tokens == (5, 6)  # the last 2 hidden, then the cap
    reopened = first_draft(PreviousOutput(rule, Pieces(), ending="reopen"), step(previous))
    assert reopened is not None and (reopened.tokens, reopened.ending_tokens) == ((5, 6, 7), 2)
    unbiased = first_draft(PreviousOutput(rule, Pieces(), ending="unbiased"), step(previous))
    assert unbiased is not None and unbiased.tokens == tuple(previous)
    assert unbiased.rules == (rule, rule, rule, EXACT, EXACT) and unbiased.ending_tokens == 2
    # a final step keeps its ending; an all-ending draft reopened is empty but still reports its ending
    final = first_draft(PreviousOutput(rule, Pieces(), ending="reopen"), step(previous, final=True))
    assert final is not None and (final.tokens, final.ending_tokens) == (tuple(previous), 0)
    empty = first_draft(PreviousOutput(rule, Pieces(), ending="reopen"), step([ENDING]))
    assert empty is not None and (empty.tokens, empty.ending_tokens) == ((), 1)
    assert first_draft(PreviousOutput(rule, Pieces()), step([])) is None


def test_resync_looks_up_the_last_n_tokens_in_the_rest_of_the_rejected_draft() -> None:
    rule = BiasedRule(0.2)
    resync = Resync(2, rule)
    resync.start(step([], rejected=[1, 2, 3, 4, 5, 2, 3, 6]))
    assert resync.propose(Position([7], 50)) is None  # fewer than n tokens
    assert resync.propose(Position([7, 9, 8], 50)) is None  # no match
    draft = resync.propose(Position([9, 2, 3], 50))
    assert draft is not None and (draft.drafter, draft.tokens, draft.rules) == (
        "resync",
        (4, 5, 2, 3, 6),
        (rule,) * 5,
    )
    resync.kept(draft, 2)  # 4 and 5 kept: the rest after them is searched next
    assert resync.rest == [2, 3, 6]
    room = resync.propose(Position([5, 2, 3], 1))
    assert room is None or room.tokens == (6,)
    resync.start(step([]))
    assert resync.propose(Position([2, 3], 50)) is None  # the first draft was not rejected


def test_target_bias_steers_toward_the_rejected_draft_until_a_rejection() -> None:
    rule = BiasedRule(0.4)
    target = TargetBias(rule)
    target.start(step([], rejected=[4, 5, 6]))
    drafts = []
    for kept in (1, 1, 0):
        draft = target.propose(Position([], 10))
        assert draft is not None and draft.steer and draft.rules == (rule,)
        drafts.append(draft.tokens[0])
        target.kept(draft, kept)
    assert drafts == [4, 5, 6] and target.propose(Position([], 10)) is None
    target.start(step([], rejected=[4]))
    draft = target.propose(Position([], 10))
    assert draft is not None
    target.kept(draft, 1)
    assert target.propose(Position([], 10)) is None  # the rejected draft is used up


class Fixed:
    """A drafter that proposes the same tokens at every position it is asked."""

    def __init__(self, name: str, tokens: Sequence[int]) -> None:
        self.name = name
        self.tokens = tuple(tokens)
        self.started: list[StepStart] = []
        self.asked = 0
        self.told: list[int] = []

    def start(self, step: StepStart) -> None:
        self.started.append(step)

    def propose(self, at: Position) -> Draft | None:
        self.asked += 1
        return Draft.of(self.name, self.tokens, EXACT) if self.tokens else None

    def kept(self, draft: Draft, n: int) -> None:
        self.told.append(n)


def test_the_chain_asks_the_first_drafter_at_the_start_and_the_others_in_order() -> None:
    first, empty, second, third = Fixed("a", [1, 2, 3]), Fixed("b", []), Fixed("c", [4, 5]), Fixed("d", [6])
    chain = DraftChain(first, [empty, second, third])
    start = step([], room=2)
    draft = chain.first_draft(start)
    assert draft is not None and draft.tokens == (1, 2) and first.started == [start]  # cut to the room
    assert not second.started  # the others start once the first draft is decided
    chain.kept(draft, 1)
    chain.take_over(StepStart((), False, 2, (1, 2, 3), (2,)))
    assert [d.started[0].rejected for d in (empty, second, third)] == [(2,)] * 3
    proposal = chain.propose(Position([1], 1))
    assert proposal is not None and proposal.tokens == (4,)  # the first non-empty proposal, cut to the room
    assert (empty.asked, second.asked, third.asked) == (1, 1, 0)
    chain.kept(proposal, 0)
    assert first.told == [1] and second.told == [0] and not third.told


def test_a_draft_checks_its_rules() -> None:
    with pytest.raises(ValueError, match="2 tokens but 1 rules"):
        Draft("x", (1, 2), (EXACT,))
    with pytest.raises(ValueError, match="steering draft is one token"):
        Draft.of("x", (1, 2), EXACT, steer=True)

    class Lazy:
        name, bias, verifies, blind = "lazy", 0.0, False, False

        def accepts(self, row: Row, token: int) -> bool:
            return True

    with pytest.raises(ValueError, match="does not verify must be blind"):
        Draft.of("x", (1,), Lazy())


def test_the_rules_decide_as_the_spec_says() -> None:
    row = np.log(np.array([0.5, 0.3, 0.2], dtype=np.float32))
    assert EXACT.accepts(row, 0) and not EXACT.accepts(row, 1)
    assert BiasedRule(0.2).accepts(row, 1) and not BiasedRule(0.1).accepts(row, 1)
    assert ACCEPT_ALL.accepts(row, 2) and ACCEPT_ALL.blind and not ACCEPT_ALL.verifies
    assert BiasedRule(0.5).blind and not BiasedRule(0.49).blind and not EXACT.blind
    assert {r.name for r in (EXACT, ACCEPT_ALL, BiasedRule(0.2))} == {"exact", "accept-all", "biased"}


def test_display_policies() -> None:
    def view(final: bool) -> DisplayView:
        return DisplayView(
            outputs=["a b c", "a b d e"],
            tokens=[1, 2, 3, 4],
            final=final,
            unspaced=False,
            text=lambda tokens: " ".join(map(str, tokens)),
        )

    assert MaskDisplay(2).show(view(False)) == "1 2" and MaskDisplay(2).show(view(True)) == "a b d e"
    assert MaskDisplay(0).show(view(False)) == "a b d e"
    assert (
        AgreementDisplay(2).show(view(False)) == "a b" and AgreementDisplay(2).show(view(True)) == "a b d e"
    )


def test_built_in_methods_as_parts() -> None:
    vocab: Vocabulary = Pieces()
    rt = shape_of(Method("rt"))
    assert rt.first is None and rt.tails == () and rt.display == MaskDisplay(0)
    ssbd = shape_of(Method("ssbd", beta=0.3, resync=2, mask_k=3, mask="output"))
    assert ssbd.first is not None and ssbd.display == MaskDisplay(3)
    previous = ssbd.first(vocab)
    assert isinstance(previous, PreviousOutput) and previous.rule == BiasedRule(0.3) and previous.mask_k == 3
    (resync,) = (make(vocab) for make in ssbd.tails)
    assert isinstance(resync, Resync) and (resync.n, resync.rule) == (2, BiasedRule(0.3))
    (target,) = (make(vocab) for make in shape_of(Method("ssbd", beta=0.2, target_bias=0.4)).tails)
    assert isinstance(target, TargetBias) and target.rule == BiasedRule(0.4)
    cd = shape_of(Method("cd", mask_k=2, display="local-agreement", mask="output"))
    assert cd.first is not None and cd.display == AgreementDisplay(2)
    cd_previous = cd.first(vocab)
    assert (
        isinstance(cd_previous, PreviousOutput) and cd_previous.rule == ACCEPT_ALL and cd_previous.mask_k == 2
    )


class Oracle:
    """A later drafter (part 3's kind) that knows RT's outputs: at each position it proposes up to ``width``
    tokens of what RT decoded there, every second position one wrong token first (so that the exact rule
    has something to reject)."""

    name = "oracle"

    def __init__(self, outputs: dict[str, list[list[int]]], stream: list[str], width: int = 4) -> None:
        self.outputs = outputs
        self.stream = stream
        self.width = width
        self.step = -1
        self.asked = 0

    def start(self, step: StepStart) -> None:
        self.step += 1

    def propose(self, at: Position) -> Draft | None:
        truth = self.outputs[self.stream[0]][self.step]
        n = len(at.output)
        self.asked += 1
        tokens = truth[n : n + self.width]
        if self.asked % 2 == 0 and tokens:
            tokens = [tokens[0] + 1, *tokens[1:]]
        return Draft.of(self.name, tokens, EXACT) if tokens else None

    def kept(self, draft: Draft, n: int) -> None:
        pass


def decode(decoder: StreamDecoder, backend: LlamaBackend, streams: list[Stream]) -> list[StreamResult]:
    backend.reset()
    return [decoder.decode(s) for s in streams]


def test_the_decoder_runs_a_method_it_has_no_branch_for(tiny_backend: LlamaBackend) -> None:
    """RT with a later drafter under exact greedy acceptance (no first drafter): the output is RT's, token for
    token (the tiny model has no near-ties), the oracle's kept tokens are marked as its own, its rejected
    ones are followed by the model's pick, and the verified tokens save one-token passes."""
    streams = make_streams()
    rt = decode(StreamDecoder(tiny_backend, TEMPLATE, Method("rt")), tiny_backend, streams)
    truth = {r.stream_id: [s.output_ids for s in r.steps] for r in rt}
    current: list[str] = [""]
    shape = MethodShape(first=None, tails=(lambda vocab: Oracle(truth, current),), display=MaskDisplay(0))
    decoder = StreamDecoder(tiny_backend, TEMPLATE, Method("rt"), shape=shape)
    tiny_backend.reset()
    results = []
    with tr.recording(keep_rows=True) as recorded:
        for stream in streams:
            current[0] = stream.id
            results.append(decoder.decode(stream))
    check_decisions(recorded, results)
    for plain, drafted in zip(rt, results, strict=True):
        assert [s.output_ids for s in drafted.steps] == [s.output_ids for s in plain.steps]
    steps = [s for r in results for s in r.steps]
    kept = sum(s.drafted_by.count("oracle") for s in steps)
    assert 0 < kept < sum(s.offered.get("oracle", 0) for s in steps)
    assert {d.rule for d in recorded.of_kind(tr.VERIFY)} == {"exact"}
    assert sum(s.decode_passes for s in steps) < sum(s.decode_passes for r in rt for s in r.steps)


def test_cd_drafts_are_taken_under_accept_all(tiny_backend: LlamaBackend) -> None:
    """CD's draft tokens are recorded as the previous output's, kept without a row under accept-all."""
    decoder = StreamDecoder(tiny_backend, TEMPLATE, Method("cd"))
    with tr.recording() as recorded:
        results = decode(decoder, tiny_backend, make_streams())
    seen = check_decisions(recorded, results)
    drafted = sum(s.draft_tokens for r in results for s in r.steps)
    assert seen["accept-all"] == drafted > 0
    assert {(d.drafter, d.rule) for d in recorded.of_kind(tr.VERIFY)} == {("previous", "accept-all")}


def test_resync_tokens_are_marked_as_the_resync_drafters(tiny_backend: LlamaBackend) -> None:
    decoder = StreamDecoder(tiny_backend, TEMPLATE, Method("ssbd", beta=0.2, resync=1))
    with tr.recording(keep_rows=True) as recorded:
        results = decode(decoder, tiny_backend, make_streams(lag=2))
    check_decisions(recorded, results)
    steps = [s for r in results for s in r.steps]
    assert sum(s.resync_accepted for s in steps) > 0
    for s in steps:
        assert (
            s.drafted_by.count("resync") == s.resync_accepted
            and s.offered.get("resync", 0) == s.resync_drafted
        )
        assert s.drafted_by.count("previous") == s.accepted
    resynced = [d for d in recorded.of_kind(tr.VERIFY) if d.drafter == "resync"]
    assert resynced and {(d.rule, d.bias) for d in resynced} == {("biased", 0.2)}


def rows_asked(
    decoder: StreamDecoder, backend: LlamaBackend, streams: list[Stream]
) -> tuple[int, list[StreamResult]]:
    """Decode ``streams`` one pass at a time, counting the logits rows the passes ask for."""
    backend.reset()
    seq = backend.sequence(0)
    rows = 0
    results = []
    for stream in streams:
        machine = decoder.stream_steps(stream, seq)
        try:
            request = next(machine)
            while True:
                if request.logits_from is not None:
                    rows += len(request.tokens) - request.logits_from
                request = machine.send(seq.eval(request.tokens, request.logits_from))
        except StopIteration as done:
            results.append(done.value)
    return rows, results


@pytest.mark.parametrize(("method", "p0"), [(Method("cd"), 0), (Method("ssbd", beta=0.5), 1)])
def test_an_unverified_draft_asks_for_no_rows(tiny_backend: LlamaBackend, method: Method, p0: int) -> None:
    """CD's draft (accept-all: it does not verify) gets no logits but the row after it, not even p_0 from the
    prompt pass; SSBD at beta 0.5 (blind, but a verification) still has p_0 computed, as before the parts."""
    rows, results = rows_asked(StreamDecoder(tiny_backend, TEMPLATE, method), tiny_backend, make_streams())
    steps = [s for r in results for s in r.steps]
    drafted = sum(1 for s in steps if s.draft_tokens)
    assert drafted > 0
    # a row per step (p_0, or the row after the draft), one per one-token pass, p_0 for drafts that verify
    assert rows == sum(1 + s.decode_passes for s in steps) + p0 * drafted

"""The paper's acceptance claims, checked decision by decision on the tiny model (simul.decoding.trace).

Every draft token SSBD keeps satisfies the biased rule against its own logits row and every one it rejects
violates it; at beta 0 every kept token is the argmax, so SSBD(0) is RT: on the tiny model, whose every choice
has a wide logit margin (simul.testing.code_machine), the outputs are identical, not merely mostly so.
"""

from __future__ import annotations

import pytest

from simul.decoding import trace as tr
from simul.decoding.backend import LlamaBackend
from simul.decoding.drafts import ending_length
from simul.decoding.records import StreamResult
from simul.decoding.stream import StreamDecoder
from simul.request.method_settings import Ending
from simul.request.methods import Method
from simul.request.templates import PRESETS
from simul.streams.format import Step, Stream
from tests.claims import biased_rule, check_decisions
from tests.helpers import make_streams

TEMPLATE = PRESETS["fewshot"]


def traced(
    backend: LlamaBackend, method: Method, streams: list[Stream], **options: int | bool
) -> tuple[list[StreamResult], tr.DecisionTrace]:
    backend.reset()
    decoder = StreamDecoder(backend, TEMPLATE, method, **options)  # type: ignore[arg-type]
    with tr.recording(keep_rows=True) as recorded:
        results = [decoder.decode(s) for s in streams]
    return results, recorded


@pytest.mark.parametrize(
    ("method", "options"),
    [
        (Method("ssbd", beta=0.0), {}),
        (Method("ssbd", beta=0.2), {}),
        (Method("ssbd", beta=0.4), {}),
        (Method("ssbd", beta=0.2), {"fuse": True, "verify_chunk": 3}),
        (Method("ssbd", beta=0.2, mask_k=2, mask="output"), {}),
        (Method("ssbd", beta=0.2, ending="unbiased"), {}),
        (Method("ssbd", beta=0.0, resync=1), {}),
    ],
    ids=lambda v: getattr(v, "key", None) or ",".join(f"{k}={x}" for k, x in v.items()) or "plain",
)
def test_every_kept_token_satisfies_the_biased_rule_against_its_own_row(
    tiny_backend: LlamaBackend, method: Method, options: dict[str, int | bool]
) -> None:
    results, recorded = traced(tiny_backend, method, make_streams(lag=2), **options)
    seen = check_decisions(recorded, results)
    assert (
        seen["verify kept"] > 0 and seen["verify rejected"] + seen["verify rejected (not the argmax)"] > 0
    ), seen
    if method.beta:
        # the bias is what kept these: the rule is exercised, not only the argmax
        assert seen["verify kept (not the argmax)"] > 0, seen
    else:
        assert seen["verify kept (not the argmax)"] == 0, seen


def test_ssbd_at_beta_zero_is_rt(tiny_backend: LlamaBackend) -> None:
    """Lossless verification: the same outputs as RT on every step (the tiny model leaves no near-ties for the
    batched and one-token logits to flip; every choice below had a margin of at least one logit)."""
    streams = make_streams()
    rt, rt_trace = traced(tiny_backend, Method("rt"), streams)
    ssbd, ssbd_trace = traced(tiny_backend, Method("ssbd", beta=0.0), streams)
    assert [[s.output_ids for s in r.steps] for r in ssbd] == [[s.output_ids for s in r.steps] for r in rt]
    assert sum(s.accepted for r in ssbd for s in r.steps) > 0
    rows = [d.row for d in rt_trace.decisions + ssbd_trace.decisions if d.row is not None]
    assert rows and min(row.margin for row in rows) > 1.0


def test_target_bias_follows_the_rule(tiny_backend: LlamaBackend) -> None:
    results, recorded = traced(tiny_backend, Method("ssbd", beta=0.2, target_bias=0.4), make_streams(lag=2))
    seen = check_decisions(recorded, results)
    assert seen["steer kept (not the argmax)"] > 0 and seen["steer rejected (not the argmax)"] > 0, seen
    steered = recorded.of_kind(tr.STEER)
    assert {(d.drafter, d.rule, d.bias) for d in steered} == {("target", "biased", 0.4)}
    # a kept steered token is the target drafter's in the step's output
    assert any("target" in s.drafted_by for r in results for s in r.steps)


def test_high_beta_keeps_the_draft_without_logits(tiny_backend: LlamaBackend) -> None:
    results, recorded = traced(tiny_backend, Method("ssbd", beta=0.5), make_streams())
    seen = check_decisions(recorded, results)
    assert seen["kept without logits"] == sum(s.draft_tokens for r in results for s in r.steps) > 0


def test_the_reference_rule_is_the_mixture_argmax() -> None:
    """The test's own rule on a row worked by hand: keep t iff (1-b) q_t + b >= (1-b) q_max, q = softmax."""
    import numpy as np

    row = np.log(np.array([0.5, 0.3, 0.2], dtype=np.float32))

    def decide(token: int, beta: float, keep_rows: bool) -> bool:
        return biased_rule(
            tr.Decision(tr.VERIFY, None, token, beta, False, tr.RowFacts.of(row, token, keep_rows))
        )

    for keep_rows in (True, False):
        assert decide(0, 0.0, keep_rows) and not decide(1, 0.0, keep_rows)
        # token 1: 0.8 * 0.3 + b >= 0.8 * 0.5 needs b >= 0.16 (with 1 - b = 0.8 only at b = 0.2)
        assert decide(1, 0.2, keep_rows) and not decide(1, 0.1, keep_rows)
        # token 2: (1 - b) 0.2 + b >= (1 - b) 0.5 iff b >= 0.3 / 1.3
        assert decide(2, 0.24, keep_rows) and not decide(2, 0.22, keep_rows)


def test_recording_is_off_by_default(tiny_backend: LlamaBackend) -> None:
    assert tr.current is None
    with tr.recording() as outer:
        with tr.recording() as inner:
            pass
        assert tr.current is outer and inner is not outer
    assert tr.current is None


ENDING_STREAM = Stream(
    "ending",
    "en",
    "de",
    (Step("The cat sat on the mat", final=False), Step("The cat sat on the mat and looked out.", final=True)),
    None,
)


@pytest.mark.parametrize("ending", ["unbiased", "reopen"])
def test_ending_tokens_of_the_draft(tiny_backend: LlamaBackend, ending: Ending) -> None:
    """A draft that ends in sentence-final tokens, on a step whose source is not final: --ending reopen drops
    them from the draft, --ending unbiased verifies them without the bias (beta 1 keeps the rest unseen)."""
    decoder = StreamDecoder(tiny_backend, TEMPLATE, Method("ssbd", beta=1.0, ending=ending))
    body = tiny_backend.tokenize(" die Katze", add_special=False)
    endings = tiny_backend.tokenize(".", add_special=False) + tiny_backend.tokenize('"', add_special=False)
    assert endings and all(
        ending_length(endings[i:], tiny_backend.piece) == len(endings) - i for i in range(len(endings))
    )
    tiny_backend.reset()
    with tr.recording(keep_rows=True) as recorded:
        record = decoder.decode_step(ENDING_STREAM, 0, body + endings)
    assert record.ending_tokens == len(endings)
    verified = [d for d in recorded.decisions if d.kind == tr.VERIFY]
    if ending == "reopen":
        assert record.draft_tokens == len(body) == record.accepted
        assert [(d.token, d.row) for d in verified] == [(token, None) for token in body]
    else:
        assert record.draft_tokens == len(body) + len(endings)
        assert [(d.token, d.bias, d.row is None) for d in verified[: len(body) + 1]] == [
            *((token, 1.0, True) for token in body),
            (endings[0], 0.0, False),
        ]
    assert all(biased_rule(d) == d.accepted for d in verified if d.row is not None)

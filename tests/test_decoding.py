"""The decoders on a real (tiny, random-weight) llama.cpp model: no mocked decoding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simul.common.errors import SimulError
from simul.decoding.backend import ContextOverflowError, LlamaBackend
from simul.decoding.drafts import ending_length
from simul.decoding.records import StreamResult
from simul.decoding.stream import StreamDecoder
from simul.metrics.acceptance import acceptance
from simul.metrics.erasure import normalized_erasure
from simul.metrics.tokenizers import get_tokenizer
from simul.request.methods import Method
from simul.request.templates import PRESETS
from simul.streams.format import Step, Stream
from tests.helpers import lag_stream, make_streams

TEMPLATE = PRESETS["fewshot"]


def run(backend: LlamaBackend, method: Method, streams: list[Stream]) -> list[StreamResult]:
    """Decode from an empty cache, so two runs of the same method see identical states."""
    backend.reset()
    decoder = StreamDecoder(backend, TEMPLATE, method)
    return [decoder.decode(s) for s in streams]


def greedy(backend: LlamaBackend, tokens: list[int], n: int) -> list[int]:
    rows = backend.eval(tokens, logits_from=len(tokens) - 1)
    assert rows is not None
    out = []
    for _ in range(n):
        token = int(np.argmax(rows[0]))
        out.append(token)
        rows = backend.eval([token], logits_from=0)
        assert rows is not None
    return out


def test_kv_truncation_then_continuing_equals_decoding_from_scratch(tiny_backend: LlamaBackend) -> None:
    b = tiny_backend
    first = b.tokenize("English: The cat sat on the mat.\nGerman:", add_special=True)
    second = b.tokenize("English: The cat sat on the sofa today.\nGerman:", add_special=True)
    b.reset()
    greedy(b, first, 20)
    kept = b.reuse_prefix(second)
    assert 0 < kept < len(second) and b.cache == second[:kept]
    continued = greedy_from_cache(b, second[kept:], 25)
    b.reset()
    fresh = greedy(b, second, 25)
    assert continued == fresh


def greedy_from_cache(backend: LlamaBackend, pending: list[int], n: int) -> list[int]:
    return greedy(backend, pending, n)


def test_truncate_mid_generation_reproduces_the_continuation(tiny_backend: LlamaBackend) -> None:
    b = tiny_backend
    prompt = b.tokenize("Hello world, this is a test.\n", add_special=True)
    b.reset()
    out = greedy(b, prompt, 16)
    assert b.truncate(len(prompt) + 6)
    rows = b.eval([out[6]], logits_from=0)
    assert rows is not None
    rest = [int(np.argmax(rows[0]))]
    for _ in range(8):
        rows = b.eval([rest[-1]], logits_from=0)
        assert rows is not None
        rest.append(int(np.argmax(rows[0])))
    assert rest == out[7:16]


def test_rt_records_every_step(tiny_backend: LlamaBackend) -> None:
    streams = make_streams()
    results = run(tiny_backend, Method("rt"), streams)
    for stream, result in zip(streams, results, strict=True):
        assert len(result.steps) == len(stream.steps)
        for step, record in zip(stream.steps, result.steps, strict=True):
            assert record.source == step.source
            assert record.draft_tokens == 0 and record.accepted == 0
            assert record.reused_tokens + record.processed_tokens == record.prompt_tokens
            assert record.processed_tokens >= 1
            assert record.stop in ("eog", "newline", "length")
            assert record.t_prompt > 0 and record.t_gen > 0
            assert record.output == record.display  # no masking
    # the few-shot header is shared by every prompt, so later streams reuse it
    assert results[1].steps[0].reused_tokens > 50


def test_ssbd_with_high_beta_accepts_every_draft_token(tiny_backend: LlamaBackend) -> None:
    for beta in (0.5, 1.0):
        results = run(tiny_backend, Method("ssbd", beta=beta), make_streams())
        drafted = 0
        for result in results:
            previous: list[int] = []
            for record in result.steps:
                assert record.accepted == record.draft_tokens
                assert record.output_ids[: len(previous)] == previous[: record.draft_tokens]
                drafted += record.draft_tokens
                previous = record.output_ids
        assert drafted > 0


def test_cd_never_revises(tiny_backend: LlamaBackend) -> None:
    results = run(tiny_backend, Method("cd"), make_streams())
    for result in results:
        previous: list[int] = []
        for record in result.steps:
            cap = len(record.output_ids)
            assert record.output_ids[: len(previous)] == previous[:cap]
            assert record.accepted == record.draft_tokens
            previous = record.output_ids
    acc = acceptance((s.draft_tokens, s.accepted, len(s.output_ids)) for r in results for s in r.steps)
    assert acc.ad == pytest.approx(100.0)


def test_display_only_mask_keeps_acceptance_and_lowers_display_erasure(tiny_backend: LlamaBackend) -> None:
    tok = get_tokenizer("13a")
    plain = run(tiny_backend, Method("ssbd", beta=0.2), make_streams())
    masked = run(tiny_backend, Method("ssbd", beta=0.2, mask_k=3, mask="display"), make_streams())
    for a, b in zip(plain, masked, strict=True):
        for x, y in zip(a.steps, b.steps, strict=True):
            assert x.output_ids == y.output_ids
            assert (x.draft_tokens, x.accepted) == (y.draft_tokens, y.accepted)
            assert y.output.startswith(y.display)
            if y.final:
                assert y.display == y.output
    ne_raw = normalized_erasure([[tok(s.display) for s in r.steps] for r in plain]).value
    ne_disp = normalized_erasure([[tok(s.display) for s in r.steps] for r in masked]).value
    assert ne_disp <= ne_raw


def test_output_mask_shortens_the_drafts(tiny_backend: LlamaBackend) -> None:
    k = 3
    method = Method("ssbd", beta=0.2, mask_k=k, mask="output")
    decoder = StreamDecoder(tiny_backend, TEMPLATE, method)
    results = run(tiny_backend, method, make_streams())
    checked = 0
    for result in results:
        for previous, record in zip(result.steps, result.steps[1:], strict=False):
            cap = decoder.max_output_tokens(record.source)
            assert record.draft_tokens == min(cap, max(0, len(previous.output_ids) - k))
            checked += 1
    assert checked > 0


def test_display_never_cuts_a_character(tiny_backend: LlamaBackend) -> None:
    stream = lag_stream("ja", "The cat sat on the mat and looked out of the window.", None, tgt="ja")
    for k in (1, 2, 3, 5):
        (result,) = run(tiny_backend, Method("ssbd", beta=0.2, mask_k=k), [stream])
        for record in result.steps:
            assert record.output.startswith(record.display)
            assert "\ufffd" not in record.display[-1:]


def test_missing_and_invalid_model_files(tmp_path: Path) -> None:
    with pytest.raises(SimulError, match="does not exist"):
        LlamaBackend(tmp_path / "missing.gguf")
    bogus = tmp_path / "model.gguf"
    bogus.write_bytes(b"PK\x03\x04 not a gguf")
    with pytest.raises(SimulError, match="not a GGUF"):
        LlamaBackend(bogus)
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(b"GGUF\x03\x00\x00\x00")
    with pytest.raises(SimulError, match="could not load"):
        LlamaBackend(truncated)


def test_prompt_longer_than_the_context_is_a_clear_error(tiny_model: Path) -> None:
    backend = LlamaBackend(tiny_model, n_ctx=256, n_threads=1)
    try:
        long_source = " ".join(["word"] * 400)
        stream = Stream("long", "en", "de", (Step(long_source, final=True),), None)
        decoder = StreamDecoder(backend, TEMPLATE, Method("rt"))
        with pytest.raises(SimulError, match=r"stream 'long' step 0: .* context window is 256; pass --n-ctx"):
            decoder.check_fits(stream)
        with pytest.raises(SimulError, match="context window"):
            decoder.decode(stream)
    finally:
        backend.close()


def test_a_context_smaller_than_llama_cpp_rounds_to_is_honoured(tiny_model: Path) -> None:
    # llama.cpp rounds n_ctx up to 256 but keeps n_batch = 64; a 100-token batch used to abort the process
    backend = LlamaBackend(tiny_model, n_ctx=64, n_threads=1)
    try:
        assert backend.n_ctx == 64
        with pytest.raises(ContextOverflowError, match="context window of 64"):
            backend.eval(list(range(10, 110)), logits_from=99)
        rows = backend.eval(list(range(10, 74)), logits_from=63)
        assert rows is not None and rows.shape == (1, backend.n_vocab)
    finally:
        backend.close()


def test_unknown_language_and_empty_source_are_rejected() -> None:
    with pytest.raises(SimulError, match="unknown language code 'xx'"):
        Stream("a", "en", "xx", (Step("hello", final=True),), None).validate()
    with pytest.raises(ValueError, match="empty source"):
        Stream("a", "en", "de", (Step("  ", final=True),), None).validate()


def test_reopened_endings_leave_the_draft(tiny_backend: LlamaBackend) -> None:
    method = Method("ssbd", beta=0.2, ending="reopen")
    results = run(tiny_backend, method, make_streams(lag=2))
    decoder = StreamDecoder(tiny_backend, TEMPLATE, method)
    for result in results:
        for previous, record in zip(result.steps, result.steps[1:], strict=False):
            if record.final:
                assert record.ending_tokens == 0
                continue
            previous_ids = previous.output_ids[: decoder.max_output_tokens(record.source)]
            assert record.ending_tokens == ending_length(previous_ids, tiny_backend.piece)
            assert record.draft_tokens == len(previous_ids) - record.ending_tokens
    # drafts that ended in sentence-final tokens did occur (the tiny model ends outputs with them)
    assert sum(record.ending_tokens > 0 for result in results for record in result.steps) >= 2


def test_unbiased_endings_keep_the_rest_of_the_draft(tiny_backend: LlamaBackend) -> None:
    results = run(tiny_backend, Method("ssbd", beta=1.0, ending="unbiased"), make_streams(lag=2))
    for result in results:
        for record in result.steps:
            assert record.accepted >= record.draft_tokens - record.ending_tokens
    assert sum(record.ending_tokens > 0 for result in results for record in result.steps) >= 2


def test_resync_is_lossless_at_beta_zero(tiny_backend: LlamaBackend) -> None:
    plain = run(tiny_backend, Method("ssbd", beta=0.0), make_streams())
    resynced = run(tiny_backend, Method("ssbd", beta=0.0, resync=1), make_streams())
    for a, b in zip(plain, resynced, strict=True):
        for x, y in zip(a.steps, b.steps, strict=True):
            assert y.resync_accepted <= y.resync_drafted
            assert x.output_ids == y.output_ids


def test_ending_detection() -> None:
    from simul.decoding.drafts import find_ngram, is_ending_piece

    assert (
        is_ending_piece(b".") and is_ending_piece(" .\u201c".encode()) and is_ending_piece("\u3002".encode())
    )
    assert not is_ending_piece(b" Haus") and not is_ending_piece(b",") and not is_ending_piece(b" ")
    assert find_ngram([5, 1, 2, 3, 1, 2], [1, 2]) == 1 and find_ngram([1, 2], [2, 3]) == -1


@pytest.mark.parametrize(("fuse", "chunk"), [(True, 0), (False, 3), (True, 4)])
def test_fused_and_chunked_verification_keep_the_outputs(
    tiny_backend: LlamaBackend, fuse: bool, chunk: int
) -> None:
    """How the passes are cut must not change what SSBD keeps (exact on this F32 model)."""
    streams = make_streams()
    for method in (Method("ssbd", beta=0.2), Method("ssbd", beta=0.0, resync=1), Method("cd")):
        plain = run(tiny_backend, method, streams)
        tiny_backend.reset()
        decoder = StreamDecoder(tiny_backend, TEMPLATE, method, fuse=fuse, verify_chunk=chunk)
        cut = [decoder.decode(s) for s in streams]
        for a, b in zip(plain, cut, strict=True):
            for x, y in zip(a.steps, b.steps, strict=True):
                assert (x.output_ids, x.accepted, x.draft_tokens) == (
                    y.output_ids,
                    y.accepted,
                    y.draft_tokens,
                )
                if fuse and y.draft_tokens:
                    assert y.t_prompt_eval == 0.0 and y.t_verify > 0


def test_high_beta_needs_no_logits_and_matches_cd(tiny_backend: LlamaBackend) -> None:
    """With beta >= 0.5 every biased draft token is accepted, so SSBD computes no verification logits for
    them and decodes exactly what CD decodes."""
    streams = make_streams()
    cd = run(tiny_backend, Method("cd"), streams)
    high = run(tiny_backend, Method("ssbd", beta=0.5), streams)
    for a, b in zip(cd, high, strict=True):
        assert [s.output_ids for s in a.steps] == [s.output_ids for s in b.steps]


@pytest.mark.parametrize(
    "method", [Method("rt"), Method("ssbd", beta=0.2), Method("ssbd", beta=0.0, resync=1), Method("cd")]
)
def test_pass_counts_match_the_forward_passes(tiny_backend: LlamaBackend, method: Method) -> None:
    """verify_rows and decode_passes (the units of the speed model's c) count what was really evaluated."""
    streams = make_streams()
    tiny_backend.reset()
    decoder = StreamDecoder(tiny_backend, TEMPLATE, method)
    single = 0
    real_eval_many = tiny_backend.eval_many

    def counting_eval_many(requests: list[tuple[object, list[int], int | None]]) -> object:
        nonlocal single
        single += sum(len(tokens) == 1 and logits_from == 0 for _, tokens, logits_from in requests)
        return real_eval_many(requests)  # type: ignore[arg-type]

    tiny_backend.eval_many = counting_eval_many  # type: ignore[assignment,method-assign]
    try:
        results = [decoder.decode(s) for s in streams]
    finally:
        del tiny_backend.eval_many
    steps = [step for result in results for step in result.steps]
    decode_passes = sum(s.decode_passes for s in steps)
    verify_rows = sum(s.verify_rows for s in steps)
    # every one-token pass with logits is a decoding pass, except one-token drafts and prompt remainders
    assert 0 < decode_passes <= single
    assert all(s.t_decode > 0 for s in steps if s.decode_passes)
    if method.name == "rt":
        assert verify_rows == 0
    else:
        assert 0 < verify_rows <= sum(s.drafted_total for s in steps)
        assert all(s.t_verify > 0 for s in steps if s.verify_rows)
    if method.name == "cd":
        assert verify_rows == sum(s.draft_tokens for s in steps)
    # a step decodes one pass per new token, except the last one when the length cap stopped it
    for s in steps:
        if s.stop != "length":
            assert s.decode_passes == s.new_tokens - s.resync_accepted


def test_target_bias_follows_the_rejected_draft_shifted_by_one(tiny_backend: LlamaBackend) -> None:
    """The SSBD reference's alignment: the model's token replaces D_d, then the output follows D_d, D_(d+1),
    ... (forced here with a target bias of 1), so output[d + 1 + j] == D_(d + j)."""
    results = run(tiny_backend, Method("ssbd", beta=0.0, target_bias=1.0), make_streams())
    diverged = 0
    for result in results:
        previous: list[int] = []
        for record in result.steps:
            draft = previous[: record.draft_tokens]
            d = record.accepted
            out = record.output_ids
            if d < len(draft) and len(out) > d + 1:
                diverged += 1
                assert out[d] != draft[d]
                k = min(len(draft) - d, len(out) - d - 1)
                assert out[d + 1 : d + 1 + k] == draft[d : d + k]
            previous = out
    assert diverged > 0


def test_target_bias_is_an_ssbd_option_recorded_in_the_key() -> None:
    method = Method("ssbd", beta=0.2, target_bias=0.3)
    assert method.key == "ssbd-b0.2-tb0.3" and method.label == "SSBD(b=0.2)+target-bias0.3"
    assert Method.from_json(method.to_json()) == method
    assert "target_bias" not in Method("ssbd", beta=0.2).to_json()  # off: run files read as before
    assert Method.from_json({"name": "ssbd", "beta": 0.2}).target_bias == 0.0
    with pytest.raises(SimulError, match="only SSBD"):
        Method("rt", target_bias=0.2)
    with pytest.raises(SimulError, match="choose one"):
        Method("ssbd", beta=0.2, target_bias=0.2, resync=3)
    with pytest.raises(SimulError, match="between 0 and 1"):
        Method("ssbd", beta=0.2, target_bias=1.5)

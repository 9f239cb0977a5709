"""Decoding a whole talk as one stream: RT, SSBD and CD inside a bounded window (issue "whole talks").

At every update of a long-form stream (a new transcript of the whole talk so far):

1. the windows that close now are cut (simul.decoding.longform.policy): each gets a *final* translation, with
   the open window's previous output as its draft (SSBD) exactly as the last step of a sentence does in a
   short-form stream, and is committed: committed target is never revised;
2. the open window (the source after the last closed window) is re-translated as a non-final step, its draft
   being the open window's previous output; mask-k (display or output) and LocalAgreement apply to it;
3. the viewer sees the committed target followed by the displayed part of the open window.

The prompt holds the last ``context_sentences`` committed (source, target) pairs before the window
(simul.request.templates renders them as earlier lines or turns). The KV cache keeps the longest common token
prefix from one decoding to the next (simul.decoding.backend.sequence.KVSequence.reuse_prefix), so template
and context are evaluated once per window, not per update. Because a window never holds more than
``max_window`` source units and the context is the last few windows, the prompt and the cost of an update are
bounded independently of the talk's length (:func:`talk_positions_needed`). A talk starts from the canonical
start state like any stream, so its result depends on the talk, method, model and settings alone.

The update's record (simul.decoding.records.StepRecord) holds the talk-level output and display, and sums
the work of the window decodings the update ran; ``talk`` holds the long-form facts (see records.TALK_KEYS).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from simul.common.languages import get_language
from simul.common.sequences import common_prefix_length
from simul.decoding.longform.policy import WindowPolicy, window_updates
from simul.decoding.passes import Passes
from simul.decoding.records import StepRecord, StreamResult
from simul.request.methods import Method
from simul.request.templates import Prompt, Template
from simul.streams.format import Step, Stream, join_texts

if TYPE_CHECKING:
    from simul.decoding.backend.sequence import KVSequence
    from simul.decoding.methods.chain import DraftChain


class Tokenizer(Protocol):
    def tokenize(self, text: str, add_special: bool = False, parse_special: bool = False) -> list[int]: ...


class WindowDecoder(Protocol):
    """What a talk needs of the sentence decoder that decodes its windows: simul.decoding.stream's
    StreamDecoder has it. Named here so that this module does not import the decoder, which imports it."""

    @property
    def method(self) -> Method: ...
    @property
    def template(self) -> Template: ...
    @property
    def backend(self) -> Tokenizer: ...
    @property
    def max_len_ratio(self) -> float: ...
    @property
    def max_len_slack(self) -> int: ...
    @property
    def writes_drafters(self) -> bool: ...

    def start_prefix(self, stream: Stream) -> list[int]: ...
    def tokenize_prompt(self, prompt: Prompt) -> list[int]: ...
    def max_output_tokens(self, source: str) -> int: ...
    def new_chain(self) -> DraftChain: ...
    def start_stream(self, stream: Stream, seq: KVSequence) -> DraftChain: ...
    def step_passes(
        self,
        stream: Stream,
        index: int,
        previous: Sequence[int],
        seq: KVSequence,
        context: Sequence[tuple[str, str]] = (),
        chain: DraftChain | None = None,
        earlier: Sequence[str] = (),
    ) -> Passes[StepRecord]: ...


_SUMMED = (
    "reused_tokens",
    "processed_tokens",
    "draft_tokens",
    "accepted",
    "accepted_chars",
    "t_prompt",
    "t_gen",
    "ending_tokens",
    "resync_drafted",
    "resync_accepted",
    "t_prompt_eval",
    "t_verify",
    "t_decode",
    "verify_rows",
    "verify_passes",
    "decode_passes",
    "t_draft",
    "draft_passes",
)


def window_stream(talk: Stream, source: str, final: bool) -> Stream:
    """A window as a one-step stream for the sentence decoder (same id and languages as the talk)."""
    return Stream(id=talk.id, src=talk.src, tgt=talk.tgt, steps=(Step(source=source, final=final),))


def talk_steps(
    decoder: WindowDecoder, stream: Stream, seq: KVSequence, policy: WindowPolicy
) -> Passes[StreamResult]:
    """The step machine of one long-form stream: yields its forward passes, returns one record per update."""
    method = decoder.method
    result = StreamResult(stream_id=stream.id, method=method)
    chain = decoder.start_stream(stream, seq)  # the talk's drafters, one stream for them
    committed: list[str] = []  # the target of every closed window, in order
    context: deque[tuple[str, str]] = deque(maxlen=policy.context_sentences)
    previous: list[int] = []  # the open window's previous output (the first drafter's material)
    window_outputs: list[str] = []  # the open window's outputs so far (the display policy's)
    previous_output = ""
    elapsed_ms = 0.0
    for index, (step, plan) in enumerate(zip(stream.steps, window_updates(stream, policy), strict=True)):
        records: list[StepRecord] = []
        for a, b in plan.closed:
            source = plan.source(a, b)
            window = window_stream(stream, source, final=True)
            record = yield from decoder.step_passes(window, 0, previous, seq, tuple(context), chain)
            records.append(record)
            committed.append(record.output)
            context.append((source, record.output))
            previous, window_outputs = [], []
        open_output = open_display = ""
        open_accepted = 0
        if plan.open_source is not None:
            window = window_stream(stream, plan.open_source, final=False)
            record = yield from decoder.step_passes(
                window, 0, previous, seq, tuple(context), chain, earlier=window_outputs
            )
            records.append(record)
            open_output, open_display = record.output, record.display
            open_accepted = record.accepted_chars
            window_outputs.append(open_output)
            previous = list(record.output_ids)
        committed_text = join_texts(committed, stream.tgt)
        output = join_texts([committed_text, open_output], stream.tgt)
        display = join_texts([committed_text, open_display], stream.tgt)
        work = sum(r.t_prompt + r.t_gen for r in records) * 1000.0
        if step.time_ms is not None:
            elapsed_ms = max(step.time_ms, elapsed_ms) + work
        else:
            elapsed_ms += work
        keep = common_prefix_length(previous_output, output)
        talk: dict[str, Any] = {
            "source_words": len(plan.units),
            "emitted_ms": step.time_ms,
            "elapsed_ms": round(elapsed_ms, 3),
            "deleted": previous_output[keep:],
            "committed_words": plan.start,
            "committed_chars": len(committed_text),
            "closed": [[a, b] for a, b in plan.closed],
            "open": [plan.start, plan.start if step.final else max(plan.start, len(plan.units))],
            "prompt_tokens": max((r.prompt_tokens for r in records), default=0),
            "open_accepted_chars": open_accepted,
        }
        record = _update_record(index, step, records, output, display, talk)
        record.drafters_written = decoder.writes_drafters
        result.steps.append(record)
        previous_output = output
    return result


def _update_record(
    index: int,
    step: Step,
    records: Sequence[StepRecord],
    output: str,
    display: str,
    talk: dict[str, Any],
) -> StepRecord:
    sums: dict[str, Any] = {name: sum(getattr(r, name) for r in records) for name in _SUMMED}
    ids = [token for r in records for token in r.output_ids]
    offered: dict[str, int] = {}
    steered: dict[str, int] = {}
    for r in records:
        for drafter, n in r.offered.items():
            offered[drafter] = offered.get(drafter, 0) + n
        for drafter, n in r.steered.items():
            steered[drafter] = steered.get(drafter, 0) + n
    return StepRecord(
        step=index,
        source=step.source,
        final=step.final,
        time_ms=step.time_ms,
        prompt_tokens=talk["prompt_tokens"],
        output_ids=ids,
        output=output,
        display=output if step.final else display,
        stop=records[-1].stop if records else "",
        talk=talk,
        # the windows' drafters, token by token (``drafter_chars`` stays empty: the talk-level output is not
        # the windows' outputs one after another, so `simul show` marks only the open window's draft)
        drafted_by=[name for r in records for name in r.drafted_by],
        offered=offered,
        model_drafts=[draft for r in records for draft in r.model_drafts],
        steered=steered,
        **sums,
    )


def talk_windows(stream: Stream, policy: WindowPolicy) -> list[tuple[str, bool]]:
    """Every window source the policy will decode on ``stream`` (closed ones final), in order."""
    out: list[tuple[str, bool]] = []
    for plan in window_updates(stream, policy):
        out += [(plan.source(a, b), True) for a, b in plan.closed]
        if plan.open_source is not None:
            out.append((plan.open_source, False))
    return out


def talk_positions_needed(decoder: WindowDecoder, stream: Stream, policy: WindowPolicy) -> int:
    """A bound on the KV positions any update of the talk can need, independent of the talk's length.

    For every window: its prompt with the context at its largest (each of the ``context_sentences`` pairs
    taken as the longest closed window's source with an output at its length cap, ``max_len_ratio`` x source
    tokens + ``max_len_slack``) plus the window's own output cap."""
    windows = talk_windows(stream, policy)
    lang_src, lang_tgt = get_language(stream.src), get_language(stream.tgt)
    bare = len(decoder.tokenize_prompt(decoder.template.render(lang_src, lang_tgt, "")))
    longest_closed = max((len(decoder.backend.tokenize(s)) for s, final in windows if final), default=0)
    pair = longest_closed + int(decoder.max_len_ratio * longest_closed) + decoder.max_len_slack
    # the context pair's own template text: a one-pair context rendered with empty texts
    turn = len(decoder.tokenize_prompt(decoder.template.render(lang_src, lang_tgt, "", (("", ""),)))) - bare
    context = policy.context_sentences * (pair + max(turn, 0))
    need = 0
    seen: set[str] = set()
    for source, _final in windows:
        if source in seen:
            continue
        seen.add(source)
        n_src = len(decoder.backend.tokenize(source))
        need = max(need, bare + n_src + context + decoder.max_output_tokens(source))
    return need

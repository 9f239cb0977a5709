"""What decoding produces: one record per step of a stream, and the steps of a stream under one method."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from simul.request.methods import Method

TALK_KEYS = (
    "source_words",
    "emitted_ms",
    "elapsed_ms",
    "deleted",
    "committed_words",
    "committed_chars",
    "closed",
    "open",
    "prompt_tokens",
    "open_accepted_chars",
)


@dataclass
class StepRecord:
    """Everything that happened at one step of one stream under one method."""

    step: int
    source: str
    final: bool
    time_ms: float | None
    prompt_tokens: int  # length of the prompt in tokens
    reused_tokens: int  # prompt positions whose KV was kept from the previous sequence
    processed_tokens: int  # prompt positions evaluated at this step
    draft_tokens: int  # m: length of the draft offered for verification (0 for RT and the first step)
    accepted: int  # d: draft tokens kept
    output_ids: list[int]  # Y^t, model tokens without the stop token
    output: str  # Y^t as text
    display: str  # what the viewer sees at this step (masked at non-final steps)
    accepted_chars: int  # characters of ``output`` that came from accepted draft tokens
    stop: str  # why decoding stopped: eog, newline, length
    t_prompt: float  # seconds
    t_gen: float  # seconds, verification included
    # beyond the paper (see Method): sentence-final draft tokens reopened or verified without bias, and the
    # drafts proposed by re-synchronisation after a divergence
    ending_tokens: int = 0
    resync_drafted: int = 0
    resync_accepted: int = 0
    # where the time went, in seconds: forward passes over the prompt, over drafts (verification, and CD's
    # re-encoding of its draft), and one token at a time (decoding); the rest of t_prompt + t_gen is Python
    t_prompt_eval: float = 0.0
    t_verify: float = 0.0
    t_decode: float = 0.0
    # how many draft positions went through draft passes (in t_verify) and how many one-token passes ran (in
    # t_decode): their ratio of times per unit is the c of the speedup model (see metrics.speed.row_cost)
    verify_rows: int = 0
    decode_passes: int = 0
    # Methods that draft with a draft model (spec): the draft model's forward passes at this step and the
    # seconds spent drafting (its passes and the drafter's Python, within t_gen). Written only when there
    # were some, so that the run files of other methods keep their bytes.
    t_draft: float = 0.0
    draft_passes: int = 0
    # and each of the draft model's drafts at this step as [tokens offered, tokens kept], in order (for the
    # acceptance by draft position; written with draft_passes)
    model_drafts: list[list[int]] = field(default_factory=list)
    # forward passes over drafts (verification; CD's re-encoding of its draft); written to steps.jsonl with
    # the drafters (``drafters_written``), else 0 when read back
    verify_passes: int = 0
    # Long-form streams only (a whole talk, see simul.decoding.longform): ``output`` and ``display`` are then
    # the talk-level texts after this update (committed target + the open window's output or displayed part),
    # while ``output_ids``, ``draft_tokens``, ``accepted`` and the times cover the window decodings the update
    # ran (closing windows and re-translating the open one), so TPS and A/D, A/O count the work done, not the
    # committed text repeated. The keys of ``talk`` (see TALK_KEYS):
    #   source_words     source words known at this update (the talk's transcript, whitespace words)
    #   emitted_ms       when the update was emitted on the talk's clock, computation-unaware: the step's
    #                    time_ms (None for untimed text documents)
    #   elapsed_ms       computation-aware: the talk's clock when the update's computation ended,
    #                    max(time_ms, previous elapsed_ms) + (t_prompt + t_gen) in ms; for untimed documents
    #                    the computation time spent on the talk so far
    #   deleted          the text of the previous talk-level output that this update took back
    #   committed_words  source words in closed (committed) windows after this update
    #   committed_chars  characters of ``output`` (and ``display``) that are committed: never revised again
    #   closed           source word ranges [start, end) of the windows closed (and committed) at this update
    #   open             the source word range [start, end) of the open window after this update
    #   prompt_tokens    the largest prompt (template + context + window) of this update's decodings
    #   open_accepted_chars  characters of the open window's output that came from its accepted draft
    talk: dict[str, Any] | None = None
    # Which drafter proposed each output token ("" for the model's own picks; simul.decoding.methods names
    # them: "previous", "resync", "target", "lookup", "ngram-cache"), how many tokens each drafter proposed
    # for verification at this step (``offered``) and how many steering drafts (``steered``: the target
    # bias). steps.jsonl holds them, with ``drafter_chars`` (where each run of one drafter's tokens ends, in
    # characters of ``output``, for `simul show`), only when ``drafters_written``: for methods with a drafter
    # other than the built-in ones (simul.decoding.methods.built_in.BUILT_IN_DRAFTERS), so that the bytes of
    # RT's, SSBD's and CD's run files stay those of runs made before drafters had names (docs/methods.md).
    # Their records read back from a run have them empty; :meth:`drafter_counts` gives the same figures
    # either way.
    drafted_by: list[str] = field(default_factory=list)
    offered: dict[str, int] = field(default_factory=dict)
    steered: dict[str, int] = field(default_factory=dict)
    drafters_written: bool = False
    drafter_chars: list[int] = field(default_factory=list)

    @property
    def new_tokens(self) -> int:
        return len(self.output_ids) - self.accepted

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "source": self.source,
            "final": self.final,
            "time_ms": self.time_ms,
            "prompt_tokens": self.prompt_tokens,
            "reused_tokens": self.reused_tokens,
            "processed_tokens": self.processed_tokens,
            "draft_tokens": self.draft_tokens,
            "accepted": self.accepted,
            "output_ids": self.output_ids,
            "output": self.output,
            "display": self.display,
            "accepted_chars": self.accepted_chars,
            "stop": self.stop,
            "t_prompt": round(self.t_prompt, 6),
            "t_gen": round(self.t_gen, 6),
            "ending_tokens": self.ending_tokens,
            "resync_drafted": self.resync_drafted,
            "resync_accepted": self.resync_accepted,
            "t_prompt_eval": round(self.t_prompt_eval, 6),
            "t_verify": round(self.t_verify, 6),
            "t_decode": round(self.t_decode, 6),
            "verify_rows": self.verify_rows,
            "decode_passes": self.decode_passes,
            **({"talk": self.talk} if self.talk is not None else {}),
            **(
                {
                    "t_draft": round(self.t_draft, 6),
                    "draft_passes": self.draft_passes,
                    "model_drafts": self.model_drafts,
                }
                if self.draft_passes
                else {}
            ),
            **(self._drafters_json() if self.drafters_written else {}),
        }

    def _drafters_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "drafted_by": self.drafted_by,
            "offered": self.offered,
            "drafter_chars": self.drafter_chars,
            "verify_passes": self.verify_passes,
        }
        if self.steered:
            out["steered"] = self.steered
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> StepRecord:
        fields = cls.__dataclass_fields__
        missing = [
            n
            for n, f in fields.items()
            if n not in obj and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        if missing:
            raise KeyError(f"missing field(s) {', '.join(missing)}")
        values = {name: obj[name] for name in fields if name in obj and name != "drafters_written"}
        return cls(**values, drafters_written="drafted_by" in obj)

    def drafter_counts(self) -> dict[str, tuple[int, int]]:
        """Per drafter, the tokens it proposed for verification at this step and how many were kept, from
        ``offered`` and ``drafted_by`` where the record has them written, else from the counts every record
        has (the previous output's draft: ``draft_tokens``/``accepted``; --resync's:
        ``resync_drafted``/``resync_accepted``). Steering drafts (the target bias) are decoding, not drafts:
        not counted."""
        if self.drafters_written:
            return {name: (n, self.drafted_by.count(name)) for name, n in self.offered.items()}
        counts: dict[str, tuple[int, int]] = {}
        if self.draft_tokens:
            counts["previous"] = (self.draft_tokens, self.accepted)
        if self.resync_drafted:
            counts["resync"] = (self.resync_drafted, self.resync_accepted)
        return counts

    @property
    def drafted_total(self) -> int:
        """Draft tokens offered for verification at this step, by every drafter."""
        if self.drafters_written:
            return sum(self.offered.values())
        return self.draft_tokens + self.resync_drafted

    @property
    def accepted_total(self) -> int:
        """Output tokens that came from a verified draft rather than one-by-one decoding."""
        if self.drafters_written:
            return sum(kept for _, kept in self.drafter_counts().values())
        return self.accepted + self.resync_accepted


@dataclass
class StreamResult:
    """The steps of one stream decoded by one method."""

    stream_id: str
    method: Method
    steps: list[StepRecord] = field(default_factory=list)

    @property
    def final_output(self) -> str:
        return self.steps[-1].output if self.steps else ""

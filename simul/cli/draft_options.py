"""The options of the n-gram drafters (docs/methods.md, "The n-gram drafters"), as `simul eval` and `simul
bench` get them: SSBD's tail drafter (``--tail-draft``), the n-gram sizes and draft lengths, and
ngram-cache's static cache file. Each n-gram option defaults to None, so that "given" and "left at the
default of its use" can be told apart (an option no drafter uses is refused, simul.cli.ignored)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import typer

from simul.cli.ignored import draft_options, refuse
from simul.request.ngram_settings import NGRAM_DRAFTERS, NgramDraft, NgramDrafter

TailDraftOpt = Annotated[
    NgramDrafter | None,
    typer.Option(
        "--tail-draft",
        help="SSBD: once the previous output's draft is used up or rejected, draft the tail with this "
        "n-gram drafter, verified by exact greedy acceptance (--resync's drafts are asked first).",
    ),
]
# `simul eval`'s: the n-gram drafters, or the draft model (--draft-model, --draft-layers)
TailDraft = Literal["lookup", "ngram-cache", "model"]
DRAFT_MODEL_METHODS = ("spec", "bild")  # the methods whose --draft-max/--draft-min are the draft model's
EvalTailDraftOpt = Annotated[
    TailDraft | None,
    typer.Option(
        "--tail-draft",
        help="SSBD: once the previous output's draft is used up or rejected, draft the tail with this "
        "n-gram drafter, or with the draft model (model: --draft-model or --draft-layers), verified by exact "
        "greedy acceptance (--resync's drafts are asked first).",
    ),
]


@dataclass(frozen=True)
class DraftOptions:
    """The n-gram drafter's settings (simul.request.ngram_settings); unset: the defaults of its use."""

    ngram_min: Annotated[
        int | None,
        typer.Option(
            "--ngram-min",
            help="Shortest n-gram a match may have (lookup: tried from --ngram-max down to it; default 1).",
        ),
    ] = None
    ngram_max: Annotated[
        int | None,
        typer.Option(
            "--ngram-max",
            help="Longest n-gram matched (lookup: LlamaPromptLookupDecoding's max_ngram_size; default 2, and "
            "3 after SSBD's draft; ngram-cache: 4, at most 4).",
        ),
    ] = None
    draft_min: Annotated[
        int | None,
        typer.Option(
            "--draft-min",
            help="Drop n-gram drafts shorter than this (llama.cpp's --draft-min; default 0, and 2 after "
            "SSBD's draft); with a draft model (spec, bild, --tail-draft model), its drafts (default 0).",
        ),
    ] = None
    draft_max: Annotated[
        int | None,
        typer.Option(
            "--draft-max",
            help="Longest n-gram draft (lookup: num_pred_tokens, default 10; ngram-cache: 16; 4 after "
            "SSBD's draft); with a draft model, its drafts (spec and --tail-draft model: 16, llama.cpp's; "
            "bild: 10).",
        ),
    ] = None
    ngram_cache_file: Annotated[
        Path | None,
        typer.Option(
            "--ngram-cache-file",
            help="ngram-cache: a static cache built from this file, UTF-8 text (tokenized by the model, line "
            "by line) or *.tokens (token ids, one sequence per line); its sha256 goes into run.json and the "
            "method key.",
        ),
    ] = None

    def given(self) -> list[str]:
        """The options given, as spelled on the command line."""
        values = {
            "--ngram-min": self.ngram_min,
            "--ngram-max": self.ngram_max,
            "--draft-min": self.draft_min,
            "--draft-max": self.draft_max,
            "--ngram-cache-file": self.ngram_cache_file,
        }
        return [name for name, value in values.items() if value is not None]

    def settings(self, kind: NgramDrafter, tail: bool) -> NgramDraft:
        """The drafter's settings for this use (usage errors when they do not go together)."""
        cache = self.ngram_cache_file.resolve() if self.ngram_cache_file is not None else None
        return NgramDraft.of(
            kind, tail, self.ngram_min, self.ngram_max, self.draft_min, self.draft_max, cache_file=cache
        )

    def split_for(
        self, method: str, tail_draft: TailDraft | None
    ) -> tuple[int | None, int, NgramDraft | None]:
        """--draft-max and --draft-min for the draft model (spec, bild, SSBD's --tail-draft model: the n-gram
        options are then refused), else the n-gram drafter's settings (:meth:`for_method`)."""
        if method in DRAFT_MODEL_METHODS or tail_draft == "model":
            ngram_only = [name for name in self.given() if name not in ("--draft-max", "--draft-min")]
            what = f"--method {method}" if tail_draft != "model" else "--tail-draft model"
            problems = []
            if ngram_only:
                problems.append(
                    f"{', '.join(ngram_only)} set(s) the n-gram drafter, and {what} drafts with the draft "
                    "model: drop them"
                )
            if tail_draft is not None and tail_draft != "model":
                problems.append(
                    f"--tail-draft drafts after SSBD's draft, and {what} drafts with a draft model"
                )
            refuse(problems)
            return self.draft_max, self.draft_min or 0, None
        return None, 0, self.for_method(method, tail_draft)

    def for_method(self, method: str, tail_draft: NgramDrafter | None) -> NgramDraft | None:
        """The n-gram drafter of ``--method method [--tail-draft tail_draft]``: the method's own (lookup,
        ngram-cache), SSBD's tail drafter, or None; options it would ignore are refused first."""
        refuse(draft_options(method, tail_draft, self.given()))
        if method in NGRAM_DRAFTERS:
            return self.settings(method, tail=False)
        if tail_draft is not None:
            return self.settings(tail_draft, tail=True)
        return None

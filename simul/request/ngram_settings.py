"""The settings of the n-gram drafters (docs/methods.md, "The n-gram drafters"): prompt lookup (``lookup``,
llama-cpp-python's ``LlamaPromptLookupDecoding``) and the n-gram cache (``ngram-cache``, llama.cpp's
``common/ngram-cache.cpp``), used as a method of their own (``--method lookup``) or after SSBD's draft
(``--tail-draft lookup``).

A value left unset takes the default of its use (:data:`DEFAULTS`): on its own a drafter follows its
reference (``LlamaPromptLookupDecoding(max_ngram_size=2, num_pred_tokens=10)``; llama.cpp's lookup with
n-grams of 1 to 4 tokens and 16 draft tokens); after SSBD's draft it is selective, because a draft whose
first token is kept costs a wide verification pass instead of a one-token one: short drafts (at most 4), none
shorter than 2, and a rest after three poor drafts in a row (``rest_after``; llama.cpp's ``ngram-mod`` resets
its pool after three drafts that kept less than half). simul.decoding.methods.selective has the reasons.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, get_args

from simul.common.errors import UsageError

NgramDrafter = Literal["lookup", "ngram-cache"]
NGRAM_DRAFTERS: tuple[NgramDrafter, ...] = get_args(NgramDrafter)
# llama.cpp's n-gram cache counts n-grams of 1 to 4 tokens (LLAMA_NGRAM_MIN, LLAMA_NGRAM_MAX)
NGRAM_CACHE_MAX = 4


@dataclass(frozen=True)
class Defaults:
    ngram_min: int
    ngram_max: int
    draft_min: int
    draft_max: int
    rest_after: int  # poor drafts in a row before the drafter rests until the next step (0: never)


# (drafter, used after SSBD's draft) -> its defaults
DEFAULTS: dict[tuple[NgramDrafter, bool], Defaults] = {
    ("lookup", False): Defaults(ngram_min=1, ngram_max=2, draft_min=0, draft_max=10, rest_after=0),
    ("ngram-cache", False): Defaults(ngram_min=1, ngram_max=4, draft_min=0, draft_max=16, rest_after=0),
    ("lookup", True): Defaults(ngram_min=1, ngram_max=3, draft_min=2, draft_max=4, rest_after=3),
    ("ngram-cache", True): Defaults(ngram_min=1, ngram_max=4, draft_min=2, draft_max=4, rest_after=3),
}


@dataclass(frozen=True)
class NgramDraft:
    """One n-gram drafter's settings, checked and with every default filled in (:meth:`of`).

    ``tail``: it drafts after SSBD's draft (``--tail-draft``) rather than as the method's only drafter.
    ``ngram_min``..``ngram_max``: the n-gram sizes matched (lookup: tried from the longest down, as
    ``LlamaPromptLookupDecoding`` does down to 1; ngram-cache: the sizes counted, llama.cpp's 1..4).
    ``draft_min``/``draft_max``: a draft is cut to ``draft_max`` tokens and dropped when shorter than
    ``draft_min`` (llama.cpp's ``--draft-max``/``--draft-min``; ``num_pred_tokens`` for lookup).
    ``rest_after``: see the module docstring. ``cache_file``/``cache_sha256``: ngram-cache's static cache, a
    text or token file (simul.decoding.methods.ngram_cache.read_static), hashed so that a run names the
    exact file it used.
    """

    kind: NgramDrafter
    tail: bool
    ngram_min: int
    ngram_max: int
    draft_min: int
    draft_max: int
    rest_after: int
    cache_file: str | None = None
    cache_sha256: str | None = None

    @classmethod
    def of(
        cls,
        kind: NgramDrafter,
        tail: bool,
        ngram_min: int | None = None,
        ngram_max: int | None = None,
        draft_min: int | None = None,
        draft_max: int | None = None,
        cache_file: Path | str | None = None,
    ) -> NgramDraft:
        """The settings with the defaults of this use for what is not given (usage errors when they do not
        go together); a cache file is hashed now."""
        if kind not in NGRAM_DRAFTERS:
            raise UsageError(f"unknown n-gram drafter {kind!r}; choose one of {', '.join(NGRAM_DRAFTERS)}")
        base = DEFAULTS[(kind, tail)]
        chosen = cls(
            kind=kind,
            tail=tail,
            ngram_min=base.ngram_min if ngram_min is None else ngram_min,
            ngram_max=base.ngram_max if ngram_max is None else ngram_max,
            draft_min=base.draft_min if draft_min is None else draft_min,
            draft_max=base.draft_max if draft_max is None else draft_max,
            rest_after=base.rest_after,
        )
        if cache_file is not None:
            if kind != "ngram-cache":
                raise UsageError("--ngram-cache-file is the static cache of ngram-cache; lookup has none")
            chosen = replace(chosen, cache_file=str(cache_file), cache_sha256=file_sha256(Path(cache_file)))
        chosen.check()
        return chosen

    def check(self) -> None:
        if self.ngram_min < 1 or self.ngram_max < self.ngram_min:
            raise UsageError(
                f"--ngram-min must be 1 or more and at most --ngram-max, got {self.ngram_min} and "
                f"{self.ngram_max}"
            )
        if self.kind == "ngram-cache" and self.ngram_max > NGRAM_CACHE_MAX:
            raise UsageError(
                f"--ngram-max {self.ngram_max}: ngram-cache counts n-grams of at most {NGRAM_CACHE_MAX} "
                "tokens (llama.cpp's LLAMA_NGRAM_MAX)"
            )
        if self.draft_max < 1 or not 0 <= self.draft_min <= self.draft_max:
            raise UsageError(
                f"--draft-max must be 1 or more and --draft-min from 0 to --draft-max, got {self.draft_max} "
                f"and {self.draft_min}"
            )
        if self.rest_after < 0:
            raise UsageError(f"rest_after must be 0 or more, got {self.rest_after}")
        if (self.cache_file is None) != (self.cache_sha256 is None):
            raise UsageError("an n-gram cache file needs its sha256 (and a sha256 its file)")

    def changed(self) -> list[tuple[str, int]]:
        """The settings that differ from the defaults of this use, as (short name, value)."""
        base = DEFAULTS[(self.kind, self.tail)]
        names = (
            ("ngmin", "ngram_min"),
            ("ngmax", "ngram_max"),
            ("dmin", "draft_min"),
            ("dmax", "draft_max"),
            ("rest", "rest_after"),
        )
        return [(short, getattr(self, f)) for short, f in names if getattr(self, f) != getattr(base, f)]

    def key_parts(self) -> list[str]:
        """What the method key gains: the drafter, the settings off their defaults, the cache's hash."""
        parts = [f"tail-{self.kind}" if self.tail else self.kind]
        parts += [f"{short}{value}" for short, value in self.changed()]
        if self.cache_sha256:
            parts.append(f"static-{self.cache_sha256[:12]}")
        return parts

    def label(self) -> str:
        """``lookup``, ``ngram-cache(dmax8,static)``: the drafter and what is off its defaults."""
        extra = [f"{short}{value}" for short, value in self.changed()]
        if self.cache_sha256:
            extra.append("static")
        return self.kind + (f"({','.join(extra)})" if extra else "")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "tail": self.tail,
            "ngram_min": self.ngram_min,
            "ngram_max": self.ngram_max,
            "draft_min": self.draft_min,
            "draft_max": self.draft_max,
            "rest_after": self.rest_after,
        }
        if self.kind == "ngram-cache":
            # which caches drafted (docs/methods.md): the dynamic one learns within each stream only, and a
            # static one is the file named here
            out["caches"] = ["context", "dynamic (this stream's earlier steps)"] + (
                ["static"] if self.cache_file is not None else []
            )
        if self.cache_file is not None:
            out["cache_file"] = self.cache_file
            out["cache_sha256"] = self.cache_sha256
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> NgramDraft:
        """The settings as run.json holds them; a usage error names what is wrong (a damaged run file)."""
        try:
            return cls._from_json(obj)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(
                "the method's 'ngram' must be an n-gram drafter's settings (kind, tail, ngram_min, "
                f"ngram_max, draft_min, draft_max): {exc!r}"
            ) from None

    @classmethod
    def _from_json(cls, obj: dict[str, Any]) -> NgramDraft:
        draft = cls(
            kind=obj["kind"],
            tail=bool(obj["tail"]),
            ngram_min=int(obj["ngram_min"]),
            ngram_max=int(obj["ngram_max"]),
            draft_min=int(obj["draft_min"]),
            draft_max=int(obj["draft_max"]),
            rest_after=int(obj.get("rest_after", 0)),
            cache_file=obj.get("cache_file"),
            cache_sha256=obj.get("cache_sha256"),
        )
        if draft.kind not in NGRAM_DRAFTERS:
            raise UsageError(f"unknown n-gram drafter {draft.kind!r}")
        draft.check()
        return draft


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes (hex), or a usage error naming the file when it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise UsageError(f"--ngram-cache-file {path}: cannot read it ({exc.strerror or exc})") from None

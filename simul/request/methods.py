"""What a decoding method is called and how it is written: its label, its key in run files and its JSON form
(the settings and their rules are in simul.request.method_settings), and the methods `simul eval` runs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from simul.request.method_settings import (
    EXTERNAL,
    METHOD_NAMES,
    PLUGIN,
    DisplayPolicy,
    Ending,
    MaskMode,
    MethodName,
    MethodSettings,
)
from simul.request.ngram_settings import NGRAM_DRAFTERS, NgramDraft
from simul.request.plugin_spec import (
    options_from_json,
    parse_options,
    plugin_key,
    plugin_label,
    resolve,
)

DEFAULT_BETA = 0.2  # SSBD's bias when none is given (the paper's)


@dataclass(frozen=True)
class Method(MethodSettings):
    """A decoding method (:class:`MethodSettings`) with the names it goes by in tables and run files."""

    @property
    def label(self) -> str:
        """A short, stable name such as ``ssbd(b=0.2)+display-mask3``."""
        if self.name == EXTERNAL:
            return f"EXT({self.system})"
        if self.name == PLUGIN:
            assert self.plugin is not None
            return plugin_label(self.plugin, self.options)
        if self.name in NGRAM_DRAFTERS and self.ngram is not None:
            base = self.ngram.label().upper()
        else:
            base = self.name.upper() if self.name != "ssbd" else f"SSBD(b={self.beta:g})"
        if self.uses_draft_model:
            tail = "+tail-model" if self.tail_model else ""
            base += f"{tail}({','.join(self._draft_parts('=', ''))})"
        if self.mask_k:
            base += f"+{self.mask}-mask{self.mask_k}"
        if self.ending != "keep":
            base += f"+{self.ending}-ending"
        if self.resync:
            base += f"+resync{self.resync}"
        if self.target_bias:
            base += f"+target-bias{self.target_bias:g}"
        if self.ngram is not None and self.ngram.tail:
            base += f"+tail-{self.ngram.label()}"
        if self.display == "local-agreement":
            base += f"+LA{self.agreement}"
        return base

    @property
    def key(self) -> str:
        """A file-name-safe identifier, unique per setting."""
        if self.name == EXTERNAL:
            return f"ext-{self.system}"
        if self.name == PLUGIN:
            assert self.plugin is not None
            return plugin_key(self.plugin, self.options)
        parts: list[str] = [self.name]
        if self.name in NGRAM_DRAFTERS and self.ngram is not None:
            parts = self.ngram.key_parts()
        if self.beta is not None:
            parts.append(f"b{self.beta:g}")
        if self.uses_draft_model:
            if self.tail_model:
                parts.append("tailmodel")
            parts.extend(self._draft_parts("", "-"))
        if self.mask_k:
            parts.append(f"{self.mask}{self.mask_k}")
        if self.ending != "keep":
            parts.append(f"{self.ending}-ending")
        if self.resync:
            parts.append(f"resync{self.resync}")
        if self.target_bias:
            parts.append(f"tb{self.target_bias:g}")
        if self.ngram is not None and self.ngram.tail:
            parts += self.ngram.key_parts()
        if self.display == "local-agreement":
            parts.append(f"la{self.agreement}")
        return "-".join(parts)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "beta": self.beta,
            "mask_k": self.mask_k,
            "mask": self.mask,
            "ending": self.ending,
            "resync": self.resync,
        }
        if self.system is not None:
            out["system"] = self.system
        if self.target_bias:  # only when on, so run files written before the option read back unchanged
            out["target_bias"] = self.target_bias
        if self.display != "mask":  # runs made before display policies read back unchanged
            out["display"] = self.display
            out["agreement"] = self.agreement
        if self.uses_draft_model:
            out["draft_max"] = self.draft_max
            out["draft_min"] = self.draft_min
            out["draft_p_min"] = self.draft_p_min
            out["draft"] = self.draft
            out["greedy_exact"] = self.greedy_exact  # bild is not: its outputs may differ from the target's
            if self.tail_model:
                out["tail_model"] = True
        if self.name == "bild":
            out["fallback"] = self.fallback
            out["rollback"] = self.rollback
        if self.ngram is not None:  # only when there is one, as for target_bias
            out["ngram"] = self.ngram.to_json()
        if self.name == PLUGIN:
            out["plugin"] = self.plugin
            out["module"] = self.module
            out["options"] = dict(self.options)
        return out

    def _draft_parts(self, equals: str, dash: str) -> list[str]:
        """spec's settings as the label (``max=16``) or key (``max16``) spells them; the draft last."""
        parts = [f"max{equals}{self.draft_max}"]
        if self.draft_min:
            parts.append(f"min{equals}{self.draft_min}")
        if self.draft_p_min:
            parts.append(f"p{equals}{self.draft_p_min:g}")
        if self.name == "bild":  # BiLD's thresholds, always (their defaults may change)
            parts.append(f"fb{equals}{self.fallback:g}")
            parts.append(f"rb{equals}{self.rollback:g}")
        if self.draft:
            parts.append(f"draft{equals or dash}{self.draft}")
        return parts

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Method:
        return cls(
            name=obj["name"],
            beta=obj.get("beta"),
            mask_k=int(obj.get("mask_k", 0)),
            mask=obj.get("mask", "display"),
            ending=obj.get("ending", "keep"),
            resync=int(obj.get("resync", 0)),
            system=obj.get("system"),
            target_bias=float(obj.get("target_bias", 0.0)),
            display=obj.get("display", "mask"),
            agreement=int(obj.get("agreement", 2)),
            draft_max=None if obj.get("draft_max") is None else int(obj["draft_max"]),
            draft_min=int(obj.get("draft_min", 0)),
            draft_p_min=float(obj.get("draft_p_min", 0.0)),
            draft=obj.get("draft"),
            fallback=None if obj.get("fallback") is None else float(obj["fallback"]),
            rollback=None if obj.get("rollback") is None else float(obj["rollback"]),
            tail_model=bool(obj.get("tail_model", False)),
            ngram=NgramDraft.from_json(obj["ngram"]) if obj.get("ngram") is not None else None,
            plugin=obj.get("plugin"),
            module=obj.get("module"),
            options=options_from_json(obj.get("options")),
        )

    @property
    def drafters(self) -> tuple[str, ...]:
        """The names of the drafters whose drafts are verified (simul.decoding.methods), in the order they
        draft: the previous output (SSBD, CD), --resync's lookup, the n-gram drafter. The target bias steers
        decoding rather than drafting, so it is not among them."""
        names: list[str] = ["previous"] if self.name in ("ssbd", "cd") else []
        if self.resync:
            names.append("resync")
        if self.ngram is not None:
            names.append(self.ngram.kind)
        return tuple(names)


def unique_methods(methods: Iterable[Method]) -> list[Method]:
    """Each method once (by key), in the order first given."""
    return list({m.key: m for m in methods}.values())


def methods_for(
    method: MethodName,
    beta: float,
    mask_k: int,
    mask: MaskMode,
    baseline: bool,
    ending: Ending = "keep",
    resync: int = 0,
    target_bias: float = 0.0,
    display: DisplayPolicy = "mask",
    agreement: int = 2,
    draft_max: int | None = None,
    draft_min: int = 0,
    draft_p_min: float = 0.0,
    fallback: float | None = None,
    rollback: float | None = None,
    tail_model: bool = False,
    ngram: NgramDraft | None = None,
) -> list[Method]:
    """The methods of `simul eval`: the chosen one, preceded by plain RT when a baseline is wanted."""
    chosen = Method(
        name=method,
        beta=beta if method == "ssbd" else None,
        mask_k=mask_k,
        mask=mask,
        ending=ending,
        resync=resync,
        target_bias=target_bias,
        display=display,
        agreement=agreement,
        draft_max=draft_max,
        draft_min=draft_min,
        draft_p_min=draft_p_min,
        fallback=fallback,
        rollback=rollback,
        tail_model=tail_model,
        ngram=ngram,
    )
    methods: list[Method] = []
    if baseline and chosen != Method("rt"):
        methods.append(Method("rt"))
    methods.append(chosen)
    return methods


def plugin_method(spec: str, options: Iterable[str] = ()) -> Method:
    """The method of ``--method spec`` when ``spec`` is not built in: an entry point of ``simul.methods`` or
    ``MODULE:CLASS``, with its ``--method-option NAME=VALUE`` values (simul.request.plugin_spec)."""
    plugin, module = resolve(spec, (*METHOD_NAMES, EXTERNAL))
    return Method(name=PLUGIN, plugin=plugin, module=module, options=parse_options(options))

"""What a decoding method is: RT, SSBD(beta) or CD, with optional output or display-only mask-k."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from simul.errors import UsageError

MethodName = Literal["rt", "ssbd", "cd"]
MaskMode = Literal["display", "output"]
METHOD_NAMES: tuple[MethodName, ...] = ("rt", "ssbd", "cd")
MASK_MODES: tuple[MaskMode, ...] = ("display", "output")


@dataclass(frozen=True)
class Method:
    """A decoding method and its settings (SPEC "Decoding one stream").

    ``beta`` is the SSBD bias toward the draft (SSBD only). ``mask_k`` hides the last k tokens at non-final
    steps; with ``mask="output"`` they are also dropped from the next draft, with ``mask="display"`` only
    from what the viewer sees.
    """

    name: MethodName
    beta: float | None = None
    mask_k: int = 0
    mask: MaskMode = "display"

    def __post_init__(self) -> None:
        if self.name not in METHOD_NAMES:
            raise UsageError(f"unknown method {self.name!r}; choose one of {', '.join(METHOD_NAMES)}")
        if self.name == "ssbd":
            if self.beta is None:
                raise UsageError("SSBD needs a bias: pass --beta (the paper uses 0.2)")
            if not 0.0 <= self.beta <= 1.0:
                raise UsageError(f"--beta must be between 0 and 1, got {self.beta}")
        elif self.beta is not None:
            object.__setattr__(self, "beta", None)
        if self.mask_k < 0:
            raise UsageError(f"--mask-k must be 0 or more, got {self.mask_k}")
        if self.mask not in MASK_MODES:
            raise UsageError(f"--mask must be display or output, got {self.mask!r}")

    @property
    def uses_draft(self) -> bool:
        return self.name != "rt"

    @property
    def label(self) -> str:
        """A short, stable name such as ``ssbd(b=0.2)+display-mask3``."""
        base = self.name.upper() if self.name != "ssbd" else f"SSBD(b={self.beta:g})"
        if self.mask_k:
            base += f"+{self.mask}-mask{self.mask_k}"
        return base

    @property
    def key(self) -> str:
        """A file-name-safe identifier, unique per setting."""
        parts = [self.name]
        if self.beta is not None:
            parts.append(f"b{self.beta:g}")
        if self.mask_k:
            parts.append(f"{self.mask}{self.mask_k}")
        return "-".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "beta": self.beta, "mask_k": self.mask_k, "mask": self.mask}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Method:
        return cls(
            name=obj["name"],
            beta=obj.get("beta"),
            mask_k=int(obj.get("mask_k", 0)),
            mask=obj.get("mask", "display"),
        )

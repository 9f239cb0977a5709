"""What a decoding method is: RT, SSBD(beta) or CD, with optional output or display-only mask-k, and the
display policy (mask-k, or LocalAgreement-n)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from simul.errors import UsageError

MethodName = Literal["rt", "ssbd", "cd"]
MaskMode = Literal["display", "output"]
Ending = Literal["keep", "unbiased", "reopen"]
DisplayPolicy = Literal["mask", "local-agreement"]
DISPLAY_POLICIES: tuple[DisplayPolicy, ...] = ("mask", "local-agreement")
METHOD_NAMES: tuple[MethodName, ...] = ("rt", "ssbd", "cd")
MASK_MODES: tuple[MaskMode, ...] = ("display", "output")
ENDINGS: tuple[Ending, ...] = ("keep", "unbiased", "reopen")


@dataclass(frozen=True)
class Method:
    """A decoding method and its settings (SPEC "Decoding one stream").

    ``beta`` is the SSBD bias toward the draft (SSBD only). ``mask_k`` hides the last k tokens at non-final
    steps; with ``mask="output"`` they are also dropped from the next draft, with ``mask="display"`` only
    from what the viewer sees.

    Two options go beyond the paper and are off by default, so the paper's SSBD stays reproducible:

    * ``ending``: what happens to sentence-final tokens (``. ! ? 。`` and closing quotes) at the end of the
      draft while the source is not final. ``keep`` (the paper) verifies them like any token, so the bias can
      keep an ending that new source words contradict and the model stops early ("frozen" steps);
      ``unbiased`` verifies them without the bias; ``reopen`` removes them from the draft so the model
      decides afresh whether the sentence ends.
    * ``resync``: after the draft diverges, look for the last ``resync`` output tokens in the rest of the
      previous output (as prompt-lookup decoding does) and propose what followed them as a new draft,
      verified the same way. 0 turns it off.
    """

    name: MethodName
    beta: float | None = None
    mask_k: int = 0
    mask: MaskMode = "display"
    ending: Ending = "keep"
    resync: int = 0
    # What the viewer sees: "mask" (the output, without its last mask_k tokens at non-final steps) or
    # "local-agreement" (the longest common prefix of the last ``agreement`` outputs; simul.display)
    display: DisplayPolicy = "mask"
    agreement: int = 2

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
        if self.ending not in ENDINGS:
            raise UsageError(f"--ending must be one of {', '.join(ENDINGS)}, got {self.ending!r}")
        if self.resync < 0:
            raise UsageError(f"--resync must be 0 (off) or an n-gram size, got {self.resync}")
        if self.display not in DISPLAY_POLICIES:
            raise UsageError(f"--display must be mask or local-agreement, got {self.display!r}")
        if self.display == "local-agreement":
            if self.agreement < 1:
                raise UsageError(f"--agreement must be 1 or more, got {self.agreement}")
            if self.mask_k and self.mask == "display":
                raise UsageError(
                    "--display local-agreement replaces display-only mask-k: drop --mask-k, or pass "
                    "--mask output to shorten the drafts as well"
                )
        elif self.agreement != 2:
            object.__setattr__(self, "agreement", 2)
        if self.name == "rt" and (self.ending != "keep" or self.resync):
            raise UsageError("--ending and --resync act on the draft; RT has none")
        if self.name == "cd" and (self.resync or self.ending == "unbiased"):
            raise UsageError(
                "--resync and --ending unbiased need verification; CD keeps the draft unverified"
            )

    @property
    def uses_draft(self) -> bool:
        return self.name != "rt"

    @property
    def label(self) -> str:
        """A short, stable name such as ``ssbd(b=0.2)+display-mask3``."""
        base = self.name.upper() if self.name != "ssbd" else f"SSBD(b={self.beta:g})"
        if self.mask_k:
            base += f"+{self.mask}-mask{self.mask_k}"
        if self.ending != "keep":
            base += f"+{self.ending}-ending"
        if self.resync:
            base += f"+resync{self.resync}"
        if self.display == "local-agreement":
            base += f"+LA{self.agreement}"
        return base

    @property
    def key(self) -> str:
        """A file-name-safe identifier, unique per setting."""
        parts: list[str] = [self.name]
        if self.beta is not None:
            parts.append(f"b{self.beta:g}")
        if self.mask_k:
            parts.append(f"{self.mask}{self.mask_k}")
        if self.ending != "keep":
            parts.append(f"{self.ending}-ending")
        if self.resync:
            parts.append(f"resync{self.resync}")
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
        if self.display != "mask":  # runs made before display policies read back unchanged
            out["display"] = self.display
            out["agreement"] = self.agreement
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Method:
        return cls(
            name=obj["name"],
            beta=obj.get("beta"),
            mask_k=int(obj.get("mask_k", 0)),
            mask=obj.get("mask", "display"),
            ending=obj.get("ending", "keep"),
            resync=int(obj.get("resync", 0)),
            display=obj.get("display", "mask"),
            agreement=int(obj.get("agreement", 2)),
        )

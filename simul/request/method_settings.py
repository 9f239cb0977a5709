"""The settings of a decoding method and the rules on which of them go together: RT, SSBD(beta), CD or an
n-gram drafter's method (lookup, ngram-cache), with optional output or display-only mask-k, SSBD's tail
drafter, and the display policy (mask-k, or LocalAgreement-n); or a method from outside simul (a plug-in:
simul.request.plugin_spec) with its own options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from simul.common.errors import UsageError
from simul.request.ngram_settings import NGRAM_DRAFTERS, NgramDraft
from simul.request.plugin_spec import Options, check_entry_name, check_module_path, check_options

DecodedMethod = Literal["rt", "ssbd", "cd", "lookup", "ngram-cache"]  # what simul decodes
MethodName = Literal[DecodedMethod, "ext", "plugin"]
MaskMode = Literal["display", "output"]
Ending = Literal["keep", "unbiased", "reopen"]
METHOD_NAMES: tuple[DecodedMethod, ...] = get_args(DecodedMethod)
EXTERNAL: MethodName = "ext"  # outputs of another system, brought in by `simul ingest`
PLUGIN: MethodName = "plugin"  # a method from outside simul, decoded by simul (docs/methods.md)
DisplayPolicy = Literal["mask", "local-agreement"]
DISPLAY_POLICIES: tuple[DisplayPolicy, ...] = ("mask", "local-agreement")
MASK_MODES: tuple[MaskMode, ...] = ("display", "output")
ENDINGS: tuple[Ending, ...] = ("keep", "unbiased", "reopen")


@dataclass(frozen=True)
class MethodSettings:
    """A decoding method's settings, checked on construction (SPEC "Decoding one stream").

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

    * ``target_bias``: the SSBD reference implementation's ``--target-bias-beta``. After the first rejection
      at draft position d, the token taken from p_d replaces D_d, and decoding then keeps a bias (the same
      mixture rule, with this beta) toward the rest of the rejected draft, aligned as the reference aligns
      it: the token after the replacement is biased toward D_d, the next toward D_(d+1), and so on, as if
      the replacement had been inserted before D_d. The bias ends at the first token that differs from the
      draft, or at its end. 0 turns it off.

    * ``ngram``: the n-gram drafter (simul.request.ngram_settings): the only drafter of the methods
      ``lookup`` and ``ngram-cache`` (RT with its drafts, verified by exact greedy acceptance), or SSBD's
      tail drafter (``--tail-draft``), asked once the previous output's draft is used up or rejected.

    ``ext`` is not a decoder: it names the outputs of another system scored by simul (``simul ingest``),
    with ``system`` the name given to them.

    ``plugin`` is a method from outside simul (docs/methods.md): ``plugin`` is what it was asked for by (an
    entry point's name, or ``MODULE:CLASS``), ``module`` the ``MODULE:CLASS`` every process imports, and
    ``options`` its own options (``--method-option NAME=VALUE``, sorted by name). It takes none of the
    built-in methods' settings.
    """

    name: MethodName
    beta: float | None = None
    mask_k: int = 0
    mask: MaskMode = "display"
    ending: Ending = "keep"
    resync: int = 0
    system: str | None = None
    target_bias: float = 0.0
    # What the viewer sees: "mask" (the output, without its last mask_k tokens at non-final steps) or
    # "local-agreement" (the longest common prefix of the last ``agreement`` outputs; simul.decoding.display)
    display: DisplayPolicy = "mask"
    agreement: int = 2
    ngram: NgramDraft | None = None
    plugin: str | None = None
    module: str | None = None
    options: Options = ()

    def __post_init__(self) -> None:
        if self.name == PLUGIN:
            self._check_plugin()
            return
        if self.plugin is not None or self.module is not None or self.options:
            raise UsageError(
                f"--method-option sets a plug-in's own options, and --method {self.name} is built in: drop it"
            )
        if self.name == EXTERNAL:
            if not self.system or not all(ch.isalnum() or ch in "._-" for ch in self.system):
                raise UsageError(
                    "outputs of another system come in through `simul ingest --name NAME` (NAME: letters, "
                    f"digits, '.', '_' or '-'), got {self.system!r}"
                )
            if (
                self.beta is not None
                or self.mask_k
                or self.ending != "keep"
                or self.resync
                or self.target_bias
                or self.ngram is not None
            ):
                raise UsageError("an ingested system's outputs take no decoding options")
            return
        if self.system is not None:
            raise UsageError("only ingested outputs (method ext) carry a system name")
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
        if not 0.0 <= self.target_bias <= 1.0:
            raise UsageError(f"--target-bias-beta must be between 0 and 1, got {self.target_bias}")
        if self.target_bias and self.name != "ssbd":
            raise UsageError("--target-bias-beta biases decoding toward a rejected draft; only SSBD has one")
        if self.target_bias and self.resync:
            raise UsageError("--target-bias-beta and --resync both act on the rest of the draft; choose one")
        if self.display not in DISPLAY_POLICIES:
            raise UsageError(f"the display must be mask or local-agreement, got {self.display!r}")
        if self.display == "local-agreement":
            if self.agreement < 1:
                raise UsageError(f"--local-agreement must be 1 or more, got {self.agreement}")
            if self.mask_k and self.mask == "display":
                raise UsageError(
                    "--local-agreement replaces display-only mask-k: drop --mask-k, or pass "
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
        self._check_ngram()

    def _check_ngram(self) -> None:
        """The n-gram drafter: the only drafter of lookup and ngram-cache, or SSBD's tail drafter."""
        ngram = self.ngram
        if self.name in NGRAM_DRAFTERS:
            if ngram is None or ngram.kind != self.name or ngram.tail:
                raise UsageError(f"--method {self.name} needs its own {self.name} settings")
            if self.ending != "keep" or self.resync or self.target_bias:
                raise UsageError(
                    f"--ending, --resync and --target-bias-beta act on the previous output's draft; "
                    f"--method {self.name} has none"
                )
            if self.mask == "output" and self.mask_k:
                raise UsageError(
                    f"--mask output shortens the previous output's draft, and --method {self.name} has none: "
                    "drop --mask output (display-only mask-k still applies)"
                )
            return
        if ngram is None:
            return
        if self.name != "ssbd":
            hint = {"rt": f"RT with {ngram.kind} drafts is --method {ngram.kind}"}.get(
                self.name, "CD keeps its draft unverified and decodes on from it"
            )
            raise UsageError(f"--tail-draft drafts after SSBD's draft; {hint}")
        if not ngram.tail:
            raise UsageError("SSBD's n-gram drafter is a tail drafter (--tail-draft)")
        if self.target_bias:
            raise UsageError(
                "--target-bias-beta steers every token after the divergence, so --tail-draft would never be "
                "asked; choose one"
            )

    def _check_plugin(self) -> None:
        if not self.plugin or not self.module:
            raise UsageError("a plug-in method needs the name it was asked for and its MODULE:CLASS")
        if ":" in self.plugin:
            check_module_path(self.plugin)
            if self.plugin != self.module:
                raise UsageError(f"plug-in {self.plugin}: its module path must be {self.plugin}")
        else:
            check_entry_name(self.plugin, (*METHOD_NAMES, EXTERNAL, PLUGIN))
        check_module_path(self.module)
        object.__setattr__(self, "options", check_options(tuple(self.options)))
        given = [
            option
            for option, on in (
                ("--beta", self.beta is not None),
                ("--mask-k", self.mask_k != 0),
                ("--mask", self.mask != "display"),
                ("--ending", self.ending != "keep"),
                ("--resync", self.resync != 0),
                ("--target-bias-beta", self.target_bias != 0.0),
                ("--local-agreement", self.display != "mask" or self.agreement != 2),
                ("--tail-draft and the n-gram options", self.ngram is not None),
                ("a system name", self.system is not None),
            )
            if on
        ]
        if given:
            raise UsageError(
                f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for simul's own methods; plug-in "
                f"{self.plugin} takes its options as --method-option NAME=VALUE"
            )

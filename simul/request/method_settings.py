"""The settings of a decoding method and the rules on which of them go together: RT, SSBD(beta), CD, an
n-gram drafter's method (lookup, ngram-cache), spec (speculative decoding with a draft model) or bild
(BiLD), with optional output or display-only mask-k, SSBD's tail drafter (n-gram or the draft model), and
the display policy (mask-k, or LocalAgreement-n); or a method from outside simul (a plug-in:
simul.request.plugin_spec) with its own options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from simul.common.errors import UsageError
from simul.request.ngram_settings import NGRAM_DRAFTERS, NgramDraft
from simul.request.plugin_spec import Options, check_entry_name, check_module_path, check_options

DecodedMethod = Literal["rt", "ssbd", "cd", "lookup", "ngram-cache", "spec", "bild"]  # simul decodes these
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
# Methods that draft with a draft model loaded beside the target (--draft-model, --draft-layers).
DRAFT_MODEL_METHODS: tuple[DecodedMethod, ...] = ("spec", "bild")
# Methods whose output is the target's greedy output (up to batched-logit noise); bild is not (run.json says)
NOT_GREEDY_EXACT: tuple[DecodedMethod, ...] = ("bild",)
DEFAULT_DRAFT_MAX = 16  # tokens per draft: llama.cpp's --draft-max default
# BiLD (simul.decoding.methods.bild): within the paper's machine-translation sweep (appendix 7.1.2: fallback
# thresholds in [0.5, 0.9], rollback thresholds in [1, 10], at most 10 small-model tokens at a time)
DEFAULT_FALLBACK = 0.5
DEFAULT_ROLLBACK = 2.0
DEFAULT_BILD_MAX = 10
DRAFT_OPTIONS = "--draft-max, --draft-min and --draft-p-min"


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
    # spec (simul.decoding.methods.model_drafter): at most ``draft_max`` tokens per draft (None: the default,
    # 16), drafts shorter than ``draft_min`` dropped, drafting stopped below the draft's top-1 probability
    # ``draft_p_min`` (0: off); ``draft`` names the draft model in the method's key (DraftSettings.identity:
    # exitL for the target's first L blocks, else the start of the draft file's SHA-256), set by the request.
    draft_max: int | None = None
    draft_min: int = 0
    draft_p_min: float = 0.0
    draft: str | None = None
    # bild (simul.decoding.methods.bild): the fallback threshold alpha_FB (the draft's top-1 probability
    # below which it hands over) and the rollback threshold alpha_RB (nats of cross entropy); None: defaults
    fallback: float | None = None
    rollback: float | None = None
    # SSBD's --tail-draft model: past the previous output's draft (used up or rejected) the draft model
    # proposes, verified by exact greedy acceptance (the draft options above apply to it)
    tail_model: bool = False

    @property
    def uses_draft_model(self) -> bool:
        return self.name in DRAFT_MODEL_METHODS or self.tail_model

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
                or self.draft_max is not None
                or self.draft
                or self.fallback is not None
                or self.rollback is not None
                or self.tail_model
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
        if self.tail_model and self.name != "ssbd":
            raise UsageError(
                f"--tail-draft model drafts after SSBD's draft; --method {self.name} has "
                + ("its own draft model" if self.name in DRAFT_MODEL_METHODS else "no SSBD draft")
                + " (spec is RT with a draft model)"
            )
        if self.tail_model and self.ngram is not None:
            raise UsageError(f"SSBD has one tail drafter: --tail-draft model or {self.ngram.kind}, not both")
        if self.tail_model and self.target_bias:
            raise UsageError(
                "--target-bias-beta steers every token after the divergence, so --tail-draft model would "
                "never be asked; choose one"
            )
        self._check_draft_options()
        if self.name in ("rt", "spec", "bild") and (self.ending != "keep" or self.resync):
            raise UsageError(
                f"--ending and --resync act on the previous output as a draft; {self.name.upper()} has none"
            )
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

    def _check_bild_options(self) -> None:
        """BiLD's two thresholds: bild's alone (its fallback is the confidence bound: not --draft-p-min)."""
        if self.name != "bild":
            if self.fallback is not None or self.rollback is not None:
                raise UsageError(
                    "--bild-fallback and --bild-rollback are BiLD's policies: pass --method bild"
                )
            return
        if self.draft_p_min:
            raise UsageError(
                "--draft-p-min is BiLD's fallback threshold under another name: pass --bild-fallback P"
            )
        if self.fallback is None:
            object.__setattr__(self, "fallback", DEFAULT_FALLBACK)
        if self.rollback is None:
            object.__setattr__(self, "rollback", DEFAULT_ROLLBACK)
        assert self.fallback is not None and self.rollback is not None
        if not 0.0 <= self.fallback <= 1.0:
            raise UsageError(f"--bild-fallback must be a probability between 0 and 1, got {self.fallback}")
        if not self.rollback > 0.0:
            raise UsageError(f"--bild-rollback must be a positive cross entropy (nats), got {self.rollback}")

    @property
    def greedy_exact(self) -> bool:
        """Is the output the target's greedy output (up to the noise of batched logits)?"""
        return self.name not in NOT_GREEDY_EXACT

    def _check_draft_options(self) -> None:
        """The draft model's options: those of the methods that draft with one, within their ranges."""
        if not self.uses_draft_model:
            if self.draft_max is not None or self.draft_min or self.draft_p_min:
                raise UsageError(
                    f"{DRAFT_OPTIONS} shape the drafts of a draft model; only --method spec and bild, and "
                    "SSBD with --tail-draft model, draft with one"
                )
            if self.draft is not None:
                raise UsageError(
                    f"method {self.name} drafts with no draft model, but names one ({self.draft})"
                )
            return
        self._check_bild_options()
        if self.draft_max is None:
            default = DEFAULT_BILD_MAX if self.name == "bild" else DEFAULT_DRAFT_MAX
            object.__setattr__(self, "draft_max", default)
        assert self.draft_max is not None
        if self.draft_max < 1:
            raise UsageError(f"--draft-max must be 1 or more tokens, got {self.draft_max}")
        if not 0 <= self.draft_min <= self.draft_max:
            raise UsageError(
                f"--draft-min must be between 0 and --draft-max ({self.draft_max}), got {self.draft_min}"
            )
        if not 0.0 <= self.draft_p_min <= 1.0:
            raise UsageError(f"--draft-p-min must be a probability between 0 and 1, got {self.draft_p_min}")
        if self.draft is not None and not all(ch.isalnum() for ch in self.draft):
            raise UsageError(
                f"a draft model's name in a method key is letters and digits, got {self.draft!r}"
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
                (
                    "--draft-max, --draft-min or --draft-p-min",
                    self.draft_max is not None or self.draft_min != 0 or self.draft_p_min != 0.0,
                ),
                ("a draft model", self.draft is not None),
                (
                    "--bild-fallback or --bild-rollback",
                    self.fallback is not None or self.rollback is not None,
                ),
                ("--tail-draft model", self.tail_model),
            )
            if on
        ]
        if given:
            raise UsageError(
                f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for simul's own methods; plug-in "
                f"{self.plugin} takes its options as --method-option NAME=VALUE"
            )

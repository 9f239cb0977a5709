"""Options that the chosen method ignores are refused, never silently dropped.

An option typed on the command line that changes nothing (``--beta`` with ``--method rt``) means the user
expects an effect that will not happen, and a run that reads as if it did. These checks name every such
option, what it needs and how to fix the command: a usage error (exit 2) before any work. The options they
look at default to None on the command line, so that "given" and "left at its default" can be told apart.
"""

from __future__ import annotations

from simul.common.errors import UsageError


def refuse(problems: list[str]) -> None:
    """Raise one usage error naming every ignored option (nothing when the list is empty)."""
    if problems:
        raise UsageError("; ".join(problems))


def eval_method_options(
    method: str,
    *,
    beta: float | None,
    mask: str | None,
    mask_k: int,
    display: str,
    agreement: int | None,
    fuse: bool,
    verify_chunk: int,
) -> list[str]:
    """What `simul eval` would ignore for ``--method method``: SSBD's bias on RT or CD, a mask mode without
    --mask-k, LocalAgreement's n under another display (``display`` and ``agreement``: the old spellings
    --display and --agreement, now --local-agreement N), fusing or chunking a verification that never runs."""
    problems: list[str] = []
    drafts = {"rt": "has no draft", "cd": "keeps its draft unverified"}
    if beta is not None and method in ("spec", "bild"):
        problems.append(
            f"--beta is SSBD's bias toward its draft, and --method {method} verifies a draft model's tokens "
            "under its own rule: drop --beta, or pass --method ssbd"
        )
    own = {"lookup": "verifies its drafts", "ngram-cache": "verifies its drafts"}
    if beta is not None and method in {**drafts, **own}:
        what = {**drafts, **{m: f"{v} by exact greedy acceptance" for m, v in own.items()}}[method]
        problems.append(
            f"--beta is SSBD's bias toward its draft, and --method {method} {what}: "
            "drop --beta, or pass --method ssbd"
        )
    if mask is not None and mask_k == 0:
        problems.append(
            f"--mask {mask} says where --mask-k's tokens are hidden, and --mask-k is 0: give --mask-k"
        )
    if agreement is not None and display != "local-agreement":
        problems.append(
            f"--agreement is the n of --display local-agreement, and the display is {display}: "
            "pass --local-agreement N (the new spelling of both), or drop --agreement"
        )
    if fuse and method in ("rt", *own):
        problems.append(
            f"--fuse evaluates the prompt and the draft in one pass, and --method {method} has no draft "
            "at the start of a step"
        )
    if fuse and method in ("spec", "bild"):
        problems.append(
            "--fuse evaluates the prompt and the previous output (the draft) in one pass, and --method "
            f"{method} has no such draft (its draft model drafts after the target's first token)"
        )
    if verify_chunk > 0 and method in drafts:
        problems.append(f"--verify-chunk cuts SSBD's verification, and --method {method} {drafts[method]}")
    return problems


def sweep_mask_options(
    mask: str | None, mask_beta: float | None, mask_ks: list[int], agreements: list[int]
) -> list[str]:
    """What `simul sweep` would ignore: the mask modes without a mask-k above 0, and the mask-k table's beta
    without a mask-k or LocalAgreement row to decode with it."""
    problems: list[str] = []
    masked = any(k > 0 for k in mask_ks)
    if mask is not None and not masked:
        problems.append("--mask sets the modes of --mask-k, and --mask-k has no value above 0: give one")
    if mask_beta is not None and not masked and not agreements:
        problems.append(
            "--mask-beta is the bias of the mask-k table (Table 4), and there is none: give --mask-k "
            "values above 0 or --local-agreement, or drop --mask-beta"
        )
    return problems


NGRAM_METHODS = ("lookup", "ngram-cache")


def draft_options(method: str, tail_draft: str | None, given: list[str]) -> list[str]:
    """What the n-gram drafter options would be ignored by: ``--tail-draft`` on a method with no draft to
    follow (RT: that is --method lookup; CD: not verified; lookup and ngram-cache: they are the drafter), the
    n-gram options (``given``, as spelled) with no n-gram drafter, and --ngram-cache-file with lookup."""
    problems: list[str] = []
    if tail_draft is not None and method != "ssbd":
        hint = {
            "rt": f"RT with {tail_draft} drafts is --method {tail_draft}",
            "cd": "CD keeps its draft unverified",
        }.get(method, f"--method {method} drafts with its own n-gram drafter")
        problems.append(f"--tail-draft drafts after SSBD's draft: drop it or pass --method ssbd ({hint})")
    kind = method if method in NGRAM_METHODS else tail_draft if method == "ssbd" else None
    if kind is None and given:
        tail = ", or --tail-draft" if method == "ssbd" else ""
        problems.append(
            f"{', '.join(given)} set{'s' if len(given) == 1 else ''} the n-gram drafter, and "
            f"--method {method} has none: pass --method lookup or ngram-cache{tail}"
        )
    elif kind == "lookup" and "--ngram-cache-file" in given:
        problems.append("--ngram-cache-file is ngram-cache's static cache, and lookup has none")
    return problems


def eval_plugin_options(method: str, given: dict[str, bool]) -> list[str]:
    """What `simul eval` would ignore for a method from outside simul: the built-in methods' settings
    (``given``: each such option and whether it was given); the plug-in takes its own as --method-option."""
    named = [option for option, on in given.items() if on]
    if not named:
        return []
    return [
        f"{', '.join(named)} {'sets' if len(named) == 1 else 'set'} simul's own methods, and "
        f"--method {method} is a plug-in: drop {'it' if len(named) == 1 else 'them'}, and give the "
        "plug-in's own options as --method-option NAME=VALUE"
    ]

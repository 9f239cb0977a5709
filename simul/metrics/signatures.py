"""Metric signatures, split into what changes a score (parameters) and who computed it (provenance).

A signature is a ``|``-separated list of ``key:value`` fields (sacrebleu's, Post, 2018, "A Call for Clarity
in Reporting BLEU Scores": ``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0``; simul's COMET
signature ``model:Unbabel/wmt22-comet-da|batch:16|version:2.2.7``; the long-form re-segmentation's
``reseg:softsegmenter|omnisteval:0.1.10|lang:de|unit:word``) or a bare name (the NE tokenizer, ``13a``).

*Parameters* decide what a number measures: the tokenizer, the number of references, the n-gram orders,
case, smoothing, the COMET model, the NE unit. Two scores with different parameters are different metrics,
and `simul diff` refuses to compare them. *Provenance* says which code computed the number: the library
version, COMET's batch size (a batch pads its segments together, which can move a score in the last digits).
sacrebleu itself treats its version this way: its signature carries the version so that a reader can see it,
and the number stays the same metric across versions. `simul diff` notes a provenance difference naming both
sides and compares anyway, unless ``--strict-versions`` asks it to refuse.

Signatures are stored as the libraries write them, so run files written before this split parse the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Fields that name who computed a score, not what it measures: the library version (sacrebleu, COMET), the
# re-segmenter's package version, and COMET's batch size.
PROVENANCE_FIELDS = frozenset({"version", "batch", "omnisteval", "mweralign"})

# Signatures every scored run with references has; one side without it is a difference of parameters.
REQUIRED = ("ne_tokenizer", "bleu", "chrf")


@dataclass(frozen=True)
class Signature:
    """One parsed signature: the fields that change a score, in order, and the provenance fields."""

    text: str
    parameters: tuple[str, ...]
    provenance: tuple[tuple[str, str], ...]

    @classmethod
    def parse(cls, text: str) -> Signature:
        parameters: list[str] = []
        provenance: list[tuple[str, str]] = []
        for field in text.split("|"):
            key, sep, value = field.partition(":")
            if sep and key in PROVENANCE_FIELDS:
                provenance.append((key, value))
            else:
                parameters.append(field)
        return cls(text=text, parameters=tuple(parameters), provenance=tuple(provenance))

    @property
    def parameter_text(self) -> str:
        return "|".join(self.parameters)


@dataclass(frozen=True)
class ProvenanceChange:
    """A difference in who computed a figure: ``what`` (e.g. ``bleu signature version``, ``sacrebleu``)
    with both sides' values. ``strict`` ones are refused by ``simul diff --strict-versions``."""

    what: str
    base: str
    new: str
    strict: bool = True

    def describe(self) -> str:
        return f"{self.what} {self.base} (base) vs {self.new} (new)"

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "base": self.base, "new": self.new, "strict": self.strict}


def short(value: Any, limit: int = 80) -> str:
    """A recorded value for a message: its text, cut to about ``limit`` characters (printing escapes it)."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def compare_signatures(
    base: Mapping[str, Any], new: Mapping[str, Any]
) -> tuple[list[str], list[ProvenanceChange]]:
    """(why the scores measure different things, how their provenance differs) for two runs' signatures.

    The signatures in :data:`REQUIRED` must be present on both sides or neither; the others (COMET, the
    long-form ones) are compared where both runs have them: a COMET score that one run lacks is
    `simul diff`'s missing-metric check, not a signature difference."""
    reasons: list[str] = []
    changes: list[ProvenanceChange] = []
    for key in sorted(set(base) | set(new), key=lambda k: (k not in REQUIRED, k)):
        b, n = base.get(key), new.get(key)
        if b is None or n is None:
            if key in REQUIRED and (b is not None or n is not None):
                reasons.append(f"different {key} signature ({short(b)} vs {short(n)})")
            continue
        sb, sn = Signature.parse(str(b)), Signature.parse(str(n))
        if sb.parameters != sn.parameters:
            title = "COMET" if key == "comet" else key
            reasons.append(
                f"different {title} signature parameters ({short(sb.parameter_text)} vs "
                f"{short(sn.parameter_text)})"
            )
            continue
        b_prov, n_prov = dict(sb.provenance), dict(sn.provenance)
        for field in sorted(set(b_prov) | set(n_prov)):
            vb, vn = b_prov.get(field, "not recorded"), n_prov.get(field, "not recorded")
            if vb != vn:
                changes.append(ProvenanceChange(f"{key} signature {field}", short(vb), short(vn)))
    return reasons, changes

"""Re-segment each talk's final output onto its reference segments, keeping every unit's delay and elapsed.

Two tools, both the field's own code, imported rather than copied:

* ``softsegmenter`` (default; IWSLT 2026): OmniSTEval 0.1.10's SoftSegmenter (Polák et al., 2025, "Better Late
  Than Never", arXiv:2509.17349; ``omnisteval/resegment.py`` ``resegment`` over ``alignment.align_words``).
  simul writes the talks in OmniSTEval's long-form files (``omnisteval_files.write_omnisteval_inputs``) into a
  temporary folder and loads them with OmniSTEval's own ``io.load_resegmentation_inputs``, so the alignment is
  byte for byte what ``omnisteval longform`` computes: a monotonic alignment of lower-cased (Moses-tokenized
  for spaced languages, ``--lang``) hypothesis words to reference words by Jaccard similarity of their
  character sets (exact character match at char level), punctuation never matched to non-punctuation, then
  each unaligned hypothesis word joins its more similar neighbour.
* ``mwer``: mweralign (Post & Hoang, 2025, "Effects of automatic alignment on speech translation metrics",
  IWSLT; ``mweralign.align_texts``), as simulstream 1.0.0's ``stream_laal`` scorer uses it
  (``metrics/scorers/latency/mwersegmenter.py``): the hypothesis is cut to minimise the WER against the
  reference segments; at char level both sides go through mweralign's ``CJSegmenter`` first and the cut
  text is put back together (token spaces dropped, its space mark back to a space). Delays follow the units
  in order.
  Needs ``pip install mweralign``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError
from simul.metrics.longform.omnisteval_files import (
    HYPOTHESES,
    REFERENCES,
    SEGMENTATION,
    moses_lang,
    write_omnisteval_inputs,
)
from simul.metrics.longform.talk import LongformTalk

RESEGMENTERS = ("softsegmenter", "mwer")


@dataclass(frozen=True)
class SegmentOutput:
    """What landed in one reference segment: text, units and their absolute times (the talk's axis)."""

    hypothesis: str
    words: tuple[str, ...]
    delays: tuple[float, ...]
    elapsed: tuple[float, ...] | None


@dataclass(frozen=True)
class Resegmentation:
    """Per talk, per reference segment, the output that landed there; and which tool did it."""

    tool: str
    version: str
    options: str  # e.g. "lang:de|unit:word"
    talks: tuple[tuple[SegmentOutput, ...], ...]

    @property
    def signature(self) -> str:
        package = "omnisteval" if self.tool == "softsegmenter" else "mweralign"
        return f"reseg:{self.tool}|{package}:{self.version}|{self.options}"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"


@contextlib.contextmanager
def _silenced_fds() -> Iterator[None]:
    """Keep a C extension's prints off stdout/stderr (mweralign writes to the process's file descriptors)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            os.dup2(null.fileno(), 2)
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def _units(text: str, unit: str) -> tuple[str, ...]:
    return tuple(text) if unit == "char" else tuple(text.split())


class _SerialPool:
    """Stands in for ``multiprocessing.Pool`` in OmniSTEval's ``align_words`` (0.1.10): the same ``map``,
    in this process.

    OmniSTEval aligns each recording in a forked worker pool. simul scores in the process that holds
    llama.cpp (with its OpenMP threads) and its signal handlers: forking there can leave a worker waiting
    forever on a lock another thread held at the fork (seen once in the test suite: the pool's parent
    waiting on a child asleep on a futex), and the pool stops its workers with SIGTERM, which simul's handler
    turned into tracebacks. Ray's workers, daemonic processes, cannot fork a pool at all. Aligning the talks
    one after the other gives the same result (``map`` keeps the order) and costs seconds for a few talks.
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __enter__(self) -> _SerialPool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, function: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        return [function(item) for item in items]


@contextlib.contextmanager
def _serial_alignment() -> Iterator[None]:
    """OmniSTEval's recording alignment without its process pool (see :class:`_SerialPool`)."""
    import omnisteval.alignment as alignment

    previous = alignment.Pool
    alignment.Pool = _SerialPool
    try:
        yield
    finally:
        alignment.Pool = previous


def _softsegmenter(talks: Sequence[LongformTalk], lang: str | None) -> tuple[tuple[SegmentOutput, ...], ...]:
    try:
        from omnisteval.io import load_resegmentation_inputs
        from omnisteval.resegment import resegment
    except ImportError:
        raise SimulError(
            "the softsegmenter re-segmentation needs OmniSTEval, a dependency of simul: "
            "pip install omnisteval==0.1.10"
        ) from None
    unit = talks[0].unit
    char = unit == "char"
    quiet = [logging.getLogger(n) for n in ("omnisteval", "mosestokenizer")]
    levels = [lg.level for lg in quiet]
    for lg in quiet:
        lg.setLevel(logging.ERROR)
    try:
        with tempfile.TemporaryDirectory(prefix="simul-softseg-") as tmp:
            folder = Path(tmp)
            write_omnisteval_inputs(talks, folder)
            ref_words, hyp_words, segmentation, refs = load_resegmentation_inputs(
                str(folder / SEGMENTATION),
                None,
                str(folder / REFERENCES),
                str(folder / HYPOTHESES),
                hypothesis_format="jsonl",
                char_level=char,
            )
            with _serial_alignment():
                _, dicts = resegment(ref_words, hyp_words, segmentation, refs, char_level=char, lang=lang)
    except (AssertionError, ValueError, KeyError) as exc:
        raise SimulError(f"OmniSTEval's SoftSegmenter refused the talks: {exc}") from None
    finally:
        for lg, level in zip(quiet, levels, strict=True):
            lg.setLevel(level)
    out: list[tuple[SegmentOutput, ...]] = []
    index = 0
    for talk in talks:
        segs = []
        for seg in talk.segments:
            d: dict[str, Any] = dicts[index]
            index += 1
            words = _units(d["prediction"], unit)
            cu = d.get("emission_cu") or []
            ca = d.get("emission_ca")
            if len(cu) != len(words):
                raise SimulError(
                    f"talk {talk.id!r}: OmniSTEval returned {len(cu)} delays for {len(words)} units"
                )
            segs.append(
                SegmentOutput(
                    hypothesis=d["prediction"],
                    words=words,
                    delays=tuple(float(x) + seg.offset for x in cu),
                    elapsed=None
                    if talk.elapsed is None
                    else tuple(float(x) + seg.offset for x in (ca or [])),
                )
            )
        out.append(tuple(segs))
    return tuple(out)


def _mwer(talks: Sequence[LongformTalk]) -> tuple[tuple[SegmentOutput, ...], ...]:
    try:
        from mweralign import mweralign  # type: ignore[import-untyped,import-not-found,unused-ignore]
        from mweralign.segmenter import CJSegmenter  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        raise SimulError(
            "the mwer re-segmentation needs mweralign (simulstream's StreamLAAL aligner): "
            "pip install 'simul[longform]' (or pip install mweralign)"
        ) from None
    out: list[tuple[SegmentOutput, ...]] = []
    for talk in talks:
        char = talk.unit == "char"
        segmenter = CJSegmenter() if char else None

        def tok(text: str, segmenter: Any = segmenter) -> str:
            return " ".join(segmenter.encode(text)) if segmenter is not None else text

        refs = "\n".join(tok(seg.references[0].strip() if seg.references else "") for seg in talk.segments)
        with _silenced_fds():
            lines = mweralign.align_texts(refs, tok(talk.prediction)).split("\n")
        if len(lines) != len(talk.segments):
            raise SimulError(
                f"talk {talk.id!r}: mweralign returned {len(lines)} segments "
                f"for {len(talk.segments)} references"
            )
        if char:
            # CJSegmenter writes a space as U+2581; simulstream maps "_" back instead, which leaves U+2581 in
            # the text and turns real underscores into spaces: the unit counts (so the delays) are the same
            lines = [line.replace(" ", "").replace("\u2581", " ") for line in lines]
        segs = []
        start = 0
        for line in lines:
            words = tuple(line) if char else tuple(line.split())
            end = start + len(words)
            segs.append(
                SegmentOutput(
                    hypothesis=line if char else " ".join(words),
                    words=words,
                    delays=talk.delays[start:end],
                    elapsed=None if talk.elapsed is None else talk.elapsed[start:end],
                )
            )
            start = end
        if start != len(talk.words):
            raise SimulError(
                f"talk {talk.id!r}: mweralign's segments hold {start} units, the output has {len(talk.words)}"
            )
        out.append(tuple(segs))
    return tuple(out)


def resegment_talks(
    talks: Sequence[LongformTalk], tool: str = "softsegmenter", lang: str | None = None
) -> Resegmentation:
    """Re-segment every talk (one target language) with ``tool``; ``lang`` is SoftSegmenter's Moses
    language (default: the target's code, none for languages written without spaces)."""
    if not talks:
        raise SimulError("no talks to re-segment")
    if tool not in RESEGMENTERS:
        raise SimulError(f"unknown re-segmentation {tool!r}; choose one of {', '.join(RESEGMENTERS)}")
    unit = talks[0].unit
    if tool == "softsegmenter":
        moses = moses_lang(talks[0].tgt) if lang is None else (lang or None)
        result = _softsegmenter(talks, moses)
        return Resegmentation(tool, _version("omnisteval"), f"lang:{moses or 'none'}|unit:{unit}", result)
    result = _mwer(talks)
    return Resegmentation(tool, _version("mweralign"), f"unit:{unit}", result)

"""OmniSTEval 0.1.10's long-form input files, written from and read back into :class:`LongformTalk`.

``write_omnisteval_inputs(talks, folder)`` writes, for talks that share one target language:

* ``hypotheses.jsonl``: one line per talk, what ``omnisteval longform --hypothesis_format jsonl`` reads
  (``omnisteval/data.py`` ``load_hypothesis_jsonl``): ``source`` (``<talk id>.wav``, matched to the
  segmentation's ``wav``), ``prediction`` (words joined by spaces, or characters run together), ``delays``
  (CU, ms on the talk clock), ``elapsed`` (CA, ms; left out when the run has no computation times) and
  ``source_length`` (the recording's length in ms). simul adds ``id``, ``src_lang``, ``tgt_lang``, ``unit``
  and ``timed``, which OmniSTEval ignores and :func:`read_omnisteval_inputs` uses.
* ``segmentation.yaml``: one entry per reference segment, talks in file order: ``wav``, ``offset`` and
  ``duration`` in **seconds** (OmniSTEval multiplies by 1000). Untimed text documents are written on the same
  axis with one source word = 1 ms (offset and duration in words / 1000), so OmniSTEval's "ms" are source
  words and its latencies come out in words; ``timed: false`` on the JSONL line says so.
* ``references.txt``: each segment's first reference, one line per segment entry; ``references.N.txt``
  (N = 2, 3, ...) the N-th references when segments have several (OmniSTEval reads only the first).
* ``sources.txt``: each segment's source transcript (for ``--comet --source_sentences_file``).
* ``command.txt``: the ``omnisteval longform`` command line that scores the folder.

Every file is built and checked in memory first and each one replaces its path at once
(``simul.common.files.write_atomic``), so a refused input leaves nothing half-written.
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from simul.common.errors import SimulError
from simul.common.files import write_atomic
from simul.common.languages import get_language
from simul.metrics.longform.talk import LongformTalk, TalkSegment
from simul.metrics.quality import bleu_tokenizer

HYPOTHESES = "hypotheses.jsonl"
SEGMENTATION = "segmentation.yaml"
REFERENCES = "references.txt"
SOURCES = "sources.txt"
COMMAND = "command.txt"
AUDIO_SUFFIX = ".wav"


def more_references_file(number: int) -> str:
    """The file of every segment's ``number``-th reference (2, 3, ...)."""
    return f"references.{number}.txt"


@dataclass(frozen=True)
class OmnistevalFiles:
    """What :func:`write_omnisteval_inputs` wrote, and how to score it."""

    folder: Path
    hypotheses: Path
    segmentation: Path
    references: Path
    sources: Path
    more_references: tuple[Path, ...]
    command: tuple[str, ...]


def moses_lang(tgt: str) -> str | None:
    """``--lang`` for OmniSTEval's Moses tokenization before alignment: the target's ISO code, none for zh/ja.

    OmniSTEval's README passes the target language; it skips tokenization for zh and ja (and simul for every
    language written without spaces, which Moses does not tokenize either).
    """
    lang = get_language(tgt)
    return None if lang.unspaced else lang.short


def omnisteval_command(
    folder: Path, tgt: str, *, output_folder: Path | None = None, comet: bool = False, lang: str | None = None
) -> tuple[str, ...]:
    """``omnisteval longform ...`` on the files of ``folder`` (``lang``: Moses language, default: target)."""
    unit = "char" if get_language(tgt).unspaced else "word"
    moses = moses_lang(tgt) if lang is None else lang
    cmd = [
        "omnisteval",
        "longform",
        "--speech_segmentation",
        str(folder / SEGMENTATION),
        "--ref_sentences_file",
        str(folder / REFERENCES),
        "--hypothesis_file",
        str(folder / HYPOTHESES),
        "--hypothesis_format",
        "jsonl",
        f"--{unit}_level",
        "--bleu_tokenizer",
        bleu_tokenizer(tgt),
    ]
    if moses:
        cmd += ["--lang", moses]
    if comet:
        cmd += ["--comet", "--source_sentences_file", str(folder / SOURCES)]
    if output_folder is not None:
        cmd += ["--output_folder", str(output_folder)]
    return tuple(cmd)


def _one_line(text: str, what: str) -> str:
    if "\n" in text or "\r" in text:
        raise SimulError(f"{what} contains a line break; OmniSTEval's files hold one segment per line")
    return text.strip()


def _seconds(value: float) -> float:
    return round(value / 1000.0, 6)


def _hypothesis_line(talk: LongformTalk) -> dict[str, Any]:
    line: dict[str, Any] = {
        "source": f"{talk.id}{AUDIO_SUFFIX}",
        "prediction": talk.prediction,
        "delays": [round(d, 3) for d in talk.delays],
    }
    if talk.elapsed is not None:
        line["elapsed"] = [round(e, 3) for e in talk.elapsed]
    line["source_length"] = round(talk.duration if talk.duration is not None else talk.recording_end, 3)
    line.update(id=talk.id, src_lang=talk.src, tgt_lang=talk.tgt, unit=talk.unit, timed=talk.timed)
    return line


def _check_talks(talks: Sequence[LongformTalk]) -> None:
    if not talks:
        raise SimulError("no long-form talks to write for OmniSTEval")
    tgts = {get_language(t.tgt).short for t in talks}
    if len(tgts) > 1:
        raise SimulError(
            f"talks into {', '.join(sorted(tgts))} in one OmniSTEval folder: its BLEU tokenizer and unit are "
            "one per run; write one folder per target language"
        )
    if len({t.timed for t in talks}) > 1:
        raise SimulError("timed talks and untimed documents in one OmniSTEval folder: write them separately")
    seen: set[str] = set()
    for talk in talks:
        if "/" in talk.id or "\\" in talk.id or talk.id != talk.id.strip() or talk.id.endswith(AUDIO_SUFFIX):
            raise SimulError(f"talk id {talk.id!r} cannot name an OmniSTEval recording; rename the talk")
        if talk.id in seen:
            raise SimulError(f"talk id {talk.id!r} appears twice; OmniSTEval matches talks by name")
        seen.add(talk.id)
        counts = {len(seg.references) for seg in talk.segments}
        if 0 in counts:
            raise SimulError(f"talk {talk.id!r} has a segment without a reference; OmniSTEval needs one each")


def write_omnisteval_inputs(
    talks: Sequence[LongformTalk], folder: Path, *, comet: bool = False, lang: str | None = None
) -> OmnistevalFiles:
    """Write the files ``omnisteval longform`` scores (see the module docstring); return their paths."""
    _check_talks(talks)
    hyp_lines: list[str] = []
    seg_entries: list[dict[str, Any]] = []
    refs: list[list[str]] = []
    sources: list[str] = []
    depth = max(len(seg.references) for talk in talks for seg in talk.segments)
    for talk in talks:
        hyp_lines.append(json.dumps(_hypothesis_line(talk), ensure_ascii=False))
        for number, seg in enumerate(talk.segments, start=1):
            where = f"talk {talk.id!r}, segment {number}"
            seg_entries.append(
                {
                    "duration": _seconds(seg.duration),
                    "offset": _seconds(seg.offset),
                    "wav": talk.id + AUDIO_SUFFIX,
                }
            )
            refs.append([_one_line(r, f"{where}, reference {k}") for k, r in enumerate(seg.references, 1)])
            sources.append(_one_line(seg.source, f"{where}, source"))
    tgt = talks[0].tgt
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SimulError(f"cannot create {folder}: {exc.strerror or exc}") from None
    command = omnisteval_command(folder, tgt, comet=comet, lang=lang)
    more: list[Path] = []
    write_atomic(folder / HYPOTHESES, "".join(line + "\n" for line in hyp_lines))
    write_atomic(
        folder / SEGMENTATION, yaml.safe_dump(seg_entries, default_flow_style=None, allow_unicode=True)
    )
    write_atomic(folder / REFERENCES, "".join(r[0] + "\n" for r in refs))
    for k in range(2, depth + 1):
        path = folder / more_references_file(k)
        write_atomic(path, "".join((r[k - 1] if len(r) >= k else "") + "\n" for r in refs))
        more.append(path)
    write_atomic(folder / SOURCES, "".join(s + "\n" for s in sources))
    write_atomic(folder / COMMAND, shlex.join(command) + "\n")
    return OmnistevalFiles(
        folder=folder,
        hypotheses=folder / HYPOTHESES,
        segmentation=folder / SEGMENTATION,
        references=folder / REFERENCES,
        sources=folder / SOURCES,
        more_references=tuple(more),
        command=command,
    )


# -- reading back ------------------------------------------------------------------------------------------


def _read_lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SimulError(f"{path} is missing; write the folder with write_omnisteval_inputs") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SimulError(f"cannot read {path}: {exc}") from None
    return text.splitlines()


def _numbers(value: Any, where: str, key: str) -> tuple[float, ...]:
    if not isinstance(value, list) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value
    ):
        raise SimulError(f"{where}: {key!r} must be a list of finite numbers")
    return tuple(float(v) for v in value)


def _talk_name(source: Any, where: str) -> str:
    name = source[0] if isinstance(source, list) and source else source
    if not isinstance(name, str) or not name:
        raise SimulError(f"{where}: 'source' must name the talk's recording (e.g. \"talk1.wav\")")
    return Path(name).stem if name.endswith(AUDIO_SUFFIX) else Path(name).name


def read_hypotheses(path: Path) -> list[dict[str, Any]]:
    """The JSONL lines, each checked (``source``, ``prediction``, ``delays``/``elapsed`` lengths); errors name
    file and line. Each returned dict gains ``talk`` (the recording's stem) and ``line`` (its line number)."""
    out = []
    for number, raw in enumerate(_read_lines(path), start=1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise SimulError(f"{where}: not JSON ({exc.msg}); each line must be one talk's object") from None
        if not isinstance(obj, dict):
            raise SimulError(f"{where}: each line must be a JSON object")
        if not isinstance(obj.get("prediction"), str):
            raise SimulError(f"{where}: 'prediction' (the talk's output text) is missing or not a string")
        obj["talk"] = _talk_name(obj.get("source"), where)
        obj["line"] = number
        for key in ("delays", "elapsed"):
            if key in obj:
                obj[key] = _numbers(obj[key], where, key)
        out.append(obj)
    if not out:
        raise SimulError(f"{path} has no talks")
    return out


def _units(prediction: str, unit: str) -> tuple[str, ...]:
    # OmniSTEval's own split (data.load_hypothesis_jsonl): characters or whitespace words
    return tuple(prediction) if unit == "char" else tuple(prediction.split())


def read_omnisteval_inputs(
    folder: Path, *, src: str | None = None, tgt: str | None = None
) -> list[LongformTalk]:
    """The talks of a folder in OmniSTEval's long-form layout (simul's, or any with the same three files).

    ``src``/``tgt`` are needed only when the JSONL lines lack simul's ``src_lang``/``tgt_lang``.
    """
    folder = Path(folder)
    hyps = read_hypotheses(folder / HYPOTHESES)
    seg_path = folder / SEGMENTATION
    try:
        entries = yaml.safe_load(seg_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SimulError(f"{seg_path} is missing; write the folder with write_omnisteval_inputs") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise SimulError(f"cannot read {seg_path}: {exc}") from None
    if not isinstance(entries, list) or not entries:
        raise SimulError(f"{seg_path}: expected a list of segments with wav, offset and duration (seconds)")
    refs = _read_lines(folder / REFERENCES)
    if len(refs) != len(entries):
        raise SimulError(
            f"{folder / REFERENCES} has {len(refs)} lines but {seg_path} has {len(entries)} segments: "
            "give one line each"
        )
    more: list[list[str]] = []
    k = 2
    while (folder / more_references_file(k)).is_file():
        lines = _read_lines(folder / more_references_file(k))
        if len(lines) != len(entries):
            raise SimulError(
                f"{folder / more_references_file(k)} must have one line per segment ({len(entries)})"
            )
        more.append(lines)
        k += 1
    sources_path = folder / SOURCES
    sources = _read_lines(sources_path) if sources_path.is_file() else [""] * len(entries)
    if len(sources) != len(entries):
        raise SimulError(f"{sources_path} must have one line per segment ({len(entries)})")

    by_talk: dict[str, list[TalkSegment]] = {}
    for index, entry in enumerate(entries):
        where = f"{seg_path}, segment {index + 1}"
        if not isinstance(entry, dict) or not {"wav", "offset", "duration"} <= set(entry):
            raise SimulError(f"{where}: each segment needs wav, offset and duration (seconds)")
        offset, duration = entry["offset"], entry["duration"]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (offset, duration)):
            raise SimulError(f"{where}: offset and duration must be numbers of seconds")
        talk_refs = (refs[index].strip(), *(m[index].strip() for m in more if m[index].strip()))
        by_talk.setdefault(_talk_name(entry["wav"], where), []).append(
            TalkSegment(
                references=talk_refs,
                source=sources[index].strip(),
                offset=float(offset) * 1000.0,
                duration=float(duration) * 1000.0,
            )
        )
    talks = []
    path = folder / HYPOTHESES
    for hyp in hyps:
        where = f"{path}:{hyp['line']}"
        name = hyp["talk"]
        if name not in by_talk:
            raise SimulError(f"{where}: talk {name!r} has no segments in {seg_path}")
        t_src = hyp.get("src_lang", src)
        t_tgt = hyp.get("tgt_lang", tgt)
        if not isinstance(t_src, str) or not isinstance(t_tgt, str):
            raise SimulError(f"{where}: no src_lang/tgt_lang on the line; pass src= and tgt=")
        unit = "char" if get_language(t_tgt).unspaced else "word"
        words = _units(hyp["prediction"], unit)
        delays = hyp.get("delays")
        if delays is None:
            raise SimulError(f"{where}: 'delays' is missing; long-form latency needs one per output {unit}")
        for key in ("delays", "elapsed"):
            if key in hyp and len(hyp[key]) != len(words):
                raise SimulError(
                    f"{where}: {len(hyp[key])} {key} for {len(words)} {unit}s of 'prediction'; give one each"
                )
        length = hyp.get("source_length")
        try:
            talks.append(
                LongformTalk(
                    id=str(hyp.get("id", name)),
                    src=t_src,
                    tgt=t_tgt,
                    words=words,
                    delays=delays,
                    elapsed=hyp.get("elapsed"),
                    segments=tuple(by_talk[name]),
                    duration=float(length) if isinstance(length, int | float) and length > 0 else None,
                    timed=bool(hyp.get("timed", True)),
                )
            )
        except SimulError as exc:
            raise SimulError(f"{where}: {exc}") from None
    return talks

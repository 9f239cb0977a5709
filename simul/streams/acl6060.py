"""ACL 60/60 segments: English talk transcripts cut into sentences, their translations and audio times.

ACL 60/60 (Salesky et al., 2023, IWSLT) holds ACL 2022 talks with English transcripts and reference
translations (de, ja, zh and others). A *segment* is one sentence of one talk; it becomes one stream.

Layouts read (DIR may be the dataset root, the split folder, or a release's ``text/xml`` or ``text/txt``):

* official release XML: ``ACL.6060.<split>.en-xx.<lang>.xml``, an ``<mteval>`` file with one ``<doc
  docid="<talk>">`` per talk holding ``<seg id="N">`` sentences. Talks are ordered by docid, sentences in
  file order, so segment *n* (1-based) is the same sentence as line *n* of the line-aligned layout.
* line-aligned text: ``ACL.6060.<split>.en-xx.<lang>.segments.txt`` (or ``.txt``), one sentence per line,
  with ``ACL.6060.<split>.talkids.txt`` naming each line's talk (or, without it, the YAML's ``wav``).

Audio times come from a YAML list with one row per segment, in segment order: ``{offset, duration, wav}``
(seconds; ``wav`` names the talk's audio file). It is found next to the text files (a ``.yaml`` whose name
contains the split) or passed explicitly. Simulated partials and ``--align time`` need it.

What is not particular to ACL 60/60 (the segments, the YAML, line-aligned source/reference pairs such as an
SLTev ``.OSt`` transcript and its translation) lives in simul.streams.segments.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.parsers import expat

from simul.common.errors import SimulError
from simul.common.languages import Language, get_language
from simul.common.paths import fixtures_dir
from simul.streams.segments import (
    Segment,
    SegmentTexts,
    attach_times,
    line_texts,
    make_segment,
    read_utf8_lines,
)

DATASET = "acl6060"


def default_acl6060_dir() -> Path:
    return fixtures_dir() / "acl6060"


# --- finding files -------------------------------------------------------------------------------------


def _search_dirs(data_dir: Path, split: str) -> list[Path]:
    candidates = [
        data_dir,
        data_dir / split,
        data_dir / "text" / "xml",
        data_dir / "text" / "txt",
        data_dir / split / "text" / "xml",
        data_dir / split / "text" / "txt",
    ]
    seen: list[Path] = []
    for candidate in candidates:
        if candidate.is_dir() and candidate not in seen:
            seen.append(candidate)
    return seen


def _find(dirs: list[Path], names: list[str]) -> Path | None:
    for folder in dirs:
        for name in names:
            path = folder / name
            if path.is_file():
                return path
    return None


def _xml_name(split: str, lang: Language) -> str:
    return f"ACL.6060.{split}.en-xx.{lang.short}.xml"


def _text_names(split: str, lang: Language) -> list[str]:
    return [f"ACL.6060.{split}.en-xx.{lang.short}.segments.txt", f"ACL.6060.{split}.en-xx.{lang.short}.txt"]


def find_segment_yaml(data_dir: Path, split: str) -> Path | None:
    """The segment YAML next to the text files: a ``.yaml`` whose name contains the split."""
    found: list[Path] = []
    for folder in _search_dirs(data_dir, split):
        for path in sorted(folder.iterdir()):
            if path.suffix.lower() in (".yaml", ".yml") and split.lower() in path.name.lower():
                found.append(path)
    if len(found) > 1:
        names = ", ".join(str(p) for p in found)
        raise SimulError(
            f"several segment YAML files match split {split!r} ({names}); pick one with --segments"
        )
    return found[0] if found else None


def _languages_present(dirs: list[Path], split: str) -> list[str]:
    codes: set[str] = set()
    prefix = f"ACL.6060.{split}.en-xx."
    for folder in dirs:
        for path in folder.iterdir():
            if path.name.startswith(prefix):
                codes.add(path.name[len(prefix) :].split(".")[0])
    return sorted(codes)


# --- reading the two layouts ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _XmlSeg:
    talk: str
    seg_id: str
    text: str
    line: int


def read_acl_xml(path: Path) -> list[_XmlSeg]:
    """The ``<seg>`` sentences of an ACL 60/60 (IWSLT ``mteval``) XML file, talks in docid order."""
    read_utf8_lines(path, "ACL 60/60 XML file")  # checks existence and UTF-8 with a line number
    parser = expat.ParserCreate("UTF-8")
    segs: list[_XmlSeg] = []
    state: dict[str, Any] = {"doc": None, "seg": None, "text": [], "line": 0}

    def start(name: str, attrs: dict[str, str]) -> None:
        line = parser.CurrentLineNumber
        if name == "doc":
            docid = attrs.get("docid", "").strip()
            if not docid:
                raise SimulError(f"{path}:{line}: <doc> without a docid attribute")
            state["doc"] = docid
        elif name == "seg":
            if state["doc"] is None:
                raise SimulError(f"{path}:{line}: <seg> outside a <doc>")
            if state["seg"] is not None:
                raise SimulError(f"{path}:{line}: <seg> inside another <seg>")
            state["seg"] = attrs.get("id", str(len(segs) + 1))
            state["text"] = []
            state["line"] = line

    def end(name: str) -> None:
        if name == "doc":
            state["doc"] = None
        elif name == "seg" and state["seg"] is not None:
            text = " ".join("".join(state["text"]).split())
            segs.append(_XmlSeg(state["doc"], state["seg"], text, state["line"]))
            state["seg"] = None

    def chars(data: str) -> None:
        if state["seg"] is not None:
            state["text"].append(data)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    try:
        parser.Parse(path.read_bytes(), True)
    except expat.ExpatError as exc:
        message = expat.errors.messages[exc.code]
        raise SimulError(
            f"{path}:{exc.lineno}: malformed XML ({message}); fix or re-download the file"
        ) from None
    if not segs:
        raise SimulError(f"{path}: no <seg> elements; is this an ACL 60/60 XML file?")
    order = {talk: rank for rank, talk in enumerate(sorted({s.talk for s in segs}))}
    return sorted(segs, key=lambda s: order[s.talk])  # stable: file order within a talk


def _xml_texts(src_path: Path, ref_path: Path) -> SegmentTexts:
    src, ref = read_acl_xml(src_path), read_acl_xml(ref_path)
    if len(src) != len(ref):
        raise SimulError(
            f"{src_path} has {len(src)} segments but {ref_path} has {len(ref)}; both must come from the "
            "same split of the same ACL 60/60 release"
        )
    for a, b in zip(src, ref, strict=True):
        if (a.talk, a.seg_id) != (b.talk, b.seg_id):
            raise SimulError(
                f"{ref_path}:{b.line}: segment {b.talk}#{b.seg_id} does not match {src_path}:{a.line} "
                f"({a.talk}#{a.seg_id}); the files are not aligned (same split, same release?)"
            )
    return SegmentTexts(
        sources=[s.text for s in src],
        references=[s.text for s in ref],
        talks=[s.talk for s in src],
        where_source=[f"{src_path}:{s.line}" for s in src],
        where_reference=[f"{ref_path}:{s.line}" for s in ref],
        seg_ids=[s.seg_id for s in src],
        files={"source_file": src_path.name, "reference_file": ref_path.name},
        source_path=src_path,
    )


def acl6060_segments(
    data_dir: Path | None,
    split: str,
    tgt: str,
    segments_yaml: Path | None = None,
) -> tuple[list[Segment], Path | None]:
    """All segments of an ACL 60/60 split with the ``tgt`` references; also the YAML used (if any)."""
    root = data_dir if data_dir is not None else default_acl6060_dir()
    if not root.is_dir():
        raise SimulError(f"ACL 60/60 data directory {root} does not exist")
    tgt_lang, src_lang = get_language(tgt), get_language("en")
    if tgt_lang.short == "en":
        raise SimulError("ACL 60/60 translates from English: pick another --tgt-lang (de, ja, zh, ...)")
    dirs = _search_dirs(root, split)
    src_xml, ref_xml = _find(dirs, [_xml_name(split, src_lang)]), _find(dirs, [_xml_name(split, tgt_lang)])
    src_txt, ref_txt = _find(dirs, _text_names(split, src_lang)), _find(dirs, _text_names(split, tgt_lang))
    if src_xml is not None and ref_xml is not None:
        texts = _xml_texts(src_xml, ref_xml)
    elif src_txt is not None and ref_txt is not None:
        texts = line_texts(src_txt, ref_txt, _find(dirs, [f"ACL.6060.{split}.talkids.txt"]))
    else:
        lang = src_lang if src_xml is None and src_txt is None else tgt_lang
        present = _languages_present(dirs, split)
        have = (
            f"languages present for split {split!r}: {', '.join(present)}"
            if present
            else f"no ACL.6060.{split}.* files there (is the split right?)"
        )
        raise SimulError(
            f"no {lang.name} file for ACL 60/60 split {split!r} under {root} (looked for "
            f"{_xml_name(split, lang)} and {_text_names(split, lang)[0]}); {have}"
        )
    yaml_path = segments_yaml if segments_yaml is not None else find_segment_yaml(root, split)
    talks, times = attach_times(texts, yaml_path)
    files = dict(texts.files)
    if yaml_path is not None:
        files["segments_file"] = yaml_path.name
    segments: list[Segment] = []
    for index in range(len(texts.sources)):
        line = index + 1
        provenance: dict[str, Any] = {"dataset": DATASET, "split": split, "line": line, "talk": talks[index]}
        if texts.seg_ids is not None:
            provenance["xml_seg_id"] = texts.seg_ids[index]
        segment_id = f"{DATASET}-{split}-{line}"
        segments.append(
            make_segment(
                texts, index, segment_id, talks[index], times[index], provenance, provenance_tail=files
            )
        )
    return segments, yaml_path

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

The generic :func:`line_segments` reads any line-aligned source/reference pair (for example an SLTev
``.OSt`` transcript and its translation) the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any
from xml.parsers import expat

import yaml

from simul.common.errors import SimulError
from simul.common.languages import Language, get_language
from simul.common.limits import MAX_AUDIO_SECONDS, as_float, check_source, check_text_lines
from simul.common.paths import fixtures_dir

DATASET = "acl6060"
_AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg", ".opus")


@dataclass(frozen=True)
class Segment:
    """One reference sentence of a talk: what a stream is built for."""

    id: str
    line: int
    talk: str
    source: str
    reference: str | None
    offset_ms: float | None = None
    duration_ms: float | None = None
    provenance: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def timed(self) -> bool:
        return self.offset_ms is not None and self.duration_ms is not None

    @property
    def end_ms(self) -> float | None:
        if self.offset_ms is None or self.duration_ms is None:
            return None
        return self.offset_ms + self.duration_ms


@dataclass(frozen=True)
class SegmentTime:
    """One YAML row: where a segment lies in its talk's audio."""

    talk: str
    offset_ms: float
    duration_ms: float
    line: int


def default_acl6060_dir() -> Path:
    return fixtures_dir() / "acl6060"


def read_utf8_lines(path: Path, what: str) -> list[str]:
    """The lines of a UTF-8 text file (BOM and CRLF tolerated); errors name the file and line."""
    if not path.exists():
        raise SimulError(f"{what} {path} does not exist")
    if path.is_dir():
        raise SimulError(f"{what} {path} is a directory; pass a file")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SimulError(
            f"{path}:{line}: not valid UTF-8 ({exc.reason} at byte {exc.start}); save the file as UTF-8"
        ) from None
    text = text.removeprefix("\ufeff")
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    check_text_lines(lines, path)
    return lines


def talk_from_wav(wav: str) -> str:
    """The talk id of an audio file name: ``2022.acl-long.110.wav`` -> ``2022.acl-long.110``."""
    name = PurePosixPath(wav.replace("\\", "/")).name
    for suffix in _AUDIO_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def read_segment_yaml(path: Path) -> list[SegmentTime]:
    """Rows of a segment YAML (a list of ``{offset, duration, wav}`` mappings, seconds)."""
    lines = read_utf8_lines(path, "segment YAML")
    text = "\n".join(lines)
    try:
        loader = yaml.SafeLoader(text)
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (a control character)
        line = text[: exc.position].count("\n") + 1
        char = exc.character
        shown = f"U+{char:04X}" if isinstance(char, int) else repr(char)
        raise SimulError(f"{path}:{line}: malformed YAML ({exc.reason}: {shown}); fix the file") from None
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            raise SimulError(_yaml_error(path, exc)) from None
        except (yaml.YAMLError, RecursionError) as exc:
            raise SimulError(f"{path}: {_yaml_reason(exc)}; fix the file") from None
        if root is None or not isinstance(root, yaml.SequenceNode):
            raise SimulError(
                f"{path}:1: expected a YAML list with one {{offset, duration, wav}} row per segment"
            )
        rows: list[SegmentTime] = []
        for node in root.value:
            line = node.start_mark.line + 1
            try:
                row = loader.construct_object(node, deep=True)
            except yaml.MarkedYAMLError as exc:
                raise SimulError(_yaml_error(path, exc, line)) from None
            except (yaml.YAMLError, RecursionError, ValueError, TypeError) as exc:
                raise SimulError(f"{path}:{line}: {_yaml_reason(exc)}; fix the row") from None
            rows.append(_segment_time(row, f"{path}:{line}", line))
        return rows
    finally:
        loader.dispose()


def _yaml_reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "YAML nested too deeply"
    return f"unreadable YAML ({exc})"


def _yaml_error(path: Path, exc: yaml.MarkedYAMLError, line: int = 1) -> str:
    mark = exc.problem_mark or exc.context_mark
    if mark is not None:
        line = mark.line + 1
    return f"{path}:{line}: malformed YAML ({exc.problem or exc}); fix the file"


def _shown(value: Any) -> str:
    """A value for an error message: its repr, shortened (a YAML value may be any size)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
        return "a number too large for seconds"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _segment_time(row: Any, where: str, line: int) -> SegmentTime:
    if not isinstance(row, dict):
        raise SimulError(f"{where}: each row must be a mapping with offset, duration and wav")
    missing = [key for key in ("offset", "duration", "wav") if key not in row]
    if missing:
        raise SimulError(f"{where}: row lacks {', '.join(missing)}; every row needs offset, duration and wav")
    values: dict[str, float] = {}
    for key in ("offset", "duration"):
        value = row[key]
        seconds = as_float(value)
        if not (math.isfinite(seconds * 1000.0) and seconds >= 0):
            raise SimulError(f"{where}: {key} must be a non-negative number of seconds, got {_shown(value)}")
        if seconds > MAX_AUDIO_SECONDS:
            raise SimulError(
                f"{where}: {key} of {seconds:g} s is more than a day ({MAX_AUDIO_SECONDS:g} s); fix the row"
            )
        values[key] = seconds * 1000.0
    if not isinstance(row["wav"], str) or not row["wav"].strip():
        raise SimulError(f"{where}: wav must name the talk's audio file")
    return SegmentTime(talk_from_wav(row["wav"]), values["offset"], values["duration"], line)


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


@dataclass(frozen=True)
class _Texts:
    """Line-aligned source, reference and talk of every segment, wherever they were read from."""

    sources: list[str]
    references: list[str]
    talks: list[str]
    where_source: list[str]
    where_reference: list[str]
    seg_ids: list[str] | None
    files: dict[str, str]
    source_path: Path


def _xml_texts(src_path: Path, ref_path: Path) -> _Texts:
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
    return _Texts(
        sources=[s.text for s in src],
        references=[s.text for s in ref],
        talks=[s.talk for s in src],
        where_source=[f"{src_path}:{s.line}" for s in src],
        where_reference=[f"{ref_path}:{s.line}" for s in ref],
        seg_ids=[s.seg_id for s in src],
        files={"source_file": src_path.name, "reference_file": ref_path.name},
        source_path=src_path,
    )


def _line_texts(src_path: Path, ref_path: Path, talks_path: Path | None) -> _Texts:
    sources = read_utf8_lines(src_path, "source file")
    if not sources:
        raise SimulError(f"source file {src_path} is empty; it needs one segment per line")
    references = read_utf8_lines(ref_path, "reference file")
    _same_count(src_path, len(sources), ref_path, len(references))
    talks: list[str] = []
    files = {"source_file": src_path.name, "reference_file": ref_path.name}
    if talks_path is not None:
        talks = [t.strip() for t in read_utf8_lines(talks_path, "talk id file")]
        _same_count(src_path, len(sources), talks_path, len(talks))
        for number, talk in enumerate(talks, start=1):
            if not talk:
                raise SimulError(f"{talks_path}:{number}: empty talk id")
        files["talkids_file"] = talks_path.name
    return _Texts(
        sources=sources,
        references=references,
        talks=talks,
        where_source=[f"{src_path}:{n}" for n in range(1, len(sources) + 1)],
        where_reference=[f"{ref_path}:{n}" for n in range(1, len(references) + 1)],
        seg_ids=None,
        files=files,
        source_path=src_path,
    )


def _same_count(a: Path, n_a: int, b: Path, n_b: int) -> None:
    if n_a != n_b:
        raise SimulError(
            f"{a} has {n_a} lines but {b} has {n_b}; the files must be line-aligned (line i of each "
            "file is the same segment): use files of the same split and release"
        )


def _attach_times(texts: _Texts, yaml_path: Path | None) -> tuple[list[str], list[SegmentTime | None]]:
    """Each segment's talk and YAML row, checking that the YAML lines up with the text files."""
    n = len(texts.sources)
    if yaml_path is None:
        if not texts.talks:
            raise SimulError(
                "no talk ids: put ACL.6060.<split>.talkids.txt next to the text files or pass the segment "
                "YAML (--segments) whose wav names each segment's talk"
            )
        return texts.talks, [None] * n
    rows = read_segment_yaml(yaml_path)
    if len(rows) != n:
        raise SimulError(
            f"{yaml_path} has {len(rows)} segment rows but {texts.source_path} has {n} "
            "segments; the YAML must list the same segments in the same order (same split and release)"
        )
    if not texts.talks:
        return [row.talk for row in rows], list(rows)
    if texts.seg_ids is None:
        # line-aligned files: row i is line i, and must name the same talk
        for index, (row, talk) in enumerate(zip(rows, texts.talks, strict=True)):
            if row.talk != talk:
                raise SimulError(
                    f"{yaml_path}:{row.line}: wav of talk {row.talk} but {texts.where_source[index]} belongs "
                    f"to talk {talk}; the YAML and the text files list segments in different orders"
                )
        return texts.talks, list(rows)
    # The XML orders talks by docid; match YAML rows by (talk, position in talk) so any talk order works.
    by_talk: dict[str, list[SegmentTime]] = {}
    for row in rows:
        by_talk.setdefault(row.talk, []).append(row)
    position: dict[str, int] = {}
    matched: list[SegmentTime | None] = []
    for index, talk in enumerate(texts.talks):
        k = position.get(talk, 0)
        position[talk] = k + 1
        talk_rows = by_talk.get(talk, [])
        if k >= len(talk_rows):
            raise SimulError(
                f"{texts.where_source[index]}: segment {k + 1} of talk {talk} has no row in {yaml_path} "
                f"(the YAML lists {len(talk_rows)} segments for it); use the YAML of the same split"
            )
        matched.append(talk_rows[k])
    for talk, talk_rows in by_talk.items():
        if position.get(talk, 0) != len(talk_rows):
            row = talk_rows[position.get(talk, 0)]
            raise SimulError(
                f"{yaml_path}:{row.line}: talk {talk} has {len(talk_rows)} rows but the text files hold "
                f"{position.get(talk, 0)} of its segments; the YAML belongs to another split or release"
            )
    return texts.talks, matched


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
        raise SimulError("ACL 60/60 translates from English: pick another --tgt (de, ja, zh, ...)")
    dirs = _search_dirs(root, split)
    src_xml, ref_xml = _find(dirs, [_xml_name(split, src_lang)]), _find(dirs, [_xml_name(split, tgt_lang)])
    src_txt, ref_txt = _find(dirs, _text_names(split, src_lang)), _find(dirs, _text_names(split, tgt_lang))
    if src_xml is not None and ref_xml is not None:
        texts = _xml_texts(src_xml, ref_xml)
    elif src_txt is not None and ref_txt is not None:
        texts = _line_texts(src_txt, ref_txt, _find(dirs, [f"ACL.6060.{split}.talkids.txt"]))
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
    talks, times = _attach_times(texts, yaml_path)
    files = dict(texts.files)
    if yaml_path is not None:
        files["segments_file"] = yaml_path.name
    segments: list[Segment] = []
    for index, source in enumerate(texts.sources):
        line = index + 1
        if not source.strip():
            raise SimulError(f"{texts.where_source[index]}: empty source segment")
        check_source(source, texts.where_source[index])
        reference = texts.references[index]
        if not reference.strip():
            raise SimulError(f"{texts.where_reference[index]}: empty reference segment")
        row = times[index]
        provenance: dict[str, Any] = {"dataset": DATASET, "split": split, "line": line, "talk": talks[index]}
        if texts.seg_ids is not None:
            provenance["xml_seg_id"] = texts.seg_ids[index]
        if row is not None:
            provenance["offset_s"] = round(row.offset_ms / 1000.0, 3)
            provenance["duration_s"] = round(row.duration_ms / 1000.0, 3)
        provenance.update(files)
        segments.append(
            Segment(
                id=f"{DATASET}-{split}-{line}",
                line=line,
                talk=talks[index],
                source=" ".join(source.split()),
                reference=reference.strip(),
                offset_ms=None if row is None else row.offset_ms,
                duration_ms=None if row is None else row.duration_ms,
                provenance=provenance,
            )
        )
    return segments, yaml_path


def line_segments(
    source_path: Path,
    reference_path: Path | None,
    name: str,
    talk: str,
    segments_yaml: Path | None = None,
) -> list[Segment]:
    """Segments from a line-aligned transcript and (optionally) its translation; ids ``<name>-<line>``.

    Every line belongs to ``talk`` unless a segment YAML is given, whose ``wav`` then names each line's talk.
    Without a reference file the streams have no reference (``null``).
    """
    texts = _line_texts(source_path, reference_path or source_path, None)
    if segments_yaml is None:
        texts = replace(texts, talks=[talk] * len(texts.sources))
    talks, times = _attach_times(texts, segments_yaml)
    files = {"source_file": source_path.name}
    if reference_path is not None:
        files["reference_file"] = reference_path.name
    if segments_yaml is not None:
        files["segments_file"] = segments_yaml.name
    segments: list[Segment] = []
    for index, source in enumerate(texts.sources):
        line = index + 1
        if not source.strip():
            raise SimulError(f"{texts.where_source[index]}: empty source segment")
        check_source(source, texts.where_source[index])
        reference: str | None = None
        if reference_path is not None:
            reference = texts.references[index].strip()
            if not reference:
                raise SimulError(f"{texts.where_reference[index]}: empty reference segment")
        row = times[index]
        provenance: dict[str, Any] = {"dataset": name, "line": line, "talk": talks[index], **files}
        if row is not None:
            provenance["offset_s"] = round(row.offset_ms / 1000.0, 3)
            provenance["duration_s"] = round(row.duration_ms / 1000.0, 3)
        segments.append(
            Segment(
                id=f"{name}-{line}",
                line=line,
                talk=talks[index],
                source=" ".join(source.split()),
                reference=reference,
                offset_ms=None if row is None else row.offset_ms,
                duration_ms=None if row is None else row.duration_ms,
                provenance=provenance,
            )
        )
    return segments


def select(segments: list[Segment], start: int, limit: int | None) -> list[Segment]:
    """Segments start.. (1-based line numbers), at most ``limit`` of them."""
    if start < 1:
        raise SimulError(f"--start is 1-based and must be at least 1, got {start}")
    if limit is not None and limit < 1:
        raise SimulError(f"--limit must be at least 1, got {limit}")
    if start > len(segments):
        raise SimulError(f"--start {start} is past the last segment ({len(segments)})")
    end = len(segments) if limit is None else min(len(segments), start - 1 + limit)
    return segments[start - 1 : end]


def talk_file_pairs(specs: list[str], talks: list[str], what: str) -> list[tuple[str | None, Path]]:
    """Pair each ``FILE`` or ``TALK=FILE`` of an option with its talk.

    The talk is the one given before ``=``, else the talk id that appears in the file name (the longest, so
    ``2022.acl-long.110`` wins over a shorter id it contains), else the only talk there is, else None.
    """
    known = sorted(set(talks), key=len, reverse=True)
    pairs: list[tuple[str | None, Path]] = []
    for spec in specs:
        talk: str | None = None
        path = Path(spec)
        if not path.exists() and "=" in spec:
            head, tail = spec.split("=", 1)
            if head not in known:
                listed = ", ".join(sorted(known))
                raise SimulError(f"{what} {spec!r}: {head!r} is not a talk of the data (talks: {listed})")
            talk, path = head, Path(tail)
        if not path.exists():
            raise SimulError(f"{what} {path} does not exist")
        if talk is None:
            talk = next((t for t in known if t in path.name), None)
        if talk is None and len(known) == 1:
            talk = known[0]
        pairs.append((talk, path))
    return pairs

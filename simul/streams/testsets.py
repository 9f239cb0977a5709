"""sacrebleu's test sets (``--testset wmt22 --langpair en-de``) through sacrebleu's own dataset API.

sacrebleu downloads a test set once into its cache folder, ``$SACREBLEU`` (default ``~/.sacrebleu``), as
``<cache>/<name>/raw/`` (the downloaded archive and what it unpacks to) and writes one plain-text file per
field next to it: ``<cache>/<name>/<name>.<langpair>.src``, ``.ref`` or ``.ref-A``, ``.ref-B``, ...,
``.docid``, ``.origlang``. simul asks sacrebleu for the files of every field (``Dataset.get_files`` and
``Dataset.fieldnames``), takes the source and **every** reference field (``ref`` or ``ref:<translator>``,
not only the ones sacrebleu scores against by default), and reads them strictly like any other
line-aligned files. Offline with an empty cache, sacrebleu's download fails: that becomes an error naming
the folder sacrebleu looked in.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError
from simul.streams.fixed_lag import AlignedLine
from simul.streams.parallel_text import line_aligned, read_text_lines


@dataclass(frozen=True)
class TestSet:
    """A sacrebleu test set's lines and what the provenance records about it."""

    lines: list[AlignedLine]
    src: str
    tgt: str
    provenance: dict[str, Any]


def _dataset(name: str) -> Any:
    from sacrebleu.dataset import DATASETS

    if name not in DATASETS:
        close = difflib.get_close_matches(name, list(DATASETS), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise SimulError(f"sacrebleu has no test set {name!r}{hint} (list them with `sacrebleu --list`)")
    return DATASETS[name]


def cache_folder(name: str) -> Path:
    """Where sacrebleu keeps ``name``: ``$SACREBLEU/<name>`` as sacrebleu resolved it when imported."""
    from sacrebleu.utils import SACREBLEU_DIR

    return Path(SACREBLEU_DIR) / name


def testset_lines(name: str, langpair: str) -> TestSet:
    """Source and every reference of a sacrebleu test set, downloading it first when it is not cached."""
    import sacrebleu

    dataset = _dataset(name)
    if langpair not in dataset.langpairs:
        pairs = ", ".join(sorted(dataset.langpairs))
        raise SimulError(f"sacrebleu's test set {name} has no language pair {langpair!r}; it has {pairs}")
    src, sep, tgt = langpair.partition("-")
    if not sep:
        raise SimulError(f"--langpair takes SRC-TGT, e.g. en-de; got {langpair!r}")
    folder = cache_folder(name)
    try:
        files = dataset.get_files(langpair)
        fields = dataset.fieldnames(langpair)
    except (OSError, SystemExit) as exc:
        # URLError (offline), a read-only cache, or sacrebleu's own sys.exit on a bad checksum
        reason = str(getattr(exc, "reason", None) or exc) or type(exc).__name__
        raise SimulError(
            f"sacrebleu could not provide test set {name} {langpair}: it is not in sacrebleu's cache folder "
            f"{folder} and could not be downloaded ({reason}). Run once with internet access (sacrebleu "
            "keeps the download there), or set SACREBLEU to a folder that holds a filled sacrebleu cache"
        ) from None
    except Exception as exc:  # sacrebleu's XML reader asserts and raises lxml errors on damaged files
        raise SimulError(
            f"sacrebleu could not read test set {name} {langpair} from its cache folder {folder} "
            f"({type(exc).__name__}: {exc}); the cache may be damaged: remove {folder} and let sacrebleu "
            "download it again"
        ) from None
    by_field = dict(zip(fields, files, strict=True))
    if "src" not in by_field:
        raise SimulError(f"sacrebleu's test set {name} {langpair} has no source field (fields: {fields})")
    # sorted: sacrebleu collects translators in a set, so its field order can change between processes
    ref_fields = sorted(f for f in fields if f == "ref" or f.startswith("ref:"))
    source_path = Path(by_field["src"])
    ref_paths = [Path(by_field[f]) for f in ref_fields]
    sources = read_text_lines(source_path)
    damaged = f"sacrebleu's cache looks damaged: remove {folder} and let sacrebleu download it again"
    lines = line_aligned(source_path, sources, ref_paths, damaged)
    provenance = {
        "dataset": name,
        "testset": name,
        "langpair": langpair,
        "sacrebleu": sacrebleu.__version__,
        "references": [f.partition(":")[2] or "ref" for f in ref_fields],
        "source_file": source_path.name,
        "reference_files": [p.name for p in ref_paths],
    }
    return TestSet(lines=lines, src=src, tgt=tgt, provenance=provenance)

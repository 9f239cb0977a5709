"""FLORES streams: fixed word-lag over line-aligned FLORES-200 or FLORES+ files.

Layouts read (DIR may be the dataset root or the split folder itself):

* FLORES-200 (NLLB release): ``DIR/<split>/<lang>.<split>``, e.g. ``devtest/eng_Latn.devtest``
* FLORES+ text release:     ``DIR/<split>/<split>.<lang>``, e.g. ``devtest/devtest.eng_Latn``
* FLORES+ parquet:          ``DIR/<split>/<lang>.parquet`` with a ``text`` column (needs pyarrow)

Any split name present on disk is accepted. Chinese is found as ``zho_Hans`` or ``cmn_Hans``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from simul.common.errors import SimulError
from simul.common.languages import Language, get_language
from simul.common.limits import check_text_lines
from simul.common.paths import fixtures_dir
from simul.streams.fixed_lag import AlignedLine, check_selection, lag_streams
from simul.streams.format import Stream


def default_flores_dir() -> Path:
    return fixtures_dir() / "flores200"


def _split_dirs(data_dir: Path, split: str) -> list[Path]:
    candidates = [data_dir / split, data_dir]
    return [c for c in candidates if c.is_dir()]


def find_flores_file(data_dir: Path, split: str, lang: Language) -> Path:
    """The file holding ``lang`` for ``split``, in any supported layout."""
    if not data_dir.is_dir():
        raise SimulError(f"FLORES data directory {data_dir} does not exist")
    tried: list[Path] = []
    for folder in _split_dirs(data_dir, split):
        for code in lang.dataset_codes:
            for name in (f"{code}.{split}", f"{split}.{code}", f"{code}.parquet"):
                path = folder / name
                tried.append(path)
                if path.is_file():
                    return path
    splits = sorted(p.name for p in data_dir.iterdir() if p.is_dir())
    hint = f"; splits present: {', '.join(splits)}" if splits else ""
    raise SimulError(
        f"no FLORES file for {lang.flores} ({lang.name}) split {split!r} under {data_dir} "
        f"(looked for {tried[0].name}, {tried[1].name}, ...){hint}"
    )


def read_lines(path: Path) -> list[str]:
    """Sentences of a FLORES file, one per line (or the ``text`` column of a parquet file)."""
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq  # type: ignore[import-not-found, unused-ignore]
        except ImportError:
            raise SimulError(f"{path} is parquet; install pyarrow to read it (pip install pyarrow)") from None
        table = pq.read_table(path)
        if "text" not in table.column_names:
            raise SimulError(f"{path} has no 'text' column (columns: {', '.join(table.column_names)})")
        return [str(x) for x in table.column("text").to_pylist()]
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SimulError(f"{path}:{line}: not valid UTF-8 ({exc.reason}); FLORES files are UTF-8") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = (
        text.replace("\r\n", "\n").split("\n")[:-1]
        if text.endswith("\n")
        else text.replace("\r\n", "\n").split("\n")
    )
    check_text_lines(lines, path)
    return lines


def flores_streams(
    data_dir: Path | None,
    split: str,
    src: str,
    tgt: str,
    lag: int,
    start: int = 1,
    limit: int | None = None,
) -> Iterator[Stream]:
    """Fixed-lag streams for lines start.. (1-based) of a FLORES split."""
    check_selection(lag, start, limit)
    src_lang, tgt_lang = get_language(src), get_language(tgt)
    root = data_dir if data_dir is not None else default_flores_dir()
    src_path = find_flores_file(root, split, src_lang)
    tgt_path = find_flores_file(root, split, tgt_lang)
    sources, targets = read_lines(src_path), read_lines(tgt_path)
    if len(sources) != len(targets):
        raise SimulError(
            f"{src_path} has {len(sources)} lines but {tgt_path} has {len(targets)}; FLORES files must be "
            "line-aligned (same split, same release)"
        )
    lines = [
        AlignedLine(
            line=number,
            source=source,
            references=(target,),
            where_source=f"{src_path}:{number}",
            where_references=(f"{tgt_path}:{number}",),
        )
        for number, (source, target) in enumerate(zip(sources, targets, strict=True), start=1)
    ]
    built = lag_streams(
        lines,
        id_prefix=f"flores200-{split}",
        src=src_lang,
        tgt=tgt_lang,
        lag=lag,
        provenance={
            "dataset": "flores200",
            "split": split,
            "source_file": src_path.name,
            "reference_file": tgt_path.name,
        },
        start=start,
        limit=limit,
        offer_skip=False,
        what=str(src_path),
    )
    yield from built.streams

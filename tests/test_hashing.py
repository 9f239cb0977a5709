"""Joining shipped file parts into one verified file, as the default model and Whisper base are built."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from simul.common import hashing
from simul.common.errors import SimulError
from simul.common.hashing import cached_sha256, join_verified


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMUL_CACHE_DIR", str(tmp_path / "cache"))


def _parts(tmp_path: Path) -> tuple[list[Path], bytes]:
    chunks = [b"GGUF" + bytes(range(256)) * 50, b"", b"tail" * 1000]
    paths = []
    for i, chunk in enumerate(chunks):
        path = tmp_path / f"part{i}"
        path.write_bytes(chunk)
        paths.append(path)
    return paths, b"".join(chunks)


def test_parts_are_joined_in_order_and_the_hash_is_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts, whole = _parts(tmp_path)
    target = tmp_path / "out" / "model.bin"
    digest = hashlib.sha256(whole).hexdigest()

    def no_rehash(path: Path) -> str:
        raise AssertionError(f"{path} was read again to hash it")

    # the hash is taken while the parts are copied: neither the join nor a later lookup reads the file again
    monkeypatch.setattr(hashing, "sha256_file", no_rehash)
    join_verified(parts, target, digest, what="test model", fix="reinstall it", size=len(whole))
    assert target.read_bytes() == whole
    assert cached_sha256(target) == digest
    assert [p.name for p in target.parent.iterdir()] == ["model.bin"]


@pytest.mark.parametrize("wrong", ["sha", "size"])
def test_a_mismatch_leaves_nothing_behind(tmp_path: Path, wrong: str) -> None:
    parts, whole = _parts(tmp_path)
    target = tmp_path / "out" / "model.bin"
    digest = hashlib.sha256(whole).hexdigest()
    sha, size = ("0" * 64, len(whole)) if wrong == "sha" else (digest, len(whole) + 1)
    with pytest.raises(SimulError, match=r"the assembled test model has \d+ bytes .*; reinstall it$"):
        join_verified(parts, target, sha, what="test model", fix="reinstall it", size=size)
    assert list(target.parent.iterdir()) == []


def test_a_missing_part_is_named(tmp_path: Path) -> None:
    parts, whole = _parts(tmp_path)
    parts[1].unlink()
    with pytest.raises(SimulError, match=r"the test model parts are missing: .*part1; reinstall it"):
        digest = hashlib.sha256(whole).hexdigest()
        join_verified(parts, tmp_path / "m.bin", digest, "test model", "reinstall it")
    assert not (tmp_path / "m.bin").exists()

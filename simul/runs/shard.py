"""Shards: a deterministic share of a stream set, so that several processes or machines split one run.

A stream belongs to shard ``k`` of ``n`` (1-based) when

    int(sha256(stream id, UTF-8)[:8 bytes], big-endian) mod n  ==  k - 1

so the assignment depends on the stream id alone: not on the order of the file, the ``--limit``, the machine
or the other shards. Every method of a stream is decoded by the same worker, which keeps each stream's speedup
a same-machine ratio. A shard run records its place in the full set (``config.shard``) so that
`simul merge` can check the shards belong together and rebuild the single-process order.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from simul.common.errors import UsageError
from simul.streams.format import Stream

ASSIGNMENT = "sha256(stream id) mod n"
_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count``, 1-based as users write it (``--shard 2/4``)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise UsageError(
                f"--shard {self.index}/{self.count}: K must be between 1 and N (e.g. --shard 1/4 ... 4/4)"
            )

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    def owns(self, stream_id: str) -> bool:
        return shard_of(stream_id, self.count) == self.index


def parse_shard(text: str) -> Shard:
    """``K/N`` -> Shard(K, N)."""
    match = _SPEC.match(text)
    if not match:
        raise UsageError(f"--shard takes K/N, e.g. --shard 1/4 (the first of four shards); got {text!r}")
    return Shard(int(match.group(1)), int(match.group(2)))


def shard_of(stream_id: str, count: int) -> int:
    """The 1-based shard that owns ``stream_id`` when the streams are cut into ``count`` shards."""
    digest = hashlib.sha256(stream_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


@dataclass(frozen=True)
class ShardSelection:
    streams: list[Stream]  # the shard's streams, in the order of the full set
    positions: list[int]  # their 0-based positions in the full set
    total: int  # streams in the full set


def select(streams: Sequence[Stream], shard: Shard) -> ShardSelection:
    """The shard's share of ``streams``; an empty share is a usage error (too many shards)."""
    picked = [(i, s) for i, s in enumerate(streams) if shard.owns(s.id)]
    if not picked:
        raise UsageError(
            f"shard {shard.label} gets none of the {len(streams)} streams (streams are assigned by "
            f"{ASSIGNMENT}); use fewer shards"
        )
    return ShardSelection([s for _, s in picked], [i for i, _ in picked], len(streams))


def shard_config(shard: Shard, selection: ShardSelection) -> dict[str, Any]:
    """What a shard run records in ``config.shard``."""
    return {
        "index": shard.index,
        "count": shard.count,
        "assignment": ASSIGNMENT,
        "streams_total": selection.total,
        "positions": selection.positions,
    }


def plan(streams: Sequence[Stream], count: int) -> list[Shard]:
    """The shards of ``count`` that hold at least one of ``streams`` (those worth running)."""
    owned = {shard_of(s.id, count) for s in streams}
    return [Shard(k, count) for k in range(1, count + 1) if k in owned]

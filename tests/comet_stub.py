"""A COMET stand-in that records what it is asked to score (the fixture ``comet_stub``).

simul loads COMET through ``comet.load_from_checkpoint`` (simul.metrics.comet.CometScorer); the stub puts a
``comet`` module in its place whose model's ``predict`` keeps every (source, output, reference) triple it
gets, call by call, and answers with a score computed from the triple, so that a test can check both what
COMET saw and that each score landed on the right stream or segment. No torch, no checkpoint:
``--comet-model`` takes ``stub.path``, an empty file.
"""

from __future__ import annotations

import hashlib
import sys
import types
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

Triple = tuple[str, str, str]


def stub_score(triple: Triple) -> float:
    """The stub's segment score: a stable number in [0, 1) from the triple (different triples differ)."""
    digest = hashlib.sha256("\x00".join(triple).encode("utf-8")).digest()
    return round(int.from_bytes(digest[:4], "big") / 2**32, 4)


@dataclass
class CometStub:
    path: Path  # what to pass as --comet-model
    calls: list[list[Triple]] = field(default_factory=list)  # one list of triples per predict call

    def predict(self, data: list[dict[str, str]], batch_size: int, gpus: int, progress_bar: bool) -> Any:
        triples = [(d["src"], d["mt"], d["ref"]) for d in data]
        self.calls.append(triples)
        return types.SimpleNamespace(scores=[stub_score(t) for t in triples])


def install(monkeypatch: pytest.MonkeyPatch, folder: Path) -> CometStub:
    """Put the stub in place of unbabel-comet for the rest of the test (the ``comet_stub`` fixture)."""
    path = folder / "stub.ckpt"
    path.write_bytes(b"")
    stub = CometStub(path)
    module = types.ModuleType("comet")
    module.load_from_checkpoint = lambda checkpoint: stub  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "comet", module)
    real_version = metadata.version
    monkeypatch.setattr(
        metadata, "version", lambda name: "0.0+stub" if name == "unbabel-comet" else real_version(name)
    )
    return stub

"""Small builders shared by tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from simul.common.cpu import cpu_isa
from simul.streams.format import Step, Stream
from simul.streams.lag import lag_prefixes

SENTENCES = [
    (
        "The cat sat on the mat and looked out of the window.",
        "Die Katze saß auf der Matte und sah aus dem Fenster.",
    ),
    ("We now have four new trains in the city.", "Wir haben jetzt vier neue Züge in der Stadt."),
    ("Hello world, this is a test of the system.", "Hallo Welt, das ist ein Test des Systems."),
    ("The weather is good today and the sun is shining.", "Das Wetter ist heute gut und die Sonne scheint."),
]


def isa_flag_this_cpu_lacks() -> str:
    """An instruction-set family simul records that this machine's CPU does not report, for tests that give a
    run "another CPU": a fixed flag such as amx_int8 is this very machine's on a Sapphire Rapids Xeon."""
    own = set(cpu_isa() or [])
    return next(f for f in ("amx_int8", "avx512_fp16", "sve2", "sme") if f not in own)


def lag_stream(stream_id: str, source: str, reference: str | None, lag: int = 3, tgt: str = "de") -> Stream:
    prefixes = lag_prefixes(source, lag)
    return Stream(
        id=stream_id,
        src="en",
        tgt=tgt,
        steps=tuple(Step(p, final=i == len(prefixes) - 1) for i, p in enumerate(prefixes)),
        reference=reference,
        provenance={"dataset": "test"},
    )


def make_streams(lag: int = 3) -> list[Stream]:
    return [lag_stream(f"s{i}", src, ref, lag) for i, (src, ref) in enumerate(SENTENCES)]


def eval_args(model: Path, streams: Path, *extra: str) -> list[str]:
    """`simul eval` arguments for a quiet run without COMET on the given model and streams."""
    return [
        "eval",
        "--model",
        str(model),
        "--streams",
        str(streams),
        "--comet-model",
        "none",
        "--quiet",
        *extra,
    ]


def load_tool(name: str) -> ModuleType:
    """A script of tools/ (not a package) imported as module ``name``, registered in sys.modules so that its
    dataclasses and the tools that import it resolve."""
    path = Path(__file__).resolve().parent.parent / "tools" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

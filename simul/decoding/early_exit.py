"""Early-exit copies of a model: its first L transformer blocks, the final norm and the output head.

Such a copy is a draft model of the same vocabulary made without training: the early-exit idea of SpecBound
(Wen and Feng), LayerSkip (Elhoushi et al. 2024) and Draft & Verify (Zhang et al. 2024), where the first
layers of a model guess what the whole model will say. ``simul models truncate`` writes one; ``--draft-layers
L`` builds one once per model and L, keyed by the model's SHA-256 in simul's cache, and drafts with it.

The copy is the same GGUF file less the tensors of blocks L and above (``blk.N.*``, N >= L), with
``{arch}.block_count`` set to L and every per-layer metadata array of the architecture (one value per block)
cut to its first L values. Everything else, quantisation included, is copied byte for byte. Only
architectures whose every per-layer tensor lives under ``blk.N.`` and whose blocks are all alike are copied
(:data:`ARCHITECTURES`); for any other, or a tensor outside the blocks this module does not know, the copy is
refused rather than guessed. The ``gguf`` package (a runtime dependency) reads and writes the files.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simul.common.errors import SimulError, UsageError
from simul.common.hashing import cached_sha256
from simul.common.paths import cache_dir

# Decoder-only transformers whose per-layer tensors are all under blk.N. and whose blocks are interchangeable
# in order (a prefix of them is a shallower model of the same kind). Not here, and refused: hybrid and
# recurrent models (their layer types differ), encoder-decoders (enc./dec. blocks), models with multi-token
# prediction layers counted in block_count, and per-layer embeddings outside the blocks (gemma3n).
ARCHITECTURES = frozenset(
    {"llama", "gemma", "gemma2", "gemma3", "qwen2", "qwen3", "phi3", "granite", "olmo2", "stablelm"}
)
# Tensors outside the blocks that a copy keeps as they are (the embedding, the final norm, the output head
# and RoPE's frequency factors).
SHARED_TENSORS = frozenset(
    {
        "token_embd.weight",
        "token_embd_norm.weight",
        "token_embd_norm.bias",
        "output_norm.weight",
        "output_norm.bias",
        "output.weight",
        "output.bias",
        "rope_freqs.weight",
        "rope_factors_long.weight",
        "rope_factors_short.weight",
    }
)
_BLOCK = re.compile(r"^blk\.(\d+)\.")
# Metadata that says what the copy is (llama.cpp ignores keys it does not know).
LAYERS_KEY = "simul.early_exit.layers"
SOURCE_BLOCKS_KEY = "simul.early_exit.source_blocks"
SOURCE_SHA256_KEY = "simul.early_exit.source_sha256"
GGUF_HINT = "the gguf package is missing: run `make setup` (or `pip install gguf`)"


@dataclass(frozen=True)
class EarlyExit:
    """A copy written: where, from which model (its SHA-256), and how many of its blocks it keeps."""

    path: Path
    source_sha256: str
    layers: int
    source_blocks: int
    architecture: str

    def to_json(self) -> dict[str, Any]:
        return {
            "source_sha256": self.source_sha256,
            "layers": self.layers,
            "source_blocks": self.source_blocks,
            "architecture": self.architecture,
        }


def _gguf() -> Any:
    try:
        import gguf
    except ImportError:  # pragma: no cover - gguf is a runtime dependency
        raise SimulError(GGUF_HINT) from None
    return gguf


def _field(reader: Any, key: str) -> Any:
    field = reader.get_field(key)
    return None if field is None else field.contents()


def truncate_model(
    source: Path, layers: int, out: Path, source_sha256: str | None = None, option: str = "--layers"
) -> EarlyExit:
    """Write the copy of ``source`` that keeps its first ``layers`` blocks to ``out`` (through a temporary
    file renamed into place, so that an interrupted copy never looks complete); ``option`` names ``layers``
    in messages."""
    gguf = _gguf()
    if not source.is_file():
        raise SimulError(f"model file {source} does not exist; give a GGUF model to truncate")
    try:
        reader = gguf.GGUFReader(source, "r")
    except (ValueError, OSError) as exc:
        raise SimulError(f"{source} is not a GGUF file gguf can read ({exc})") from None
    arch = _field(reader, gguf.Keys.General.ARCHITECTURE)
    block_key = f"{arch}.block_count"
    blocks = _field(reader, block_key)
    if arch not in ARCHITECTURES or not isinstance(blocks, int):
        raise UsageError(
            f"{source}: simul cannot make an early-exit copy of a {arch!r} model: it maps the tensors of "
            f"{', '.join(sorted(ARCHITECTURES))} models only (decoder-only transformers whose blocks are all "
            "alike, each under blk.N.)"
        )
    if not 1 <= layers < blocks:
        raise UsageError(
            f"{option} {layers}: an early-exit copy keeps fewer blocks than the model's {blocks}, and at "
            f"least one (1..{blocks - 1})"
        )
    kept = []
    for tensor in reader.tensors:
        match = _BLOCK.match(tensor.name)
        if match is None and tensor.name not in SHARED_TENSORS:
            raise UsageError(
                f"{source}: simul cannot place tensor {tensor.name!r} of this {arch} model (neither in a "
                "block nor the embedding, final norm or output head), so it will not guess an early-exit copy"
            )
        if match is None or int(match.group(1)) < layers:
            kept.append(tensor)
    digest = source_sha256 or cached_sha256(source)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.part")
    try:
        writer = gguf.GGUFWriter(tmp, arch, endianess=reader.endianess)
        writer.data_alignment = reader.alignment
        for field in reader.fields.values():
            if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
                continue
            kind = field.types[0]
            sub_type = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
            value = field.contents()
            if field.name == block_key:
                value = layers
            elif field.name == gguf.Keys.General.NAME:
                value = f"{value} (first {layers} of {blocks} blocks)"
            elif field.name.startswith(f"{arch}.") and sub_type is not None and len(value) == blocks:
                value = value[:layers]  # one value per block
            writer.add_key_value(field.name, value, kind, sub_type=sub_type)
        writer.add_uint32(LAYERS_KEY, layers)
        writer.add_uint32(SOURCE_BLOCKS_KEY, blocks)
        writer.add_string(SOURCE_SHA256_KEY, digest)
        for tensor in kept:
            data = tensor.data
            writer.add_tensor_info(tensor.name, data.shape, data.dtype, data.nbytes, tensor.tensor_type)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        for tensor in kept:
            writer.write_tensor_data(tensor.data, tensor_endianess=reader.endianess)
        writer.close()
        os.replace(tmp, out)
    except OSError as exc:
        raise SimulError(f"cannot write the early-exit copy {out}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return EarlyExit(out, digest, layers, blocks, str(arch))


def early_exit_copy(model: Path, layers: int, option: str = "--draft-layers") -> EarlyExit:
    """The copy of ``model`` keeping its first ``layers`` blocks, from simul's cache (``drafts/``, keyed by
    the model's SHA-256 and ``layers``), made there the first time it is asked for."""
    digest = cached_sha256(model)
    path = cache_dir() / "drafts" / f"{digest}-first{layers}.gguf"
    cached = read_early_exit(path) if path.is_file() else None
    if cached is not None and (cached.source_sha256, cached.layers) == (digest, layers):
        return cached
    return truncate_model(model, layers, path, source_sha256=digest, option=option)


def read_early_exit(path: Path) -> EarlyExit | None:
    """What an early-exit copy records about itself (None: ``path`` is not one, or cannot be read)."""
    gguf = _gguf()
    try:
        reader = gguf.GGUFReader(path, "r")
    except (ValueError, OSError):
        return None
    layers, blocks = _field(reader, LAYERS_KEY), _field(reader, SOURCE_BLOCKS_KEY)
    digest, arch = _field(reader, SOURCE_SHA256_KEY), _field(reader, gguf.Keys.General.ARCHITECTURE)
    if not (isinstance(layers, int) and isinstance(blocks, int) and isinstance(digest, str)):
        return None
    return EarlyExit(path, digest, layers, blocks, str(arch))

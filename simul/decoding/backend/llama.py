"""A llama.cpp model behind the small interface the decoders need, over llama-cpp-python's low-level API.

The high-level ``llama_cpp.Llama`` keeps its own token history and asks for logits it does not need; here the
decoders decide exactly which positions get logits (a logit row over a 262k vocabulary is 1 MB), the KV cache
is truncated exactly with ``llama_memory_seq_rm``, and the tokens whose keys and values are in the cache are
tracked (per sequence, see sequence.py) so that the longest common prefix with the next prompt is reused.
One context holds one sequence, or several (``configure``) that share each forward pass (``eval_many``).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from simul.common.errors import SimulError
from simul.decoding.backend.devices import list_devices, resolve_gpu_layers
from simul.decoding.backend.exactness import ExactSupport, exact_support
from simul.decoding.backend.exactness import apply as apply_exact
from simul.decoding.backend.library import LLAMA_LOG, _llama, check_gguf
from simul.decoding.backend.sequence import KVSequence, Logits
from simul.decoding.backend.vocabulary import VocabularyFacts
from simul.machine.load_following import LoadFollower
from simul.machine.openmp import wait_policy_chosen
from simul.machine.threads import ThreadChoice, choose_threads

TOKENIZE_CACHE = 4096  # texts remembered by LlamaBackend.tokenize
FlashAttn = Literal["auto", "on", "off"]
#: llama.cpp's llama_flash_attn_type: auto lets llama.cpp decide per device (on for the CPU backend)
FLASH_ATTN: dict[str, int] = {"auto": -1, "off": 0, "on": 1}
# Per thread: called after each forward pass (see set_pass_hook).
_hooks = threading.local()
# One forward pass at a time in this process (see eval_many).
_DECODE_LOCK = threading.Lock()


@contextlib.contextmanager
def pass_hook_suspended() -> Iterator[None]:
    """No pass hook for this thread inside (its turns are not handed over): simul bench's calibration runs
    in one piece, and its time is left out of the lane's clocks."""
    hook = getattr(_hooks, "after_pass", None)
    _hooks.after_pass = None
    try:
        yield
    finally:
        _hooks.after_pass = hook


def set_pass_hook(hook: Callable[[], None] | None) -> None:
    """Call ``hook`` after every forward pass this thread makes (None: stop). simul.runs.side_by_side uses it
    to let another evaluation of the process take its turn between passes; the logits a pass returns stay
    valid, since each evaluation has a context of its own."""
    _hooks.after_pass = hook


class ContextOverflowError(SimulError):
    """A sequence does not fit in the context window.

    ``needed`` (when known) is the number of positions that would fit it; the message then ends with the
    ``--n-ctx`` that would (the next power of two), followed by ``remedy`` (another way out). ``advice``
    rewrites that ending for a model trained on fewer positions.
    """

    def __init__(self, problem: str, needed: int | None = None, remedy: str = "") -> None:
        self.problem = problem
        self.needed = needed
        self.remedy = remedy
        super().__init__(self.advice(0))

    def advice(self, n_ctx_train: int) -> str:
        """The message, suggesting an ``--n-ctx`` no larger than the model's training length (0: unknown);
        past that length no ``--n-ctx`` helps, and it says so."""
        if self.needed is None:
            return self.problem
        n_ctx = 1 << max(self.needed - 1, 0).bit_length()
        if 0 < n_ctx_train < n_ctx:
            if self.needed > n_ctx_train:
                return (
                    f"{self.problem}; the model was trained on at most {n_ctx_train} tokens, which caps "
                    "--n-ctx, so split the stream into shorter ones or use a model with a longer context"
                )
            n_ctx = n_ctx_train
        return f"{self.problem}; pass --n-ctx {n_ctx}{self.remedy}"


@dataclass(frozen=True)
class ModelInfo:
    path: str
    name: str
    architecture: str
    n_vocab: int
    n_ctx: int
    n_ctx_train: int
    n_params: int
    chat_template: str | None
    bos_token: str
    eos_token: str
    # what the model keeps between tokens: "attention" (a KV cache, truncated exactly at any position),
    # "recurrent" (one state per sequence: Mamba, RWKV) or "hybrid" (both: Jamba, the gated-delta-net
    # Qwen3.5/3-Next family); llama.cpp cannot drop the last positions of a recurrent state
    memory: str = "attention"


def memory_kind(lib: object, model: object) -> str:
    """ "recurrent", "hybrid" or "attention", as llama.cpp classes the loaded model's architecture."""
    if bool(getattr(lib, "llama_model_is_hybrid", lambda _m: False)(model)):
        return "hybrid"
    if bool(getattr(lib, "llama_model_is_recurrent", lambda _m: False)(model)):
        return "recurrent"
    return "attention"


class LlamaBackend:
    """One llama.cpp model and context with ``n_seq`` sequences (one unless configured otherwise).

    The methods on the backend itself (``cache``, ``eval``, ``truncate``, ...) act on sequence 0.
    """

    def __init__(
        self,
        model_path: Path,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        n_gpu_layers: int | None = None,
        thread_choice: ThreadChoice | None = None,
        flash_attn: FlashAttn = "auto",
        repack: bool = True,
        exact: bool = False,
    ) -> None:
        """``exact``: every forward pass gives each row the logits a one-token pass gives it
        (simul.decoding.backend.exactness); fails with the reason where this llama.cpp cannot. It turns
        FlashAttention on. ``flash_attn`` and ``repack`` (repacked weights) are llama.cpp's own switches."""
        check_gguf(model_path)
        if flash_attn not in FLASH_ATTN:
            raise ValueError(f"flash_attn must be one of {', '.join(FLASH_ATTN)}, not {flash_attn!r}")
        if exact and flash_attn == "off":
            raise ValueError("exact mode needs FlashAttention (flash_attn on or auto)")
        self.flash_attn: FlashAttn = "on" if exact else flash_attn
        self.repack = repack
        self.exact = exact
        # some of exact mode's parts alone (exactness.PARTS), for measuring what each costs
        # (tools/exact_costs.py); None: all of them in exact mode, none in fast mode
        self.exact_parts: int | None = None
        # exact mode with automatic threads: chooses the thread count between passes (simul.machine.
        # load_following; set by the engine once the backend is calibrated)
        self.follower: LoadFollower | None = None
        # The CPU sample that chooses the threads also chooses the wait policy, before llama.cpp loads.
        if thread_choice is None and (not n_threads or not wait_policy_chosen()):
            thread_choice = choose_threads(n_threads, model=model_path)
        lib = _llama(thread_choice.taken_cores if thread_choice is not None else None)
        self._lib = lib
        self.model_path = model_path
        self.n_threads = n_threads or (thread_choice.threads if thread_choice is not None else 1)
        # None: every layer on the GPU when this llama.cpp build can offload, else none (-1 means all)
        self.n_gpu_layers = resolve_gpu_layers(n_gpu_layers, lib)
        self.gpu_offload = bool(lib.llama_supports_gpu_offload())  # type: ignore[attr-defined]
        self.devices, self.devices_unknown = list_devices(lib)
        self.exact_support = exact_support(lib, self.n_gpu_layers if self.gpu_offload else 0)
        if exact and not self.exact_support.available:
            raise SimulError(f"exact mode is not available: {self.exact_support.reason}")
        mparams = lib.llama_model_default_params()  # type: ignore[attr-defined]
        mparams.n_gpu_layers = self.n_gpu_layers
        # Repacked weights ("extra buffer types": interleaved K-quant rows for the CPU's gemm) compute a row
        # inside a wide pass with other kernels than a one-token pass (simul.decoding.backend.invariance).
        mparams.use_extra_bufts = repack
        model = lib.llama_model_load_from_file(str(model_path).encode("utf-8"), mparams)  # type: ignore[attr-defined]
        if not model:
            reason = next((line.strip() for line in reversed(LLAMA_LOG) if "error" in line.lower()), "")
            raise SimulError(
                f"llama.cpp could not load {model_path}: the file is damaged, truncated, or of an "
                "architecture this llama-cpp-python does not support" + (f" ({reason})" if reason else "")
            )
        self._model = model
        self.n_layers = int(lib.llama_model_n_layer(model))  # type: ignore[attr-defined]
        self._vocab = lib.llama_model_get_vocab(model)  # type: ignore[attr-defined]
        self.n_vocab = int(lib.llama_vocab_n_tokens(self._vocab))  # type: ignore[attr-defined]
        n_ctx_train = int(lib.llama_model_n_ctx_train(model))  # type: ignore[attr-defined]
        if n_ctx_train > 0 and n_ctx > n_ctx_train:
            n_ctx = n_ctx_train
        self._ctx: object = None
        self._batch: object = None
        self.sequences: list[KVSequence] = []
        self._create_context(n_ctx, 1)
        self._pieces: dict[int, bytes] = {}
        self._tokens: OrderedDict[tuple[str, bool, bool], tuple[int, ...]] = OrderedDict()
        self._eog: dict[int, bool] = {}
        self.info = ModelInfo(
            path=str(model_path),
            name=self._meta("general.name") or model_path.stem,
            architecture=self._meta("general.architecture") or "unknown",
            n_vocab=self.n_vocab,
            n_ctx=self.n_ctx,
            n_ctx_train=n_ctx_train,
            n_params=int(lib.llama_model_n_params(model)),  # type: ignore[attr-defined]
            chat_template=self._chat_template(),
            bos_token=self._special_text(lib.llama_vocab_bos(self._vocab)),  # type: ignore[attr-defined]
            eos_token=self._special_text(lib.llama_vocab_eos(self._vocab)),  # type: ignore[attr-defined]
            memory=memory_kind(lib, model),
        )

    # -- the context ----------------------------------------------------------------------------------------

    def _create_context(self, n_ctx: int, n_seq: int) -> None:
        """A context of ``n_ctx`` positions for ``n_seq`` sequences (each gets ``n_ctx / n_seq`` of them)."""
        lib = self._lib
        cparams = lib.llama_context_default_params()  # type: ignore[attr-defined]
        cparams.n_ctx = n_ctx
        cparams.n_batch = n_ctx  # any evaluation fits one llama_decode call
        cparams.n_ubatch = min(512, n_ctx)
        cparams.n_seq_max = n_seq
        cparams.n_threads = self.n_threads
        cparams.n_threads_batch = self.n_threads
        cparams.no_perf = True
        cparams.flash_attn_type = FLASH_ATTN[self.flash_attn]
        # Keep the whole sliding-window cache so that truncating to any position stays exact (gemma-3).
        cparams.swa_full = True
        # Several sequences share one cache. With a cache per sequence (llama.cpp's default), llama_decode
        # cuts a batch into micro-batches of sequences with consecutive ids and equal token counts, each a
        # full pass over the weights, which undoes most of the batching (16 FLORES streams, RT + SSBD,
        # --parallel 8 on 2 cores: 91.5 s per-sequence caches, 63.6 s one cache, 118.1 s --parallel 1).
        # The attention of a shared cache skips the cells of other sequences (masked), and
        # llama_memory_seq_rm with a sequence id still removes that sequence's cells alone.
        # In exact mode the patch keeps each sequence's cells in a region of its own, in the order of its
        # positions (exactness.py), so that its attention sums run as in a cache of its own: a cache per
        # sequence cost the same micro-batches (exact --parallel 8 at 0.97 of --parallel 1's wall).
        cparams.kv_unified = n_seq > 1
        ctx = lib.llama_init_from_model(self._model, cparams)  # type: ignore[attr-defined]
        if not ctx:
            reason = next((line.strip() for line in reversed(LLAMA_LOG) if "error" in line.lower()), "")
            what = f"{n_ctx} tokens" if n_seq == 1 else f"{n_seq} sequences ({n_ctx} tokens in all)"
            hint = "lower --parallel or --n-ctx" if n_seq > 1 else "lower --n-ctx"
            raise SimulError(
                f"llama.cpp could not create a context of {what} for {self.model_path}: {hint}"
                + (f" ({reason})" if reason else "")
            )
        self._ctx = ctx
        self._memory = lib.llama_get_memory(ctx)  # type: ignore[attr-defined]
        self.n_seq = n_seq
        # llama.cpp may round the context up (to a multiple of 256) but keeps n_batch as asked: one
        # llama_decode call must fit n_batch, so the usable window is the smaller of the two.
        n_batch = int(lib.llama_n_batch(ctx))  # type: ignore[attr-defined]
        if n_seq == 1:
            self.n_ctx = min(int(lib.llama_n_ctx(ctx)), n_batch)  # type: ignore[attr-defined]
        else:
            self.n_ctx = min(int(lib.llama_n_ctx_seq(ctx)), n_batch // n_seq)  # type: ignore[attr-defined]
        self.n_ctx_total = self.n_ctx * n_seq
        cap = n_batch
        self._batch = lib.llama_batch_init(cap, 0, 1)  # type: ignore[attr-defined]
        batch = self._batch
        self._batch_cap = cap
        self._tok = np.ctypeslib.as_array(batch.token, shape=(cap,))  # type: ignore[attr-defined]
        self._pos = np.ctypeslib.as_array(batch.pos, shape=(cap,))  # type: ignore[attr-defined]
        self._nseq = np.ctypeslib.as_array(batch.n_seq_id, shape=(cap,))  # type: ignore[attr-defined]
        self._want = np.ctypeslib.as_array(
            ctypes.cast(batch.logits, ctypes.POINTER(ctypes.c_int8)),  # type: ignore[attr-defined]
            shape=(cap,),
        )
        self._nseq[:] = 1
        for i in range(cap):
            batch.seq_id[i][0] = 0  # type: ignore[attr-defined]
        self._row_seq = [0] * cap  # the sequence id written in each batch row
        self.sequences = [KVSequence(self, i, self.n_ctx) for i in range(n_seq)]

    def _free_context(self) -> None:
        lib = self._lib
        if getattr(self, "_batch", None) is not None:
            lib.llama_batch_free(self._batch)  # type: ignore[attr-defined]
            self._batch = None
        if getattr(self, "_ctx", None):
            lib.llama_free(self._ctx)  # type: ignore[attr-defined]
            self._ctx = None

    def kv_bytes(self, n_ctx: int) -> int:
        """The KV cache of ``n_ctx`` positions as llama.cpp allocates it here: keys and values in f16 in
        every layer, the sliding-window layers at full length (``swa_full``):

            2 bytes x layers x positions x KV heads x (key length + value length)

        The key and value lengths per head are the GGUF's ``<arch>.attention.key_length`` and
        ``value_length`` (gemma-3's 256 is not its width over its heads), else the width over the heads."""
        lib = self._lib
        n_embd = int(lib.llama_model_n_embd(self._model))  # type: ignore[attr-defined]
        n_head = max(1, int(lib.llama_model_n_head(self._model)))  # type: ignore[attr-defined]
        n_head_kv = int(lib.llama_model_n_head_kv(self._model))  # type: ignore[attr-defined]
        arch = self.info.architecture if getattr(self, "info", None) is not None else ""
        k_len, v_len = (
            _whole(self._meta(f"{arch}.attention.{name}_length")) or n_embd // n_head
            for name in ("key", "value")
        )
        return 2 * self.n_layers * n_ctx * n_head_kv * (k_len + v_len)

    def kv_cache_record(self) -> dict[str, int | str]:
        """run.json's ``environment.kv_cache``: what the context's KV cache holds per stream and in all."""
        per_stream = self.n_ctx
        return {
            "streams": self.n_seq,
            "positions_per_stream": per_stream,
            "bytes_per_stream": self.kv_bytes(per_stream),
            "bytes": self.kv_bytes(per_stream * self.n_seq),
            "type": "f16",
        }

    def configure(self, n_seq: int, n_ctx: int) -> None:
        """Replace the context by one of ``n_seq`` sequences of ``n_ctx`` positions each.

        Fails with a clear message, before anything is decoded, when the memory is not there.
        """
        if n_seq < 1:
            raise ValueError(f"n_seq={n_seq}")
        if n_seq == self.n_seq and n_ctx == self.n_ctx:
            return
        total = n_seq * n_ctx
        available = _memory_available()
        need = self.kv_bytes(total)
        if self.n_gpu_layers == 0 and available is not None and need > available:
            raise SimulError(
                f"{n_seq} sequences of {n_ctx} tokens need about {need / 2**30:.1f} GiB of KV cache, but "
                f"{available / 2**30:.1f} GiB of memory is available: lower --parallel or --n-ctx"
            )
        self._free_context()
        self._create_context(total, n_seq)
        self.info = dataclasses.replace(self.info, n_ctx=self.n_ctx)

    # -- lifetime -------------------------------------------------------------------------------------------

    def close(self) -> None:
        lib = self._lib
        self._free_context()
        if getattr(self, "_model", None):
            lib.llama_model_free(self._model)  # type: ignore[attr-defined]
            self._model = None

    def __enter__(self) -> LlamaBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown: nothing useful to report
            self.close()

    def describe_engine(self) -> dict[str, object]:
        """How this backend computes (recorded in run.json): exact or fast mode and the switches behind it."""
        return {
            "mode": "exact" if self.exact else "fast",
            "flash_attn": self.flash_attn,
            "repack": self.repack,
            "kv_unified": self.n_seq > 1,
            "exact_patch": self.exact_support.patch,
            "exact_available": self.exact_support.available,
            **({"exact_unavailable": self.exact_support.reason} if not self.exact_support.available else {}),
        }

    def describe_hardware(self) -> dict[str, object]:
        """What a run records about where it ran: the devices llama.cpp reports and the offloaded layers."""
        offloaded = self.n_layers if self.n_gpu_layers < 0 else min(self.n_gpu_layers, self.n_layers)
        out: dict[str, object] = {
            "gpu_offload_supported": self.gpu_offload,
            "n_gpu_layers": self.n_gpu_layers,
            "offloaded_layers": offloaded if self.gpu_offload else 0,
            "n_layers": self.n_layers,
            "devices": [d.to_json() for d in self.devices],
        }
        if self.devices_unknown:
            out["devices_unknown"] = self.devices_unknown
        return out

    # -- metadata -------------------------------------------------------------------------------------------

    def _meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(4096)
        n = self._lib.llama_model_meta_val_str(self._model, key.encode(), buf, len(buf))  # type: ignore[attr-defined]
        if n < 0:
            return None
        return buf.value.decode("utf-8", errors="replace")

    def _chat_template(self) -> str | None:
        raw = self._lib.llama_model_chat_template(self._model, None)  # type: ignore[attr-defined]
        return raw.decode("utf-8", errors="replace") if raw else None

    def _special_text(self, token: int) -> str:
        if token < 0:
            return ""
        return self.piece(token, special=True).decode("utf-8", errors="replace")

    # -- tokens ---------------------------------------------------------------------------------------------

    def tokenize(self, text: str, add_special: bool = False, parse_special: bool = False) -> list[int]:
        """Tokens of ``text``. Recent results are remembered: every method of an evaluation builds the same
        prompts for the same steps, so they are tokenized once."""
        key = (text, add_special, parse_special)
        cached = self._tokens.get(key)
        if cached is not None:
            self._tokens.move_to_end(key)
            return list(cached)
        tokens = self._tokenize(text, add_special, parse_special)
        self._tokens[key] = tuple(tokens)
        if len(self._tokens) > TOKENIZE_CACHE:
            self._tokens.popitem(last=False)
        return tokens

    def _tokenize(self, text: str, add_special: bool, parse_special: bool) -> list[int]:
        data = text.encode("utf-8")
        size = len(data) + 8
        buf = (ctypes.c_int32 * size)()
        n = self._lib.llama_tokenize(self._vocab, data, len(data), buf, size, add_special, parse_special)  # type: ignore[attr-defined]
        if n < 0:
            size = -n
            buf = (ctypes.c_int32 * size)()
            n = self._lib.llama_tokenize(self._vocab, data, len(data), buf, size, add_special, parse_special)  # type: ignore[attr-defined]
            if n < 0:
                raise SimulError(f"llama.cpp failed to tokenize a text of {len(data)} bytes")
        return list(buf[:n])

    def piece(self, token: int, special: bool = False) -> bytes:
        """The bytes a token stands for (cached; special tokens render as empty unless asked for)."""
        key = token if not special else -1 - token
        cached = self._pieces.get(key)
        if cached is not None:
            return cached
        buf = ctypes.create_string_buffer(64)
        n = self._lib.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, special)  # type: ignore[attr-defined]
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = self._lib.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, special)  # type: ignore[attr-defined]
        out = buf.raw[: max(n, 0)]
        self._pieces[key] = out
        return out

    def vocabulary_facts(self) -> VocabularyFacts:
        """The vocabulary's type, size and BOS/EOS handling (for the draft model check, vocabulary.py)."""
        lib, vocab = self._lib, self._vocab
        return VocabularyFacts(
            kind=int(lib.llama_vocab_type(vocab)),  # type: ignore[attr-defined]
            n_tokens=self.n_vocab,
            add_bos=bool(lib.llama_vocab_get_add_bos(vocab)),  # type: ignore[attr-defined]
            bos=int(lib.llama_vocab_bos(vocab)),  # type: ignore[attr-defined]
            add_eos=bool(lib.llama_vocab_get_add_eos(vocab)),  # type: ignore[attr-defined]
            eos=int(lib.llama_vocab_eos(vocab)),  # type: ignore[attr-defined]
        )

    def token_text(self, token: int) -> bytes:
        """The token's text as the vocabulary stores it (llama_vocab_get_text: SentencePiece's "▁" kept)."""
        text = self._lib.llama_vocab_get_text(self._vocab, token)  # type: ignore[attr-defined]
        return bytes(text or b"")

    def detokenize(self, tokens: Sequence[int]) -> bytes:
        return b"".join(self.piece(t) for t in tokens)

    def is_eog(self, token: int) -> bool:
        """End of generation: EOS, EOT (``<end_of_turn>``, ``<|im_end|>``) and the like."""
        cached = self._eog.get(token)
        if cached is None:
            cached = bool(self._lib.llama_vocab_is_eog(self._vocab, token))  # type: ignore[attr-defined]
            self._eog[token] = cached
        return cached

    # -- the KV cache (sequence 0; see KVSequence) ----------------------------------------------------------

    @property
    def cache(self) -> list[int]:
        return self.sequences[0].cache

    def sequence(self, index: int = 0) -> KVSequence:
        return self.sequences[index]

    def remove(self, seq_id: int, p0: int) -> bool:
        """Drop the positions >= ``p0`` of one sequence (llama_memory_seq_rm); False if it cannot."""
        return bool(self._lib.llama_memory_seq_rm(self._memory, seq_id, p0, -1))  # type: ignore[attr-defined]

    def truncate(self, n: int) -> bool:
        """Drop every cached position >= n of sequence 0, exactly (see KVSequence.truncate)."""
        return self.sequences[0].truncate(n)

    def start_from(self, prefix: Sequence[int]) -> None:
        """Bring sequence 0 to the canonical start state of a stream (see KVSequence.start_from)."""
        self.sequences[0].start_from(prefix)

    def reuse_prefix(self, tokens: Sequence[int], keep_last: bool = True) -> int:
        """Keep the longest common prefix of sequence 0 and ``tokens`` (see KVSequence.reuse_prefix)."""
        return self.sequences[0].reuse_prefix(tokens, keep_last)

    def warm_up(self) -> None:
        """Run a batch and a one-token pass once, so that the first measured update does not pay for paging
        in the weights and allocating buffers (which would fall on whichever method runs first)."""
        tokens = self.tokenize("Warm-up: the quick brown fox jumps over the lazy dog.", add_special=True)
        rows = self.eval(tokens[: max(2, min(len(tokens), 16))], logits_from=0)
        assert rows is not None
        self.eval([int(np.argmax(rows[-1]))], logits_from=0)
        self.reset()

    def set_threads(self, n: int) -> None:
        """Run the next forward passes on ``n`` threads (``n_threads`` keeps the configured number, to go back
        to). The thread count changes how a pass is shared out, not what it computes."""
        if n < 1:
            raise ValueError(f"threads must be at least 1, got {n}")
        self._lib.llama_set_n_threads(self._ctx, n, n)  # type: ignore[attr-defined]

    def reset(self) -> None:
        """Clear every sequence."""
        self._lib.llama_memory_clear(self._memory, True)  # type: ignore[attr-defined]
        for seq in self.sequences:
            seq.forget()

    def eval(self, tokens: Sequence[int], logits_from: int | None = None) -> Logits | None:
        """Append ``tokens`` to sequence 0 in one forward pass.

        Logits only for batch positions ``logits_from`` .. len(tokens) - 1 (for none: None).
        The returned array is a view of llama.cpp's buffer, valid until the next call: read it first.
        """
        return self.eval_many([(self.sequences[0], tokens, logits_from)])[0]

    def eval_many(
        self, requests: Sequence[tuple[KVSequence, Sequence[int], int | None]]
    ) -> list[Logits | None]:
        """One forward pass that appends each request's tokens to its sequence.

        Each request is (sequence, tokens, logits_from): logits only for its tokens ``logits_from`` ..
        len(tokens) - 1 (for none: None). The returned arrays are views of llama.cpp's buffer, valid until
        the next forward pass: read them first.
        """
        rows_of: list[tuple[int, int] | None] = []
        row = 0
        n_out = 0
        for seq, tokens, logits_from in requests:
            n = len(tokens)
            if n == 0:
                raise ValueError("eval of an empty batch")
            start = len(seq.cache)
            if start + n > seq.n_ctx:
                raise ContextOverflowError(
                    f"{start + n} tokens do not fit the context window of {seq.n_ctx}", needed=start + n
                )
            if row + n > self._batch_cap:
                raise ContextOverflowError(f"a batch of {row + n} tokens exceeds {self._batch_cap}")
            self._tok[row : row + n] = tokens
            self._pos[row : row + n] = np.arange(start, start + n, dtype=np.int32)
            self._want[row : row + n] = 0
            if self.n_seq > 1:
                self._set_seq_ids(row, n, seq.seq_id)
            if logits_from is None:
                rows_of.append(None)
            else:
                if not 0 <= logits_from < n:
                    raise ValueError(f"logits_from={logits_from} outside a batch of {n}")
                self._want[row + logits_from : row + n] = 1
                rows_of.append((n_out, n_out + n - logits_from))
                n_out += n - logits_from
            row += n
        self._batch.n_tokens = row  # type: ignore[attr-defined]
        # Exact mode's switch is process-wide and read inside the pass (by ggml's worker threads too), so a
        # pass of another backend of this process (simul bench's lanes, both loading at once) must neither
        # run beside this one nor flip the switch under it: passes hold a lock, and set the switch in it.
        with _DECODE_LOCK:
            apply_exact(self.exact if self.exact_parts is None else self.exact_parts)
            started = time.perf_counter()
            rc = self._lib.llama_decode(self._ctx, self._batch)  # type: ignore[attr-defined]
            if self.follower is not None and rc == 0:  # exact mode: the threads follow the load
                self.follower.after_pass(row, time.perf_counter() - started)
        if rc != 0:
            where = (
                f"at position {len(requests[0][0].cache)}" if len(requests) == 1 else "of several sequences"
            )
            # The cache may hold part of the batch now; forget it rather than guess.
            self.reset()
            raise SimulError(f"llama_decode failed with code {rc} on a batch of {row} tokens {where}")
        for seq, tokens, _ in requests:
            seq.cache.extend(tokens)
        hook = getattr(_hooks, "after_pass", None)
        if hook is not None:
            hook()
        if n_out == 0:
            return [None] * len(requests)
        ptr = self._lib.llama_get_logits(self._ctx)  # type: ignore[attr-defined]
        logits = np.ctypeslib.as_array(ptr, shape=(n_out, self.n_vocab))
        return [None if span is None else logits[span[0] : span[1]] for span in rows_of]

    def _set_seq_ids(self, row: int, n: int, seq_id: int) -> None:
        seq_ids = self._batch.seq_id  # type: ignore[attr-defined]
        written = self._row_seq
        for i in range(row, row + n):
            if written[i] != seq_id:
                seq_ids[i][0] = seq_id
                written[i] = seq_id


def engine_exact_support(n_gpu_layers: int | None, thread_choice: ThreadChoice | None) -> ExactSupport:
    """Whether a backend with these settings could run in exact mode, known before any model loads."""
    lib = _llama(thread_choice.taken_cores if thread_choice is not None else None)
    layers = resolve_gpu_layers(n_gpu_layers, lib)
    offload = bool(lib.llama_supports_gpu_offload())  # type: ignore[attr-defined]
    return exact_support(lib, layers if offload else 0)


def _memory_available() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (Linux), else None."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _whole(text: str | None) -> int | None:
    """A positive whole number from GGUF metadata text, else None."""
    try:
        value = int(text) if text is not None else 0
    except ValueError:
        return None
    return value if value > 0 else None

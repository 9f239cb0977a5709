"""A llama.cpp model behind the small interface the decoders need, over llama-cpp-python's low-level API.

The high-level ``llama_cpp.Llama`` keeps its own token history and asks for logits it does not need; here the
decoders decide exactly which positions get logits (a logit row over a 262k vocabulary is 1 MB), the KV cache
is truncated exactly with ``llama_memory_seq_rm``, and the tokens whose keys and values are in the cache are
tracked so that the longest common prefix with the next sequence is reused.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from simul.errors import SimulError

Logits = npt.NDArray[np.float32]

GGUF_MAGIC = b"GGUF"
TOKENIZE_CACHE = 4096  # texts remembered by LlamaBackend.tokenize
_init_lock = threading.Lock()
_backend_ready = False
# llama.cpp's log lines, kept (not printed) so that a failure can quote them.
LLAMA_LOG: deque[str] = deque(maxlen=400)
_log_callback: object = None


def _llama() -> object:
    """Import llama_cpp lazily (it loads a shared library) and quieten its logging once."""
    global _backend_ready
    global _log_callback
    try:
        import llama_cpp
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SimulError(
            f"llama-cpp-python is not importable ({exc}); run `make setup` or `pip install llama-cpp-python`"
        ) from None
    with _init_lock:
        if not _backend_ready:

            def keep(level: int, text: bytes, user_data: object) -> None:
                LLAMA_LOG.append(text.decode("utf-8", errors="replace"))

            _log_callback = llama_cpp.llama_log_callback(keep)
            llama_cpp.llama_log_set(_log_callback, ctypes.c_void_p(0))
            llama_cpp.llama_backend_init()
            _backend_ready = True
    return llama_cpp


def check_gguf(path: Path) -> None:
    """Fail with a clear message unless ``path`` is a readable GGUF file."""
    if not path.exists():
        raise SimulError(
            f"model file {path} does not exist; pass --model PATH.gguf or omit it for the default"
        )
    if not path.is_file():
        raise SimulError(f"model path {path} is not a file; pass --model PATH.gguf")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise SimulError(f"cannot read model file {path}: {exc.strerror}") from None
    if magic != GGUF_MAGIC:
        raise SimulError(
            f"{path} is not a GGUF model (it does not start with 'GGUF'); convert it with llama.cpp's "
            "convert_hf_to_gguf.py or pass a .gguf file"
        )


def default_threads() -> int:
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        available = os.cpu_count() or 1
    return max(1, min(available, 8))


class ContextOverflowError(SimulError):
    """A sequence does not fit in the context window."""


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


class LlamaBackend:
    """One llama.cpp model and context, sequence 0 only, with the cache contents tracked as tokens."""

    def __init__(self, model_path: Path, n_ctx: int = 2048, n_threads: int | None = None) -> None:
        check_gguf(model_path)
        lib = _llama()
        self._lib = lib
        self.model_path = model_path
        self.n_threads = n_threads or default_threads()
        mparams = lib.llama_model_default_params()  # type: ignore[attr-defined]
        mparams.n_gpu_layers = 0
        model = lib.llama_model_load_from_file(str(model_path).encode("utf-8"), mparams)  # type: ignore[attr-defined]
        if not model:
            reason = next((line.strip() for line in reversed(LLAMA_LOG) if "error" in line.lower()), "")
            raise SimulError(
                f"llama.cpp could not load {model_path}: the file is damaged, truncated, or of an "
                "architecture this llama-cpp-python does not support" + (f" ({reason})" if reason else "")
            )
        self._model = model
        self._vocab = lib.llama_model_get_vocab(model)  # type: ignore[attr-defined]
        self.n_vocab = int(lib.llama_vocab_n_tokens(self._vocab))  # type: ignore[attr-defined]
        n_ctx_train = int(lib.llama_model_n_ctx_train(model))  # type: ignore[attr-defined]
        if n_ctx_train > 0 and n_ctx > n_ctx_train:
            n_ctx = n_ctx_train
        cparams = lib.llama_context_default_params()  # type: ignore[attr-defined]
        cparams.n_ctx = n_ctx
        cparams.n_batch = n_ctx  # any evaluation fits one llama_decode call
        cparams.n_ubatch = min(512, n_ctx)
        cparams.n_seq_max = 1
        cparams.n_threads = self.n_threads
        cparams.n_threads_batch = self.n_threads
        cparams.no_perf = True
        # Keep the whole sliding-window cache so that truncating to any position stays exact (gemma-3).
        cparams.swa_full = True
        ctx = lib.llama_init_from_model(model, cparams)  # type: ignore[attr-defined]
        if not ctx:
            lib.llama_model_free(model)  # type: ignore[attr-defined]
            raise SimulError(f"llama.cpp could not create a context of {n_ctx} tokens for {model_path}")
        self._ctx = ctx
        self._memory = lib.llama_get_memory(ctx)  # type: ignore[attr-defined]
        # llama.cpp may round the context up (to a multiple of 256) but keeps n_batch as asked: one
        # llama_decode call must fit n_batch, so the usable window is the smaller of the two.
        self.n_ctx = min(
            int(lib.llama_n_ctx(ctx)),  # type: ignore[attr-defined]
            int(lib.llama_n_batch(ctx)),  # type: ignore[attr-defined]
        )
        self._batch = lib.llama_batch_init(self.n_ctx, 0, 1)  # type: ignore[attr-defined]
        cap = self.n_ctx
        self._tok = np.ctypeslib.as_array(self._batch.token, shape=(cap,))
        self._pos = np.ctypeslib.as_array(self._batch.pos, shape=(cap,))
        self._nseq = np.ctypeslib.as_array(self._batch.n_seq_id, shape=(cap,))
        self._want = np.ctypeslib.as_array(
            ctypes.cast(self._batch.logits, ctypes.POINTER(ctypes.c_int8)), shape=(cap,)
        )
        self._nseq[:] = 1
        for i in range(cap):
            self._batch.seq_id[i][0] = 0
        self.cache: list[int] = []
        # The canonical start state (see start_from): the prefix last evaluated there, and how many leading
        # cache positions still hold it exactly as that evaluation left them.
        self._canonical: list[int] = []
        self._canonical_len = 0
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
        )

    # -- lifetime -------------------------------------------------------------------------------------------

    def close(self) -> None:
        lib = self._lib
        if getattr(self, "_batch", None) is not None:
            lib.llama_batch_free(self._batch)  # type: ignore[attr-defined]
            self._batch = None
        if getattr(self, "_ctx", None):
            lib.llama_free(self._ctx)  # type: ignore[attr-defined]
            self._ctx = None
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

    def detokenize(self, tokens: Sequence[int]) -> bytes:
        return b"".join(self.piece(t) for t in tokens)

    def is_eog(self, token: int) -> bool:
        """End of generation: EOS, EOT (``<end_of_turn>``, ``<|im_end|>``) and the like."""
        cached = self._eog.get(token)
        if cached is None:
            cached = bool(self._lib.llama_vocab_is_eog(self._vocab, token))  # type: ignore[attr-defined]
            self._eog[token] = cached
        return cached

    # -- the KV cache ---------------------------------------------------------------------------------------

    def truncate(self, n: int) -> bool:
        """Drop every cached position >= n, exactly.

        Returns False when the model's memory cannot drop part of a sequence (recurrent architectures); the
        cache is then cleared and the caller must evaluate again from position 0.
        """
        if n >= len(self.cache):
            return True
        ok = self._lib.llama_memory_seq_rm(self._memory, 0, n, -1)  # type: ignore[attr-defined]
        if not ok:
            self.reset()
            return False
        del self.cache[n:]
        self._canonical_len = min(self._canonical_len, n)
        return True

    def start_from(self, prefix: Sequence[int]) -> None:
        """Bring the cache to the canonical start state of a stream: exactly ``prefix``, evaluated on its own
        in one forward pass from an empty cache.

        llama.cpp's keys and values (and so the logits after them) differ in the last bits with the shape of
        the batch that computed them, so a prompt prefix kept from another stream's evaluation is not the
        same state as the prefix evaluated afresh, and greedy choices at near-ties flip. Starting every
        stream from this one state makes its outputs a function of the stream alone: whatever ran before,
        the prefix is either the very evaluation kept (truncated back to it, which is exact) or the same
        evaluation made again.
        """
        prefix = list(prefix)
        n = len(prefix)
        if self._canonical == prefix and self._canonical_len == n and self.truncate(n):
            return
        self.reset()
        if prefix:
            self.eval(prefix, logits_from=None)
        self._canonical = prefix
        self._canonical_len = n

    def reuse_prefix(self, tokens: Sequence[int], keep_last: bool = True) -> int:
        """Keep the longest common prefix of the cache and ``tokens``; returns how many positions were kept.

        With ``keep_last`` at least the last token of ``tokens`` is left to evaluate, so that its logits
        can be asked for.
        """
        limit = min(len(self.cache), len(tokens) - (1 if keep_last else 0))
        n = 0
        cache = self.cache
        while n < limit and cache[n] == tokens[n]:
            n += 1
        self.truncate(n)
        return len(self.cache)

    def warm_up(self) -> None:
        """Run a batch and a one-token pass once, so that the first measured update does not pay for paging
        in the weights and allocating buffers (which would fall on whichever method runs first)."""
        tokens = self.tokenize("Warm-up: the quick brown fox jumps over the lazy dog.", add_special=True)
        rows = self.eval(tokens[: max(2, min(len(tokens), 16))], logits_from=0)
        assert rows is not None
        self.eval([int(np.argmax(rows[-1]))], logits_from=0)
        self.reset()

    def reset(self) -> None:
        self._lib.llama_memory_clear(self._memory, True)  # type: ignore[attr-defined]
        self.cache.clear()
        self._canonical_len = 0

    def eval(self, tokens: Sequence[int], logits_from: int | None = None) -> Logits | None:
        """Append ``tokens`` to the cache in one forward pass.

        Logits only for batch positions ``logits_from`` .. len(tokens) - 1 (for none: None).
        The returned array is a view of llama.cpp's buffer, valid until the next call: read it first.
        """
        n = len(tokens)
        if n == 0:
            raise ValueError("eval of an empty batch")
        start = len(self.cache)
        if start + n > self.n_ctx:
            raise ContextOverflowError(
                f"{start + n} tokens do not fit the context window of {self.n_ctx}; pass a larger --n-ctx"
            )
        self._tok[:n] = tokens
        self._pos[:n] = np.arange(start, start + n, dtype=np.int32)
        self._want[:n] = 0
        n_out = 0
        if logits_from is not None:
            if not 0 <= logits_from < n:
                raise ValueError(f"logits_from={logits_from} outside a batch of {n}")
            self._want[logits_from:n] = 1
            n_out = n - logits_from
        self._batch.n_tokens = n
        rc = self._lib.llama_decode(self._ctx, self._batch)  # type: ignore[attr-defined]
        if rc != 0:
            # The cache may hold part of the batch now; forget it rather than guess.
            self.reset()
            raise SimulError(
                f"llama_decode failed with code {rc} on a batch of {n} tokens at position {start}"
            )
        self.cache.extend(tokens)
        if n_out == 0:
            return None
        ptr = self._lib.llama_get_logits(self._ctx)  # type: ignore[attr-defined]
        return np.ctypeslib.as_array(ptr, shape=(n_out, self.n_vocab))

"""Whisper through faster-whisper (CTranslate2): one call turns 16 kHz audio into one transcript.

faster-whisper is the optional ``asr`` extra; it is imported when a recognizer is built, never when simul
is imported. Decoding defaults (:class:`RecognizerOptions`), chosen for streaming re-recognition:

* language fixed (``en``): no language detection pass, no switching language between partials;
* greedy decoding (beam size 1) at temperature 0, without the temperature fallback: the same audio gives the
  same text, and each step costs one decoder pass;
* ``condition_on_previous_text`` off and no timestamps: every call stands alone and prints only text;
* CTranslate2 ``int8`` weights on the CPU (faster than float32, with no consistent loss of accuracy on
  our test audio; figures in docs/asr.md).

Two ways to feed the encoder (``window``):

* ``trimmed`` (default): the log-Mel features of the audio heard so far plus :data:`TAIL_MS` of silence,
  not padded to Whisper's 30 s window, so the encoder works on a few seconds instead of 30. Whisper was
  trained on padded windows: without the silent tail it does not see where the audio stops and repeats
  itself; with it, and with the output capped at :data:`TOKENS_PER_SECOND` tokens per second of audio
  (plus :data:`EXTRA_TOKENS`), it stops where the speech stops. Audio longer than 30 s minus the tail goes
  through the padded path.
* ``padded``: faster-whisper's standard ``transcribe`` (30 s windows, sliding over longer audio); about
  twice the compute of ``trimmed`` on short segments.

Whisper invents words when it hears silence ("Thank you."), so a gate runs first (``vad``): ``silero`` (the
Silero VAD model that ships inside faster-whisper, through onnxruntime), ``energy`` (the frame-level energy
gate of :mod:`simul.streams.asr.audio`), or ``none``. Audio with less than :data:`MIN_SPEECH_MS` of speech
gives an empty transcript without running Whisper; otherwise Whisper hears the audio from just before the
first speech to just after the last (:data:`GATE_PAD_MS`), so leading and trailing silence cannot turn into
words.

A transcript is a function of the audio, the model, these options and the library versions, not of the
machine's thread counts: Whisper's log-Mel product is summed in float64 (:class:`Float64Mel`) on one BLAS
thread (:func:`one_blas_thread`); CTranslate2's ``cpu_threads`` gave the same words and times on 1, 2 and
4 threads, and faster-whisper runs the Silero VAD (onnxruntime) on one thread itself. So ``threads`` is a
run condition, reported in the summary, not part of a stream's provenance. What can still differ between
machines is CTranslate2's kernels, which it picks by the CPU's instruction set: the provenance records
``cpu_isa`` and the library versions.

CTranslate2 also picks its matrix-product library by the CPU's *vendor*: Intel MKL on a GenuineIntel CPU,
oneDNN elsewhere (x86 wheels carry both). The two sum in other orders, and on a 2-core Intel Xeon the shipped
ACL 60/60 sample three times over lost a whole sentence-pair with MKL that oneDNN (and every AMD CPU) kept.
So simul asks for oneDNN everywhere (:func:`pin_matrix_library`: ``CT2_USE_MKL=0`` unless the user set it),
and records which one ran as ``ctranslate2_mkl``.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

from simul.common.cpu import cpu_isa, is_x86_64, read_cpuinfo
from simul.common.errors import SimulError, UsageError
from simul.streams.asr.agreement import TimedWord
from simul.streams.asr.audio import FRAME_MS, SAMPLE_RATE, Samples, speech_mask
from simul.streams.asr.online import Recognition
from simul.streams.partials import normalize_word

AsrWindow = Literal["trimmed", "padded"]
WINDOWS: tuple[AsrWindow, ...] = get_args(AsrWindow)
Vad = Literal["silero", "energy", "none"]
VADS: tuple[Vad, ...] = get_args(Vad)
ComputeType = Literal["int8", "int8_float32", "float32", "float16", "int16", "default"]
COMPUTE_TYPES: tuple[ComputeType, ...] = get_args(ComputeType)
TAIL_MS = 3000.0
TOKENS_PER_SECOND = 6.0
EXTRA_TOKENS = 6
MIN_SPEECH_MS = 100.0
GATE_PAD_MS = 200.0
WHISPER_WINDOW_MS = 30_000.0
INSTALL_MESSAGE = (
    "speech recognition needs faster-whisper, which is not installed: install the asr extra with "
    "`pip install 'simul[asr]'` (or `make setup`)"
)


@dataclass(frozen=True)
class RecognizerOptions:
    """How Whisper is run; every field is recorded in the streams' provenance."""

    language: str = "en"
    beam_size: int = 1
    compute_type: str = "int8"
    threads: int = 0  # 0: min(4, cpu count)
    window: str = "trimmed"
    vad: str = "silero"

    def check(self) -> None:
        if self.window not in WINDOWS:
            raise UsageError(f"unknown --asr-window {self.window!r}: use one of {', '.join(WINDOWS)}")
        if self.vad not in VADS:
            raise UsageError(f"unknown --vad {self.vad!r}: use one of {', '.join(VADS)}")
        if self.compute_type not in COMPUTE_TYPES:
            raise UsageError(
                f"unknown --asr-compute-type {self.compute_type!r}: use one of {', '.join(COMPUTE_TYPES)}"
            )
        if self.beam_size < 1:
            raise UsageError(f"--asr-beam-size must be at least 1, got {self.beam_size}")
        if self.threads < 0:
            raise UsageError(f"--asr-threads must be 0 (automatic) or more, got {self.threads}")

    @property
    def cpu_threads(self) -> int:
        return self.threads or min(4, os.cpu_count() or 1)


# The token cap of a long-form update: this many tokens per second of buffer, plus EXTRA_UPDATE_TOKENS. Read
# speech takes about 4 Whisper tokens a second with its timestamps (espeak-ng at 175 words a minute; fast
# speakers 200), so 10 leaves room for more than twice that and stops a loop within a second's worth of it.
UPDATE_TOKENS_PER_SECOND = 10.0
EXTRA_UPDATE_TOKENS = 10
# Whisper's decoder holds 448 tokens, of which faster-whisper gives the prompt up to 223: the rest is ours.
MAX_UPDATE_TOKENS = 220


@dataclass(frozen=True)
class DecodingBounds:
    """How one long-form update's decoding is bounded at the source (faster-whisper's own options).

    ``tokens_per_s``: ``max_new_tokens`` = tokens_per_s x the buffer's seconds + EXTRA_UPDATE_TOKENS (at
    most MAX_UPDATE_TOKENS; 0: no cap), so that Whisper looping on a phrase stops there instead of filling
    its 448 tokens; ``no_repeat_ngram_size`` and ``repetition_penalty`` are passed through (0 and 1.0: off);
    ``compression_ratio``: a Whisper segment whose text compresses better than this (gzip ratio, as
    Whisper's own fallback rule measures repetition) is dropped as a loop, and counted (None: kept). Whisper's
    temperature fallback is not used: it decodes again, which costs more time, not less.

    ``seek_again``: False (default): one encoder and one decoder pass per update (:func:`one_window`);
    True: faster-whisper's own seek, which decodes the buffer again from its last timestamp when the first
    decoding ends without closing its segment (two passes; what every update did before :func:`one_window`).
    """

    tokens_per_s: float = UPDATE_TOKENS_PER_SECOND
    no_repeat_ngram_size: int = 0
    repetition_penalty: float = 1.0
    compression_ratio: float | None = None
    seek_again: bool = False

    def check(self) -> None:
        if self.tokens_per_s < 0:
            raise UsageError(f"--asr-tokens-per-s must be 0 (no cap) or more, got {self.tokens_per_s:g}")
        if self.no_repeat_ngram_size < 0:
            raise UsageError(
                f"--asr-no-repeat-ngram must be 0 (off) or more, got {self.no_repeat_ngram_size}"
            )
        if self.repetition_penalty <= 0:
            raise UsageError(f"--asr-repetition-penalty must be positive, got {self.repetition_penalty:g}")
        if self.compression_ratio is not None and self.compression_ratio <= 1:
            raise UsageError(f"--asr-compression-ratio must be above 1, got {self.compression_ratio:g}")

    def max_new_tokens(self, buffer_ms: float) -> int | None:
        """The token cap of an update on a buffer of ``buffer_ms`` (None: no cap)."""
        if self.tokens_per_s == 0:
            return None
        return min(MAX_UPDATE_TOKENS, int(self.tokens_per_s * buffer_ms / 1000.0) + EXTRA_UPDATE_TOKENS)

    def to_json(self) -> dict[str, Any]:
        return {
            "max_new_tokens": (
                f"{self.tokens_per_s:g}/s of buffer + {EXTRA_UPDATE_TOKENS}, at most {MAX_UPDATE_TOKENS}"
                if self.tokens_per_s
                else None
            ),
            "no_repeat_ngram_size": self.no_repeat_ngram_size,
            "repetition_penalty": self.repetition_penalty,
            "compression_ratio_drop": self.compression_ratio,
            "windows": "faster-whisper's seek (again from the last timestamp)" if self.seek_again else "one",
        }


Split = Callable[..., tuple[list[dict[str, Any]], int, bool]]


def one_window(split: Split) -> Split:
    """faster-whisper's ``_split_segments_by_timestamps``, changed so that a window is decoded once.

    faster-whisper 1.x (``WhisperModel.generate_segments``) splits a window's tokens at its timestamp pairs;
    when the output does not end on a closing timestamp (the speech runs on past the last segment, or the
    token cap stopped it), it drops the unfinished tail and seeks to the last timestamp (with word timestamps,
    to the last word's end), so that the rest of the buffer is encoded and decoded a second time. On a
    long-form buffer that doubled an update's cost (2.7 s against a median of 0.56 s on the recording of
    docs/asr.md's worked example). This split keeps faster-whisper's segments of the window as they are and
    moves the seek to the window's end: the audio after the last closed segment waits for the next update, a
    chunk later (whisper_streaming's loop re-recognizes the whole buffer every chunk anyway). Keeping the
    unfinished tail's words instead let loops in: a loop cut off by the token cap is such a tail,
    LocalAgreement commits its repeats, and the next update, prompted with them, repeats them (committed WER
    31.6 % against 18.5 % on the same recording). Buffers are at most 29 s
    (:data:`simul.streams.asr.online.MAX_LIMIT_MS`): one window holds all of them.
    """

    def split_once(
        tokenizer: Any,
        tokens: list[int],
        time_offset: float,
        segment_size: int,
        segment_duration: float,
        seek: int,
    ) -> tuple[list[dict[str, Any]], int, bool]:
        segments, _, _ = split(
            tokenizer=tokenizer,
            tokens=tokens,
            time_offset=time_offset,
            segment_size=segment_size,
            segment_duration=segment_duration,
            seek=seek,
        )
        return segments, seek + segment_size, True

    return split_once


@contextmanager
def decoded_once(model: Any) -> Iterator[None]:
    """While open, ``model`` (a faster-whisper ``WhisperModel``) decodes each 30 s window once
    (:func:`one_window`); the model's own split is back afterwards."""
    try:
        split = model._split_segments_by_timestamps
    except AttributeError:
        raise SimulError(
            "this faster-whisper has no WhisperModel._split_segments_by_timestamps (1.2.1 has it); "
            "pass --asr-seek-again to let it decode the buffer its own way"
        ) from None
    own = vars(model).get("_split_segments_by_timestamps")  # a stand-in's; a WhisperModel's is its class's
    model._split_segments_by_timestamps = one_window(split)
    try:
        yield
    finally:
        if own is None:
            del model._split_segments_by_timestamps
        else:
            model._split_segments_by_timestamps = own


def collapse_loops(text: str, times: int = 3, longest: int = 8) -> str:
    """Cut a phrase of up to ``longest`` words that repeats ``times`` or more times in a row down to one.

    Whisper hearing very little audio can loop ("Hello. Hello. Hello."); the same phrase said three times
    running is rare in real speech. Words are compared without case and punctuation; the last occurrence
    is kept (it carries the closing punctuation).
    """
    words = text.split()
    return " ".join(words[i] for i in _loop_free_indices([normalize_word(w) for w in words], times, longest))


def _loop_free_indices(keys: Sequence[str], times: int, longest: int) -> list[int]:
    """The positions :func:`collapse_loops` keeps, for words compared as ``keys`` ("" never repeats)."""
    out: list[int] = []
    index = 0
    while index < len(keys):
        step = 0
        for size in range(1, min(longest, len(keys) - index) + 1):
            phrase = list(keys[index : index + size])
            if not all(phrase):
                continue
            repeats = 1
            while list(keys[index + repeats * size : index + (repeats + 1) * size]) == phrase:
                repeats += 1
            if repeats >= times:
                out.extend(range(index + (repeats - 1) * size, index + repeats * size))
                step = repeats * size
                break
        if step == 0:
            out.append(index)
            step = 1
        index += step
    return out


MKL_ENV = "CT2_USE_MKL"
_mkl_in_effect: bool | None = None


def pin_matrix_library() -> bool:
    """Ask CTranslate2 for oneDNN instead of MKL (``CT2_USE_MKL=0``) unless the user chose, and return
    whether MKL is in effect in this process.

    CTranslate2 reads ``CT2_USE_MKL`` once, when it is imported, and without it uses MKL on Intel CPUs only
    (its ``cpu_is_intel`` default), so the same recording gave other words on an Intel and an AMD CPU. The
    variable is set before the first import; if CTranslate2 was imported before simul could set it, the
    answer follows CTranslate2's own rule from the environment it saw then. CTranslate2 4.x takes only
    ``1`` and ``true`` (any case) as true: ``on`` or ``yes`` leave MKL off (seen in its CT2_VERBOSE banner).
    """
    global _mkl_in_effect
    if _mkl_in_effect is None:
        if "ctranslate2" not in sys.modules:
            os.environ.setdefault(MKL_ENV, "0")
        value = os.environ.get(MKL_ENV)
        if value is None:
            _mkl_in_effect = is_x86_64() and "GenuineIntel" in (read_cpuinfo() or "")
        else:
            _mkl_in_effect = value.strip().lower() in ("1", "true") and is_x86_64()
    return _mkl_in_effect


pin_matrix_library()  # before anything imports CTranslate2 (faster-whisper imports it)


def has_faster_whisper() -> bool:
    try:
        import faster_whisper  # noqa: F401
    except ImportError:
        return False
    return True


def recognizer_versions() -> dict[str, str | None]:
    """The versions of the libraries a transcript depends on (None: not installed)."""
    out: dict[str, str | None] = {}
    for name in ("faster-whisper", "ctranslate2", "onnxruntime", "numpy"):
        try:
            out[name.replace("-", "_")] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name.replace("-", "_")] = None
    return out


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """numpy's BLAS on one thread for the block.

    faster-whisper's log-Mel spectrogram is a float32 matrix product (the 80 mel filters by the STFT
    magnitudes), and OpenBLAS sums it in another order on another thread count: on the shipped ACL 60/60
    recording, one BLAS thread against two changed the words of an update, and so the stream. The product is
    small (80 x 201 by 201 x frames), so one thread costs nothing measurable. The BLAS libraries are looked
    up once (:func:`_blas_controller`): a lookup takes milliseconds, a limit microseconds.
    """
    with _blas_controller().limit(limits=1, user_api="blas"):
        yield


class Float64Mel:
    """faster-whisper's feature extractor with its mel product summed in float64, then rounded to float32.

    The log-Mel spectrogram is ``mel_filters @ |STFT|^2`` in float32 (faster-whisper's
    ``FeatureExtractor.__call__``). A float32 sum of 201 terms changes in its last bits with the order
    OpenBLAS adds them in, which depends on the thread count and on the CPU's kernels, and near-ties in
    Whisper's greedy decoding turn such bits into other words. Summed in float64 (the same float32 filters,
    widened) and rounded to float32 once, the features are the same on any thread count and, but for a
    float64 sum that falls on a float32 rounding boundary, on any CPU. The product is small (80 x 201 by 201
    x frames: some 15 ms for 30 s of audio).
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._filters64 = np.asarray(inner.mel_filters, dtype=np.float64)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        inner = self._inner
        filters = inner.mel_filters
        inner.mel_filters = self._filters64
        try:
            return np.asarray(inner(*args, **kwargs), dtype=np.float32)
        finally:
            inner.mel_filters = filters

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@functools.cache
def _blas_controller() -> Any:
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        raise SimulError(INSTALL_MESSAGE) from None
    return ThreadpoolController()


class WhisperRecognizer:
    """A loaded Whisper model; :meth:`recognize` is one stand-alone transcription of a whole buffer."""

    bounds: DecodingBounds = DecodingBounds()  # of :meth:`words` (long-form updates); set after loading

    def __init__(self, model_dir: Path, options: RecognizerOptions | None = None) -> None:
        self.options = options or RecognizerOptions()
        self.options.check()
        try:
            from faster_whisper import WhisperModel
            from faster_whisper.tokenizer import Tokenizer
        except ImportError:
            raise SimulError(INSTALL_MESSAGE) from None
        self.model_dir = model_dir
        started = time.perf_counter()
        try:
            self._model: Any = WhisperModel(
                str(model_dir),
                device="cpu",
                compute_type=self.options.compute_type,
                cpu_threads=self.options.cpu_threads,
                local_files_only=True,
            )
        except (RuntimeError, ValueError, OSError) as exc:
            raise SimulError(
                f"cannot load the Whisper model in {model_dir} ({' '.join(str(exc).split())}); pass a "
                "faster-whisper (CTranslate2) model folder with --asr-model"
            ) from None
        self._model.feature_extractor = Float64Mel(self._model.feature_extractor)
        if self.options.language not in self._model.supported_languages:
            raise UsageError(
                f"the model in {model_dir} does not know language {self.options.language!r}; use one of "
                f"{', '.join(self._model.supported_languages[:20])}, ..."
            )
        tokenizer = Tokenizer(
            self._model.hf_tokenizer,
            self._model.model.is_multilingual,
            task="transcribe",
            language=self.options.language,
        )
        self._tokenizer: Any = tokenizer
        self._prompt: list[int] = [*tokenizer.sot_sequence, tokenizer.no_timestamps]
        self._warm_up()
        self.load_seconds = time.perf_counter() - started

    def _warm_up(self) -> None:
        """One short decoding at load time, so the first measured step does not pay for paging in weights."""
        rng = np.random.default_rng(0)
        noise = (0.01 * rng.standard_normal(SAMPLE_RATE)).astype(np.float32)
        with one_blas_thread():
            if self.options.window == "padded":
                self._padded(noise)
            else:
                self._trimmed(noise, 1000.0)

    def describe(self) -> dict[str, Any]:
        """What produced a transcript (for provenance)."""
        settings = asdict(self.options)
        del settings["threads"]  # a run condition: the transcript is the same on any thread count
        return {
            "recognizer": "faster-whisper",
            "model": self.model_dir.name,
            **settings,
            "versions": recognizer_versions(),
            "cpu_isa": cpu_isa(),
            "ctranslate2_mkl": pin_matrix_library(),
            "temperature": 0.0,
            "condition_on_previous_text": False,
            "timestamps": False,
        }

    # --- gate -------------------------------------------------------------------------------------

    def speech_span(self, samples: Samples) -> tuple[int, int] | None:
        """First and last speech sample (padded by GATE_PAD_MS), or None with too little speech."""
        if self.options.vad == "none":
            return (0, len(samples)) if len(samples) else None
        pad = round(GATE_PAD_MS * SAMPLE_RATE / 1000.0)
        if self.options.vad == "energy":
            mask = speech_mask(samples)
            voiced = np.flatnonzero(mask)
            if len(voiced) * FRAME_MS < MIN_SPEECH_MS:
                return None
            frame = round(FRAME_MS * SAMPLE_RATE / 1000.0)
            first, last = int(voiced[0]) * frame, (int(voiced[-1]) + 1) * frame
        else:
            from faster_whisper.vad import VadOptions, get_speech_timestamps

            chunks = get_speech_timestamps(
                samples,
                VadOptions(min_speech_duration_ms=int(MIN_SPEECH_MS), speech_pad_ms=0),
            )
            if not chunks:
                return None
            first, last = int(chunks[0]["start"]), int(chunks[-1]["end"])
        return max(0, first - pad), min(len(samples), last + pad)

    # --- recognition ------------------------------------------------------------------------------

    def recognize(self, samples: Samples) -> str:
        """The transcript of the whole buffer (16 kHz mono), or "" when it holds no speech."""
        with one_blas_thread():
            return self._recognize(samples)

    def _recognize(self, samples: Samples) -> str:
        span = self.speech_span(samples)
        if span is None:
            return ""
        audio = np.ascontiguousarray(samples[span[0] : span[1]], dtype=np.float32)
        duration_ms = 1000.0 * len(audio) / SAMPLE_RATE
        if self.options.window == "padded" or duration_ms + TAIL_MS > WHISPER_WINDOW_MS:
            return self._padded(audio)
        return self._trimmed(audio, duration_ms)

    def _padded(self, audio: Samples) -> str:
        segments, _ = self._model.transcribe(
            audio,
            language=self.options.language,
            beam_size=self.options.beam_size,
            temperature=0.0,
            condition_on_previous_text=False,
            without_timestamps=True,
            vad_filter=False,
        )
        return collapse_loops(" ".join(" ".join(segment.text.split()) for segment in segments))

    def _trimmed(self, audio: Samples, duration_ms: float) -> str:
        import ctranslate2

        tail = np.zeros(round(TAIL_MS * SAMPLE_RATE / 1000.0), dtype=np.float32)
        features = self._model.feature_extractor(np.concatenate([audio, tail]), padding=0)
        frames = features.shape[-1] - features.shape[-1] % 2  # the encoder halves the frame count
        batch = np.ascontiguousarray(features[None, :, :frames], dtype=np.float32)
        encoded = self._model.model.encode(ctranslate2.StorageView.from_array(batch))
        cap = int(TOKENS_PER_SECOND * duration_ms / 1000.0) + EXTRA_TOKENS
        result = self._model.model.generate(
            encoded,
            [self._prompt],
            beam_size=self.options.beam_size,
            max_length=len(self._prompt) + cap,
            suppress_blank=True,
            suppress_tokens=[-1],
        )[0]
        text: str = self._tokenizer.decode(result.sequences_ids[0])
        return collapse_loops(text)

    # --- long-form: word timestamps and a prompt ----------------------------------------------------

    def words(self, samples: Samples, prompt: str) -> Recognition:
        """The buffer's words with their times (ms from the buffer start) and Whisper's segment ends.

        faster-whisper's standard ``transcribe`` (30 s window) with word timestamps and the committed text
        as ``initial_prompt``, as whisper_streaming calls it; greedy at temperature 0 as everywhere in
        simul, and, with ``vad="silero"``, faster-whisper's own Silero filter on the buffer. The gate runs
        first: a buffer without speech gives no words and Whisper does not run. Words without a letter or
        digit are dropped (Whisper looping on silence prints ". . . ." as hundreds of words: seen once in
        5 minutes of ACL 60/60 speech), and a phrase repeated three or more times in a row is cut to its
        last occurrence (:func:`collapse_loops`). The decoding is bounded by :attr:`bounds`
        (:class:`DecodingBounds`): a token cap in proportion to the buffer's length, and optionally
        faster-whisper's n-gram and repetition penalties and a compression-ratio drop; and each buffer is
        encoded and decoded once (:func:`one_window`: the audio after the last closed segment waits for the
        next update).
        """
        with one_blas_thread():
            if self.speech_span(samples) is None:
                return Recognition((), (), heard=False)
            if self.bounds.seek_again:
                return self._words(samples, prompt)
            with decoded_once(self._model):
                return self._words(samples, prompt)

    def _words(self, samples: Samples, prompt: str) -> Recognition:
        cap = self.bounds.max_new_tokens(1000.0 * len(samples) / SAMPLE_RATE)
        segments, _ = self._model.transcribe(
            np.ascontiguousarray(samples, dtype=np.float32),
            language=self.options.language,
            beam_size=self.options.beam_size,
            temperature=0.0,
            condition_on_previous_text=True,
            initial_prompt=prompt or None,
            word_timestamps=True,
            vad_filter=self.options.vad == "silero",
            max_new_tokens=cap,
            no_repeat_ngram_size=self.bounds.no_repeat_ngram_size,
            repetition_penalty=self.bounds.repetition_penalty,
            compression_ratio_threshold=None,
        )
        words: list[TimedWord] = []
        ends: list[float] = []
        tokens = dropped = 0
        for segment in segments:
            tokens += len(getattr(segment, "tokens", ()) or ())
            ratio = getattr(segment, "compression_ratio", None)
            limit = self.bounds.compression_ratio
            if limit is not None and ratio is not None and float(ratio) > limit:
                dropped += 1
                continue
            ends.append(1000.0 * float(segment.end))
            for word in segment.words or ():
                start, end = 1000.0 * float(word.start), 1000.0 * float(word.end)
                words.extend(TimedWord(start, end, piece) for piece in str(word.word).split())
        kept = loop_free([w for w in words if normalize_word(w.text)])
        capped = cap is not None and tokens >= cap - 1  # a segment's tokens include its timestamps
        return Recognition(tuple(kept), tuple(ends), capped=capped, loops_dropped=dropped)


def loop_free(words: Sequence[TimedWord], times: int = 3, longest: int = 8) -> list[TimedWord]:
    """:func:`collapse_loops` on timed words: a phrase said ``times`` or more times in a row kept once."""
    keep = _loop_free_indices([normalize_word(w.text) for w in words], times, longest)
    return [words[i] for i in keep]


def load_recognizer(model: Path | None, options: RecognizerOptions) -> WhisperRecognizer:
    """The recognizer for ``--asr-model DIR``, or Whisper base assembled from its PyPI packages."""
    options.check()
    if not has_faster_whisper():
        raise SimulError(INSTALL_MESSAGE)
    from simul.streams.asr.model import check_model_dir, model_dir

    folder = check_model_dir(model) if model is not None else model_dir()
    return WhisperRecognizer(folder, options)

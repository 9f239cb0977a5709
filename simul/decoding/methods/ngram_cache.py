"""N-gram cache drafts (docs/methods.md, "The n-gram drafters"), in the manner of llama.cpp's ``ngram-cache``
(common/ngram-cache.cpp: ``common_ngram_cache_update`` and ``common_ngram_cache_draft``): the method
``ngram-cache`` and SSBD's ``--tail-draft ngram-cache``.

A cache maps each n-gram (n = ``ngram_min``..``ngram_max``, llama.cpp's 1..4) to the tokens seen after it,
with counts. Three caches, as in llama.cpp:

* **context**: the step's source tokens and its output so far (llama.cpp: the prompt and the generation);
* **dynamic**: the outputs of the stream's earlier steps, one step's output added when the next step starts
  (llama.cpp: earlier generations). Only this stream's: a stream's result must not depend on which streams
  ran before it (SPEC "Determinism"), so nothing is carried from one stream to the next;
* **static** (optional, ``--ngram-cache-file``): 2-grams counted once from a text or token file the user
  gives (llama.cpp's ``lookup-create``), the same for every stream; its sha256 is in run.json and the key.

Drafting (``common_ngram_cache_draft``) proposes one token at a time after the sequence so far (the context,
then the tokens already drafted): from the context cache with the lax thresholds, else from the dynamic cache
with the strict ones, else from the static cache alone; it stops at the first position none of them fills,
or at ``draft_max``. In a primary (context, dynamic) cache the longest n-gram found first: its most frequent
next token, counts weighted by 100 times the static cache's count of the token after the last 2 tokens (1
when the static cache has none), is drafted when the n-gram was seen often enough (``samples[i]`` times, i
its place among the sizes from ``ngram_min`` up, as in llama.cpp) and that token makes enough of them
(``percent[i]``); otherwise the next shorter n-gram is tried. Ties go to
the token seen first (llama.cpp's order is that of a hash map). As for ``lookup``, nothing is drafted before
the first output token, and the gate (simul.decoding.methods.selective) decides which drafts are proposed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from simul.common.errors import SimulError
from simul.decoding.methods.protocol import Draft, Position, StepStart
from simul.decoding.methods.rules import EXACT
from simul.decoding.methods.selective import DraftGate
from simul.request.ngram_settings import NgramDraft, file_sha256

# n-gram -> next token -> count (dicts keep insertion order: ties go to the token seen first)
Counts = dict[tuple[int, ...], dict[int, int]]

# llama.cpp's thresholds by n-gram size (index n - 1): a draft from the context cache needs the lax ones,
# from the dynamic cache the strict ones
LAX_SAMPLES = (2, 2, 1, 1)
LAX_PERCENT = (66, 50, 50, 50)
STRICT_SAMPLES = (4, 3, 2, 2)
STRICT_PERCENT = (75, 66, 66, 66)
STATIC_SIZE = 2  # LLAMA_NGRAM_STATIC: the static cache counts 2-grams

TOKEN_FILE_SUFFIX = ".tokens"  # a token file: whitespace-separated token ids, one sequence per line


def count_ngrams(cache: Counts, tokens: Sequence[int], sizes: range, new: int) -> None:
    """``common_ngram_cache_update``: count, for each size, the n-grams before each of the last ``new`` tokens
    with the token that follows them."""
    length = len(tokens)
    for size in sizes:
        for i in range(max(length - new, size), length):
            part = cache.setdefault(tuple(tokens[i - size : i]), {})
            part[tokens[i]] = part.get(tokens[i], 0) + 1


def _from_primary(
    cache: Counts,
    keys: Sequence[tuple[int, ...]],
    static: dict[int, int],
    samples: Sequence[int],
    percent: Sequence[int],
    ngram_min: int,
) -> int | None:
    """``try_draft`` on a context or dynamic cache: ``keys`` from the shortest n-gram (``ngram_min`` tokens)
    to the longest. The thresholds are indexed as llama.cpp's are, by the n-gram's place in that list
    (``n - ngram_min``), not by its size."""
    for key in reversed(keys):
        part = cache.get(key)
        if part is None:
            continue
        best, best_count, best_static, total = None, 0, 0, 0
        for token, count in part.items():
            weight = 100 * static[token] if token in static else 1
            if count * weight > best_count * best_static:
                best, best_count, best_static = token, count, weight
            total += count
        i = len(key) - ngram_min
        if total < samples[i] or 100 * best_count < percent[i] * total:
            continue
        return best
    return None


def _from_static(static: Counts, key: tuple[int, ...]) -> int | None:
    """``try_draft`` on the static cache alone (its lax thresholds for 2-grams)."""
    part = static.get(key)
    if not part:
        return None
    best, best_count, total = None, 0, 0
    for token, count in part.items():
        if count > best_count:
            best, best_count = token, count
        total += count
    if total < LAX_SAMPLES[STATIC_SIZE - 1] or 100 * best_count < LAX_PERCENT[STATIC_SIZE - 1] * total:
        return None
    return best


def cache_draft(
    sequence: Sequence[int],
    draft_max: int,
    ngram_min: int,
    ngram_max: int,
    context: Counts,
    dynamic: Counts,
    static: Counts,
) -> list[int]:
    """``common_ngram_cache_draft``: up to ``draft_max`` tokens after ``sequence``."""
    if len(sequence) < STATIC_SIZE:
        return []
    seq = list(sequence)
    drafted: list[int] = []
    while len(drafted) < draft_max:
        static_part = static.get(tuple(seq[-STATIC_SIZE:])) or {}
        keys = [tuple(seq[-n:]) for n in range(ngram_min, ngram_max + 1) if n <= len(seq)]
        token = _from_primary(context, keys, static_part, LAX_SAMPLES, LAX_PERCENT, ngram_min)
        if token is None:
            token = _from_primary(dynamic, keys, static_part, STRICT_SAMPLES, STRICT_PERCENT, ngram_min)
        if token is None:
            token = _from_static(static, tuple(seq[-STATIC_SIZE:]))
        if token is None:
            break
        drafted.append(token)
        seq.append(token)
    return drafted


class NgramCache:
    """The n-gram cache drafter of one stream: a later drafter, every token under exact greedy acceptance."""

    name = "ngram-cache"

    def __init__(self, settings: NgramDraft, static: Counts | None = None) -> None:
        self.settings = settings
        self.sizes = range(settings.ngram_min, settings.ngram_max + 1)
        self.gate = DraftGate(settings.draft_min, settings.draft_max, settings.rest_after)
        self.static: Counts = static or {}
        self.dynamic: Counts = {}
        self.context: Counts = {}
        self.seen: list[int] = []  # the step's source, then its output as far as it is counted
        self.source = 0

    def start(self, step: StepStart) -> None:
        if step.previous:  # the output of the stream's previous step
            count_ngrams(self.dynamic, step.previous, self.sizes, len(step.previous))
        self.context = {}
        self.seen = list(step.source)
        self.source = len(self.seen)
        count_ngrams(self.context, self.seen, self.sizes, len(self.seen))
        self.gate.start()

    def propose(self, at: Position) -> Draft | None:
        if not at.output:
            return None
        new = list(at.output[len(self.seen) - self.source :])
        if new:
            self.seen += new
            count_ngrams(self.context, self.seen, self.sizes, len(new))
        s = self.settings
        tokens = cache_draft(
            self.seen, s.draft_max, s.ngram_min, s.ngram_max, self.context, self.dynamic, self.static
        )
        admitted = self.gate.admit(tokens, at.room)
        return Draft.of(self.name, admitted, EXACT) if admitted else None

    def kept(self, draft: Draft, n: int) -> None:
        self.gate.kept(n, len(draft.tokens))


def read_static(path: Path, sha256: str, tokenize: Callable[[str], list[int]]) -> Counts:
    """The static cache of ``path``: its 2-grams counted line by line (a line never continues the one before).

    A file named ``*.tokens`` holds token ids, whitespace-separated, one sequence per line; any other file is
    UTF-8 text, each non-blank line tokenized by the model (no BOS, special-token text as plain text). The
    file must still have the sha256 recorded when the run was set up."""
    found = file_sha256(path)
    if found != sha256:
        raise SimulError(
            f"--ngram-cache-file {path} changed since the run was set up (sha256 {found[:12]}, the run "
            f"recorded {sha256[:12]}): restore it, or start the run again"
        )
    static: Counts = {}
    data = path.read_bytes()
    sizes = range(STATIC_SIZE, STATIC_SIZE + 1)
    if path.name.endswith(TOKEN_FILE_SUFFIX):
        for number, line in enumerate(data.decode("ascii", errors="replace").splitlines(), start=1):
            try:
                tokens = [int(word) for word in line.split()]
            except ValueError:
                raise SimulError(
                    f"{path}:{number}: a token file holds whole numbers (token ids) separated by spaces; "
                    "give a text file another name than *.tokens"
                ) from None
            if any(t < 0 for t in tokens):
                raise SimulError(f"{path}:{number}: token ids are 0 or more")
            count_ngrams(static, tokens, sizes, len(tokens))
        return static
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = data[: exc.start].count(b"\n") + 1
        raise SimulError(
            f"{path}:{number}: not UTF-8 text; give a UTF-8 text file or a *.tokens file"
        ) from None
    for line in text.splitlines():
        if line.strip():
            tokens = tokenize(line)
            count_ngrams(static, tokens, sizes, len(tokens))
    return static

"""Decoding streams: the step records (records.py), the stream decoder with RT, SSBD and CD (stream.py),
SSBD's acceptance rule (acceptance.py) and the draft helpers for --ending and --resync (drafts.py).

What the viewer is shown lives in simul.decoding.display, the llama.cpp model in simul.decoding.backend.
"""

from simul.decoding.acceptance import accepts
from simul.decoding.drafts import ENDING_CHARS, find_ngram, is_ending_piece
from simul.decoding.records import StepRecord, StreamResult
from simul.decoding.stream import StreamDecoder

__all__ = [
    "ENDING_CHARS",
    "StepRecord",
    "StreamDecoder",
    "StreamResult",
    "accepts",
    "find_ngram",
    "is_ending_piece",
]

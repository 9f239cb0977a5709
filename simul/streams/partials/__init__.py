"""Real recognizer output: parse timed partials and turn them into one stream per reference segment.

formats.py reads the three formats (each line with its emission time), align.py assigns a talk's recognized
words to its reference segments and gives each segment its steps, build.py makes the streams and the import
report. docs/streams.md has examples.
"""

from simul.streams.partials.align import TalkResult, align_talk, normalize_word
from simul.streams.partials.build import PartialsImport, PartialsReport, partial_streams
from simul.streams.partials.formats import (
    ALIGN_MODES,
    DEFAULT_MAX_GAP_MS,
    DEFAULT_TIME_UNIT,
    FORMATS,
    TIME_UNITS,
    PartialLine,
    PartialsFile,
    check_format,
    infer_format,
    parse_number,
    parse_partials,
)

__all__ = [
    "ALIGN_MODES",
    "DEFAULT_MAX_GAP_MS",
    "DEFAULT_TIME_UNIT",
    "FORMATS",
    "TIME_UNITS",
    "PartialLine",
    "PartialsFile",
    "PartialsImport",
    "PartialsReport",
    "TalkResult",
    "align_talk",
    "check_format",
    "infer_format",
    "normalize_word",
    "parse_number",
    "parse_partials",
    "partial_streams",
]

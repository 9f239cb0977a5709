"""Data text on the terminal: what a file says is shown, never obeyed.

Sources, outputs, references, stream ids and file names come from files that other people and programs
wrote. Printed through Rich they could act as markup (``[bold]``, or ``[/]``, which makes Rich raise) and, as
raw characters, drive the terminal: ESC starts colour, cursor and OSC sequences (window title, hyperlinks),
CR rewrites a line, and the bidirectional overrides and isolates reorder what is displayed (the "Trojan
Source" characters, CVE-2021-42574). Every place that prints data text goes through this module:

* :func:`visible` replaces those characters with a visible escape (``\\x1b``, ``\\u202e``, ``\\r``), the
  way Python's ``repr`` writes them: C0 controls except tab (and newline where a line break belongs), DEL,
  C1 controls, lone surrogates, the line and paragraph separators, and the bidi embeddings, overrides and
  isolates (U+202A-U+202E, U+2066-U+2069).
* :func:`markup` does that and escapes Rich markup, for text placed in a Rich markup string (table cells,
  titles, captions, messages).
* :func:`plain` gives a Rich ``Text`` (never parsed as markup) of the visible text.

JSON output and files keep the text byte-exact: only what reaches the terminal is changed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

_UNSAFE_CLASS = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 without tab and newline, DEL, C1
    "\ud800-\udfff"  # lone surrogates (not text; an encoder would fail on them)
    "\u2028\u2029"  # line and paragraph separators
    "\u202a-\u202e\u2066-\u2069"  # bidi embeddings and overrides, isolates
)
_UNSAFE = re.compile(f"[{_UNSAFE_CLASS}]")
_UNSAFE_OR_NEWLINE = re.compile(f"[{_UNSAFE_CLASS}\n]")


_NAMED = {"\r": "\\r", "\n": "\\n"}


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object, newlines: bool = True) -> str:
    """``text`` with every character that could drive a terminal replaced by a visible escape.

    Tab is kept (Rich expands it); newline is kept when ``newlines`` (multi-line cells and messages) and
    shown as ``\\n`` otherwise (titles, ids, one-line messages).
    """
    string = text if isinstance(text, str) else str(text)
    pattern = _UNSAFE if newlines else _UNSAFE_OR_NEWLINE
    if pattern.search(string) is None:
        return string
    return pattern.sub(_escape_char, string)


def markup(text: object, newlines: bool = True) -> str:
    """:func:`visible` text with Rich markup escaped, to be placed inside a Rich markup string."""
    from rich.markup import escape

    return escape(visible(text, newlines))


def plain(text: object, style: str = "", newlines: bool = True) -> Text:
    """A Rich ``Text`` of the visible text: printed as it reads, never parsed as markup."""
    from rich.text import Text

    return Text(visible(text, newlines), style=style)


def has_unsafe(text: str, newlines: bool = True) -> bool:
    """Whether ``text`` holds a character that :func:`visible` would replace."""
    return (_UNSAFE if newlines else _UNSAFE_OR_NEWLINE).search(text) is not None


def excerpt(text: str, limit: int = 80) -> str:
    """The ``repr`` of ``text`` for an error message that quotes a line, cut to about ``limit`` characters."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[: limit - 3]) + f"... ({len(text)} characters)"

"""XCOMET's error spans of one stream, for `simul show`: per method and segment, the hypothesis with each span
marked by its severity (minor, major, critical), the segment's XCOMET score, and a mark where the model's
input was cut at its token limit (the spans then cover only what the model read).

The lines come from the run's ``error_spans.jsonl`` (simul.runs.directory.read_error_spans): a sentence-level
run has one line per stream (``segment`` null), a run of whole talks one per re-segmented reference segment.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from simul.common.safe_text import markup, visible

RICH_SEVERITY = {"minor": "yellow", "major": "bold dark_orange", "critical": "bold white on red"}
HTML_CSS = """
.minor { background: #fff3b0; }
.major { background: #ffc58a; }
.critical { background: #f55; color: #fff; }
"""


def marked(hypothesis: str, spans: Sequence[Mapping[str, Any]]) -> list[tuple[str, str | None]]:
    """The hypothesis cut into (text, severity or None) pieces; overlapping spans keep the first."""
    pieces: list[tuple[str, str | None]] = []
    at = 0
    for span in sorted(spans, key=lambda s: (int(s["start"]), int(s["end"]))):
        start, end = max(int(span["start"]), at), int(span["end"])
        if end <= start:
            continue
        if start > at:
            pieces.append((hypothesis[at:start], None))
        pieces.append((hypothesis[start:end], str(span["severity"])))
        at = end
    if at < len(hypothesis):
        pieces.append((hypothesis[at:], None))
    return pieces


def _where(line: Mapping[str, Any]) -> str:
    return "-" if line.get("segment") is None else str(int(line["segment"]) + 1)


def spans_table(stream: str, lines: Sequence[Mapping[str, Any]], labels: Mapping[str, str]) -> Table:
    """The terminal table of a stream's error spans (``labels``: method key -> label)."""
    table = Table(
        title=markup(f"XCOMET error spans: {stream}", newlines=False),
        caption="[yellow]minor[/]  [bold dark_orange]major[/]  [bold white on red]critical[/]  "
        "cut: the model's input was cut at its token limit (spans cover what it read)",
        caption_justify="left",
        show_lines=True,
        header_style="bold",
    )
    for header in ("method", "segment", "XCOMET", "hypothesis"):
        table.add_column(header, justify="right" if header in ("segment", "XCOMET") else "left")
    for line in lines:
        text = Text()
        for piece, severity in marked(str(line["hypothesis"]), line["spans"]):
            text.append(visible(piece), style=RICH_SEVERITY[severity] if severity else "")
        score = line.get("xcomet")
        cell = "-" if score is None else f"{float(score):.3f}"
        table.add_row(
            markup(labels.get(str(line["method"]), str(line["method"])), newlines=False),
            _where(line),
            cell + (" cut" if line.get("truncated") else ""),
            text,
        )
    return table


def spans_html(lines: Sequence[Mapping[str, Any]], labels: Mapping[str, str], lang: str) -> str:
    """The same as an HTML section (for `simul show --html`)."""
    rows = []
    for line in lines:
        body = "".join(
            f'<span class="{severity}">{html.escape(piece)}</span>' if severity else html.escape(piece)
            for piece, severity in marked(str(line["hypothesis"]), line["spans"])
        )
        score = line.get("xcomet")
        cell = "-" if score is None else f"{float(score):.3f}"
        label = html.escape(labels.get(str(line["method"]), str(line["method"])))
        cut = " (input cut at the model's token limit)" if line.get("truncated") else ""
        rows.append(
            f"<tr><td>{label}</td><td>{_where(line)}</td><td>{cell}{cut}</td>"
            f'<td lang="{html.escape(lang)}">{body}</td></tr>'
        )
    return (
        f"<style>{HTML_CSS}</style><h2>XCOMET error spans</h2>"
        '<p class="legend"><span class="minor">minor</span> <span class="major">major</span> '
        '<span class="critical">critical</span></p>'
        "<table><thead><tr><th>method</th><th>segment</th><th>XCOMET</th><th>hypothesis</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )

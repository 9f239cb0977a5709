"""A stream's updates step by step, in the manner of the SSBD paper's Table 7.

For each step: the source with the newly arrived words marked, and for every method its output with the
accepted draft (reused) part underlined, newly decoded text in bold, text erased since the previous step
struck through, and the tail hidden by mask-k dimmed. Where the run names the drafter of each token (methods
with a drafter beside the built-in ones), every accepted draft token is underlined, wherever it is
in the output, and those of a later drafter (``--resync``, lookup, ngram-cache: ``tail``) are in italics.
Works on characters, so Chinese and Japanese are rendered as well as languages with spaces.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

from simul.common.languages import get_language
from simul.common.safe_text import visible
from simul.common.sequences import common_prefix_length
from simul.decoding.records import StepRecord, StreamResult
from simul.streams.format import Stream


@dataclass(frozen=True)
class Span:
    text: str
    kinds: frozenset[str] = field(default_factory=frozenset)  # accepted, new, erased, masked, arrived


def _group(text: str, kinds: Sequence[frozenset[str]]) -> list[Span]:
    spans: list[Span] = []
    for ch, kind in zip(text, kinds, strict=True):
        if spans and spans[-1].kinds == kind:
            spans[-1] = Span(spans[-1].text + ch, kind)
        else:
            spans.append(Span(ch, kind))
    return spans


def source_spans(previous: str | None, current: str, unspaced: bool) -> list[Span]:
    """The source with what arrived (or was revised) since the previous step marked ``arrived``."""
    if previous is None:
        return [Span(current, frozenset({"arrived"}))]
    keep = common_prefix_length(previous, current)
    if not unspaced and keep < len(current) and keep < len(previous):
        keep = current.rfind(" ", 0, keep) + 1  # a revised word is new as a whole
    elif not unspaced and keep == len(previous) < len(current) and not current[keep : keep + 1].isspace():
        keep = current.rfind(" ", 0, keep) + 1  # the last word was extended
    spans = [Span(current[:keep])] if keep else []
    if keep < len(current):
        spans.append(Span(current[keep:], frozenset({"arrived"})))
    return spans


def output_spans(previous: StepRecord | None, record: StepRecord, unspaced: bool = False) -> list[Span]:
    """A method's output at one step, marked as described in the module docstring."""
    out = record.output
    masked_from = len(record.display) if out.startswith(record.display) else len(out)
    drafters = drafter_of_chars(record)
    kinds = []
    for i in range(len(out)):
        if drafters is not None:
            name = drafters[i]
            kind = {"accepted" if name else "new"} | ({"tail"} if name not in ("", "previous") else set())
        else:
            kind = {"accepted" if i < record.accepted_chars else "new"}
        if i >= masked_from:
            kind.add("masked")
        kinds.append(frozenset(kind))
    spans = _group(out, kinds)
    if previous is None:
        return spans
    keep = common_prefix_length(previous.output, out)
    if not unspaced and keep < len(previous.output) and keep < len(out):
        keep = out.rfind(" ", 0, keep) + 1  # erase whole words
    erased = previous.output[keep:]
    if not erased.strip():
        return spans
    # insert the erased text where the two outputs part
    result: list[Span] = []
    position = 0
    inserted = False
    for span in spans:
        end = position + len(span.text)
        if not inserted and position <= keep < end:
            head, tail = span.text[: keep - position], span.text[keep - position :]
            if head:
                result.append(Span(head, span.kinds))
            result.append(Span(erased, frozenset({"erased"})))
            if tail:
                result.append(Span(tail, span.kinds))
            inserted = True
        else:
            result.append(span)
        position = end
    if not inserted:
        result.append(Span(erased, frozenset({"erased"})))
    return result


def drafter_of_chars(record: StepRecord) -> list[str] | None:
    """The drafter of each character of the output ("" where the model decoded it itself), from the run of
    each drafter's tokens and where it ends (``drafter_chars``); None where the record has no drafters
    written, or they do not fit the output (``accepted_chars`` then marks the first draft)."""
    if not record.drafters_written or not record.drafted_by:
        return None
    names = [n for i, n in enumerate(record.drafted_by) if i == 0 or record.drafted_by[i - 1] != n]
    ends = record.drafter_chars
    if len(ends) != len(names) or ends != sorted(ends) or ends[-1] != len(record.output):
        return None
    chars: list[str] = []
    for name, end in zip(names, ends, strict=True):
        chars += [name] * (end - len(chars))
    return chars


@dataclass
class StepView:
    index: int
    time_ms: float | None
    source: list[Span]
    outputs: list[list[Span]]
    final: bool


def stream_view(stream: Stream, results: Sequence[StreamResult]) -> list[StepView]:
    unspaced = get_language(stream.src).unspaced
    target_unspaced = get_language(stream.tgt).unspaced
    views = []
    n_steps = max(len(r.steps) for r in results)
    for t in range(n_steps):
        record0 = results[0].steps[t]
        previous_source = results[0].steps[t - 1].source if t else None
        outputs = []
        for result in results:
            record = result.steps[t]
            outputs.append(output_spans(result.steps[t - 1] if t else None, record, target_unspaced))
        views.append(
            StepView(
                index=t,
                time_ms=record0.time_ms,
                source=source_spans(previous_source, record0.source, unspaced),
                outputs=outputs,
                final=record0.final,
            )
        )
    return views


RICH_STYLE = {
    "accepted": "underline",
    "tail": "italic",
    "new": "bold",
    "erased": "strike red",
    "masked": "dim",
    "arrived": "bold cyan",
    "committed": "green",
    "window": "bold magenta",
}


def rich_text(spans: Sequence[Span]) -> object:
    from rich.text import Text

    text = Text()
    for span in spans:
        # data text: never markup (Text is not parsed), and no raw control characters (simul.common.safe_text)
        text.append(visible(span.text), style=" ".join(RICH_STYLE[k] for k in sorted(span.kinds)))
    return text


CSS = """
body { font-family: system-ui, sans-serif, "Noto Sans CJK SC", "Noto Sans CJK JP", "Source Han Sans",
  "WenQuanYi Micro Hei", "Droid Sans Fallback"; margin: 2em; color: #111; }
table { border-collapse: collapse; width: 100%; }
th, td { border: 1px solid #ccc; padding: 6px 8px; vertical-align: top; text-align: left; }
th { background: #f3f3f3; }
td.step { white-space: nowrap; color: #555; }
.accepted { text-decoration: underline; text-decoration-color: #2a7; text-underline-offset: 3px; }
.new { font-weight: bold; }
.tail { font-style: italic; text-decoration-color: #27a; }
.erased { text-decoration: line-through; color: #c22; }
.masked { opacity: 0.4; }
.arrived { font-weight: bold; background: #e6f3ff; }
.committed { color: #2a6; }
.window { color: #a2a; font-weight: bold; }
.legend span { margin-right: 1.5em; }
caption { text-align: left; margin-bottom: 0.6em; color: #444; }
"""


def html_spans(spans: Sequence[Span]) -> str:
    parts = []
    for span in spans:
        text = html.escape(span.text)
        if span.kinds:
            parts.append(f'<span class="{" ".join(sorted(span.kinds))}">{text}</span>')
        else:
            parts.append(text)
    return "".join(parts)


def html_page(
    stream: Stream,
    results: Sequence[StreamResult],
    title: str,
    views: Sequence[StepView] | None = None,
    plot: str = "",
    extra: str = "",
) -> str:
    """The page of one stream; for a talk, ``views`` from :func:`talk_view` and ``plot`` an inline SVG;
    ``extra``: HTML added after the table (XCOMET's error spans)."""
    views = list(views) if views is not None else stream_view(stream, results)
    shown_steps = len(views)
    # lang attributes let the browser pick CJK glyphs (Han characters differ between zh and ja fonts)
    src, tgt = (html.escape(get_language(code).bcp47) for code in (stream.src, stream.tgt))
    head = "".join(f"<th>{html.escape(r.method.label)}</th>" for r in results)
    rows = []
    for view in views:
        when = f"{view.index + 1}" + (f"<br>{view.time_ms / 1000:.1f} s" if view.time_ms is not None else "")
        if view.final:
            when += "<br>final"
        cells = "".join(f'<td lang="{tgt}">{html_spans(o)}</td>' for o in view.outputs)
        rows.append(
            f'<tr><td class="step">{when}</td><td lang="{src}">{html_spans(view.source)}</td>{cells}</tr>'
        )
    refs = stream.references
    reference = " | ".join(
        f'{f"{number}. " if len(refs) > 1 else ""}<span lang="{tgt}">{html.escape(ref)}</span>'
        for number, ref in enumerate(refs, start=1)
    )
    pair = f"{html.escape(stream.src)}&rarr;{html.escape(stream.tgt)}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title><style>{CSS}</style></head>
<body>
<h1>{html.escape(title)}</h1>
<p class="legend"><span class="arrived">newly arrived source</span>
<span class="accepted">accepted draft</span><span class="accepted tail">accepted from a later drafter</span>
<span class="new">newly decoded</span>
<span class="erased">erased</span><span class="masked">hidden by mask-k</span>{
        '<span class="committed">committed</span><span class="window">┃ window boundary</span>'
        if stream.longform
        else ""
    }</p>
{plot}
<table>
<caption>{shown_steps} steps, {pair}; {"references" if len(refs) > 1 else "reference"}: {reference}</caption>
<thead><tr><th>step</th><th>source</th>{head}</tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table>
{extra}
</body></html>
"""


# -- long-form streams (whole talks) ------------------------------------------------------------------------

TALK_CONTEXT_CHARS = 80  # committed text shown before the open window, so the view scrolls with the talk


def talk_output_spans(previous: StepRecord | None, record: StepRecord, unspaced: bool) -> list[Span]:
    """A talk-level output at one update: the tail of the committed text (``committed``), a window mark,
    then the open window marked as for a sentence (accepted draft, new, masked), with what was erased shown
    struck through where the outputs part."""
    talk = record.talk or {}
    out = record.output
    committed = min(int(talk.get("committed_chars") or 0), len(out))
    open_at = committed
    while open_at < len(out) and out[open_at].isspace():
        open_at += 1
    accepted_to = open_at + int(talk.get("open_accepted_chars") or 0)
    masked_from = len(record.display) if out.startswith(record.display) else len(out)
    start = max(0, committed - TALK_CONTEXT_CHARS)
    if start and not unspaced:
        start = out.find(" ", start) + 1 or start  # begin at a word
    marks: list[tuple[int, Span]] = [(committed, Span(" ┃ " if committed else "┃ ", frozenset({"window"})))]
    deleted = str(talk.get("deleted") or "") if previous is not None else ""
    if deleted.strip() and previous is not None:
        keep = len(previous.output) - len(deleted)
        if not unspaced and 0 < keep < len(out) and not previous.output[keep - 1].isspace():
            keep = out.rfind(" ", 0, keep) + 1  # erase whole words, as the sentence view does
        keep = max(keep, committed)
        marks.append((keep, Span(previous.output[keep:], frozenset({"erased"}))))
    spans = [Span("…", frozenset({"committed"}))] if start else []
    position = start
    for at, mark in sorted(marks, key=lambda m: m[0]):
        at = max(at, position)
        spans += _talk_chars(out, position, at, committed, accepted_to, masked_from)
        spans.append(mark)
        position = at if mark.kinds != frozenset({"window"}) else max(at, open_at)
    spans += _talk_chars(out, position, len(out), committed, accepted_to, masked_from)
    return spans


def _talk_chars(out: str, a: int, b: int, committed: int, accepted_to: int, masked_from: int) -> list[Span]:
    kinds = []
    for i in range(a, b):
        if i < committed:
            kinds.append(frozenset({"committed"}))
        else:
            kind = {"accepted" if i < accepted_to else "new"}
            if i >= masked_from:
                kind.add("masked")
            kinds.append(frozenset(kind))
    return _group(out[a:b], kinds)


def talk_source_spans(previous: StepRecord | None, record: StepRecord, unspaced: bool) -> list[Span]:
    """The talk's transcript tail: committed source words (dim), a window mark, the open window, and what
    arrived since the previous update."""
    talk = record.talk or {}
    sep = "" if unspaced else " "
    units = list(record.source) if unspaced else record.source.split()
    units = [u for u in units if not u.isspace()]
    committed = int(talk.get("committed_words") or 0)
    closed_now = talk.get("closed") or []
    window_start = int(closed_now[0][0]) if closed_now else committed
    known = int((previous.talk or {}).get("source_words") or 0) if previous is not None else 0
    tail_from = max(0, window_start - 12)
    spans: list[Span] = [Span("…", frozenset({"committed"}))] if tail_from else []
    for i in range(tail_from, len(units)):
        if i == window_start or (i == committed and committed != window_start):
            spans.append(Span(f"{sep}┃{sep}" if i else f"┃{sep}", frozenset({"window"})))
        elif i:
            spans.append(Span(sep))
        kind = {"committed"} if i < window_start else set()
        if i >= known:
            kind.add("arrived")
        spans.append(Span(units[i], frozenset(kind)))
    return spans


def talk_view(
    stream: Stream, results: Sequence[StreamResult], first: int = 0, last: int | None = None
) -> list[StepView]:
    """Updates ``first``..``last`` (0-based, inclusive) of a talk, scrolled to its open window."""
    unspaced = get_language(stream.src).unspaced
    target_unspaced = get_language(stream.tgt).unspaced
    n_steps = max(len(r.steps) for r in results)
    stop = n_steps if last is None else min(n_steps, last + 1)
    views = []
    for t in range(max(0, first), stop):
        record0 = results[0].steps[t]
        previous0 = results[0].steps[t - 1] if t else None
        outputs = [
            talk_output_spans(r.steps[t - 1] if t else None, r.steps[t], target_unspaced) for r in results
        ]
        views.append(
            StepView(
                index=t,
                time_ms=record0.time_ms,
                source=talk_source_spans(previous0, record0, unspaced),
                outputs=outputs,
                final=record0.final,
            )
        )
    return views

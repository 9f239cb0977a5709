"""simul.common.limits.parse_json skips its walk over every value only where the walk cannot find anything:
the same verdict as the walk on every document, the hostile ones included."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simul.common.limits import MAX_JSON_DEPTH, JSONProblem, json_problem, parse_json

SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)
TEXT = st.text(st.characters(codec=None, exclude_categories=["Cs"]) | SURROGATES, max_size=12)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=40,
)


def walk_verdict(text: str) -> str | None:
    """What parse_json said before it had a fast path: the walk over the parsed document, always."""
    try:
        obj = json.loads(text)
    except RecursionError:
        return "deep"
    return json_problem(obj)


@given(VALUES, st.booleans())
def test_the_fast_path_gives_the_walks_verdict(value: object, ascii_only: bool) -> None:
    # ensure_ascii=False leaves a lone surrogate raw in the text; True writes it as a \\uDxxx escape
    text = json.dumps(value, ensure_ascii=ascii_only)
    expected = walk_verdict(text)
    try:
        parse_json(text)
        got = None
    except JSONProblem as exc:
        got = str(exc)
    assert (got is None) == (expected is None), (text, got, expected)


@pytest.mark.parametrize(
    "text",
    [
        '"\\ud800"',
        '{"k\\uDFFF": 1}',
        "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1),
        '{"a": ' * MAX_JSON_DEPTH + "1" + "}" * MAX_JSON_DEPTH + "",
    ],
)
def test_what_the_walk_refuses_is_still_refused(text: str) -> None:
    if walk_verdict(text) is None:
        parse_json(text)  # within the limit: read
        return
    with pytest.raises(JSONProblem):
        parse_json(text)

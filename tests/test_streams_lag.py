"""The fixed word-lag rule (SPEC "Streams"): step t reveals the first min(t*w, n) words."""

from __future__ import annotations

import pytest

from simul.streams.lag import lag_prefixes


def test_lag_three_reveals_three_words_per_step() -> None:
    text = "We now have four-month-old mice that are non-diabetic, he added."
    assert lag_prefixes(text, 3) == [
        "We now have",
        "We now have four-month-old mice that",
        "We now have four-month-old mice that are non-diabetic, he",
        "We now have four-month-old mice that are non-diabetic, he added.",
    ]


@pytest.mark.parametrize(
    ("text", "lag", "expected"),
    [
        ("Hello.", 3, ["Hello."]),  # n < w: one final step
        ("Yes, we can.", 3, ["Yes, we can."]),  # n == w: one final step, not two
        ("One two three four", 3, ["One two three", "One two three four"]),  # n = w + 1
        ("a b c d e f", 3, ["a b c", "a b c d e f"]),  # multiple of w: no repeated last step
        ("a b c", 1, ["a", "a b", "a b c"]),
    ],
)
def test_short_sentences(text: str, lag: int, expected: list[str]) -> None:
    assert lag_prefixes(text, lag) == expected


def test_extra_whitespace_is_collapsed() -> None:
    text = "  Two\tspaces   and\u00a0a  non-breaking\n space  "
    steps = lag_prefixes(text, 2)
    assert steps == ["Two spaces", "Two spaces and a", "Two spaces and a non-breaking space"]
    assert all("  " not in s and s == s.strip() for s in steps)


def test_unspaced_sources_count_characters() -> None:
    assert lag_prefixes("我们现在有四个月大的小鼠。", 3, unspaced=True) == [
        "我们现",
        "我们现在有四",
        "我们现在有四个月大",
        "我们现在有四个月大的小鼠",
        "我们现在有四个月大的小鼠。",
    ]


def test_unspaced_keeps_inner_spaces_and_skips_them_in_the_count() -> None:
    steps = lag_prefixes("ハーバード大学の Jiawei Zhou です。", 4, unspaced=True)
    assert steps[0] == "ハーバー"
    # 8 + 6 + 2 = 16 characters: the space is kept but not counted
    assert steps[3] == "ハーバード大学の Jiawei Zh"
    assert steps[-1] == "ハーバード大学の Jiawei Zhou です。"


@pytest.mark.parametrize("text", ["", "   ", "\t\n"])
def test_empty_source_is_an_error(text: str) -> None:
    with pytest.raises(ValueError, match="empty"):
        lag_prefixes(text, 3)
    with pytest.raises(ValueError, match="empty"):
        lag_prefixes(text, 3, unspaced=True)


def test_lag_below_one_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        lag_prefixes("a b c", 0)

"""The grammar of kbroker.share.tag.filter."""

from __future__ import annotations

import pytest

from kbroker.share.tag_filter import MAX_DEPTH, TagFilterError, parse_tag_filter


def matches(text: str, *tags: str) -> bool:
    parsed = parse_tag_filter(text)
    assert parsed is not None
    return parsed.matches(frozenset(tags))


def test_or_and_not_and_parentheses() -> None:
    assert matches("TagA || TagB", "TagB")
    assert matches("TagA || TagB", "TagA", "other")
    assert not matches("TagA || TagB", "TagC")
    assert not matches("TagA || TagB")  # an untagged record matches no tag
    assert matches("orders && !test", "orders")
    assert not matches("orders && !test", "orders", "test")
    assert matches("!debug")  # untagged records pass a pure negation
    assert not matches("!debug", "debug")
    # && binds tighter than ||
    assert matches("a || b && c", "a")
    assert not matches("a || b && c", "b")
    assert matches("(a || b) && c", "b", "c")
    assert not matches("(a || b) && c", "a")
    assert matches("!!a", "a")
    assert matches("  eu-west.1:x/y@z#1  ", "eu-west.1:x/y@z#1")


def test_empty_is_no_filter() -> None:
    assert parse_tag_filter("") is None
    assert parse_tag_filter("   ") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a ||", "ends where a tag was expected"),
        ("|| a", "unexpected '||'"),
        ("a b", "unexpected 'b'"),
        ("(a", "is not closed"),
        ("a)", "unexpected ')'"),
        ("a | b", "unexpected character"),
        ("a && $", "unexpected character '$'"),
        ("()", "unexpected ')'"),
        ("(" * (MAX_DEPTH + 2) + "a" + ")" * (MAX_DEPTH + 2), "nests at most"),
        ("!" * (MAX_DEPTH + 2) + "a", "nests at most"),
        ("a" * 1001, "at most 1000 characters"),
    ],
)
def test_malformed_filters_are_refused(text: str, message: str) -> None:
    with pytest.raises(TagFilterError, match=message.replace("(", r"\(").replace(")", r"\)").replace("$", r"\$")):
        parse_tag_filter(text)

"""Tag filters of share groups (the group config `kbroker.share.tag.filter`), pure.

A record carries tags in `kbroker-tag` headers (one tag per header; a record may have several, or
none). A filter is a boolean expression over tag names; a tag name stands for "the record has this
tag". The grammar, loosest binding first:

    filter  := or
    or      := and ( "||" and )*
    and     := not ( "&&" not )*
    not     := "!" not | "(" or ")" | TAG
    TAG     := one or more of  A-Z a-z 0-9 _ - . : / @ #

Blanks between tokens are ignored. `TagA || TagB` delivers records tagged TagA or TagB;
`orders && !test` those tagged `orders` and not `test`; `!debug` every record without the tag
`debug`, untagged records included. An empty filter (or no config) delivers every record. A filter
is at most MAX_LENGTH characters and nests at most MAX_DEPTH parentheses or negations.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

MAX_LENGTH = 1000
MAX_DEPTH = 32

_TOKEN = re.compile(r"\s*(\|\||&&|!|\(|\)|[A-Za-z0-9_\-.:/@#]+)")


class TagFilterError(ValueError):
    """The filter does not follow the grammar."""


# An expression is a tag name (str) or a tuple ("!", expr) | ("&&", expr, ...) | ("||", expr, ...).
Expr = str | tuple[object, ...]


@dataclass(frozen=True)
class TagFilter:
    text: str
    expr: Expr

    def matches(self, tags: frozenset[str]) -> bool:
        return _evaluate(self.expr, tags)


def _evaluate(expr: Expr, tags: frozenset[str]) -> bool:
    if isinstance(expr, str):
        return expr in tags
    operator = expr[0]
    if operator == "!":
        return not _evaluate(expr[1], tags)  # type: ignore[arg-type]
    if operator == "&&":
        return all(_evaluate(e, tags) for e in expr[1:])  # type: ignore[arg-type]
    return any(_evaluate(e, tags) for e in expr[1:])  # type: ignore[arg-type]


@functools.lru_cache(maxsize=256)
def parse_tag_filter(text: str) -> TagFilter | None:
    """The filter `text` means; None for an empty one. Raises TagFilterError."""
    if len(text) > MAX_LENGTH:
        raise TagFilterError(f"a tag filter is at most {MAX_LENGTH} characters")
    tokens = _tokenize(text)
    if not tokens:
        return None
    parser = _Parser(tokens)
    expr = parser.parse_or(0)
    if parser.position != len(tokens):
        raise TagFilterError(f"unexpected {tokens[parser.position]!r} in tag filter {text!r}")
    return TagFilter(text, expr)


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None:
            raise TagFilterError(f"unexpected character {text[position:].lstrip()[:1]!r} in tag filter {text!r}")
        tokens.append(match.group(1))
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.position = 0

    def _peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def parse_or(self, depth: int) -> Expr:
        terms = [self.parse_and(depth)]
        while self._peek() == "||":
            self.position += 1
            terms.append(self.parse_and(depth))
        return terms[0] if len(terms) == 1 else ("||", *terms)

    def parse_and(self, depth: int) -> Expr:
        terms = [self.parse_not(depth)]
        while self._peek() == "&&":
            self.position += 1
            terms.append(self.parse_not(depth))
        return terms[0] if len(terms) == 1 else ("&&", *terms)

    def parse_not(self, depth: int) -> Expr:
        if depth > MAX_DEPTH:
            raise TagFilterError(f"a tag filter nests at most {MAX_DEPTH} levels")
        token = self._peek()
        if token is None:
            raise TagFilterError("a tag filter ends where a tag was expected")
        self.position += 1
        if token == "!":
            return ("!", self.parse_not(depth + 1))
        if token == "(":
            inner = self.parse_or(depth + 1)
            if self._peek() != ")":
                raise TagFilterError("a '(' in the tag filter is not closed")
            self.position += 1
            return inner
        if token in ("||", "&&", ")"):
            raise TagFilterError(f"unexpected {token!r} where a tag was expected")
        return token

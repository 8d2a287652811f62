"""The vocabulary in which every API's messages are declared.

A message is a tree of fields; each field says in which versions it exists,
in which it may be null, whether it is a tagged field (and its tag), and its
default. One declaration covers every version of a message: the version is an
argument of encoding and decoding, never a class of its own.

Types are written as strings:

  bool int8 int16 uint16 int32 uint32 int64 float64 uuid
  string bytes records          (records: a record-batch blob, never decoded here)
  []T                           an array of a primitive type T
and as objects:
  [F(...), ...]                 an array of structs with those fields
  Struct([F(...), ...])         a single nested struct
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

INF = 0x7FFF

PRIMITIVES = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "float64",
        "uuid",
        "string",
        "bytes",
        "records",
    }
)

ZERO_UUID = b"\x00" * 16


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class VersionRange:
    low: int
    high: int  # inclusive; INF when open-ended

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high

    @property
    def empty(self) -> bool:
        return self.low > self.high

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.high == INF:
            return f"{self.low}+"
        if self.low == self.high:
            return str(self.low)
        return f"{self.low}-{self.high}"


NO_VERSIONS = VersionRange(1, 0)


@functools.cache  # the same few spans ("0+", "1-3") recur in every schema (start-up time)
def parse_versions(text: str | None) -> VersionRange:
    """Parse Kafka's version notation: "3+", "1-4", "2", or "none"."""
    if text is None or text == "none":
        return NO_VERSIONS
    if text.endswith("+"):
        return VersionRange(int(text[:-1]), INF)
    if "-" in text:
        low, high = text.split("-")
        return VersionRange(int(low), int(high))
    return VersionRange(int(text), int(text))


@dataclass(frozen=True, eq=False)
class Struct:
    fields: tuple[Field, ...]

    def __init__(self, fields: list[Field] | tuple[Field, ...]) -> None:
        object.__setattr__(self, "fields", tuple(fields))


FieldType = str | Struct | list


@dataclass(frozen=True, eq=False)
class Field:
    name: str
    type: str  # primitive name, "[]T", "struct" or "[]struct"
    versions: VersionRange
    nullable: VersionRange = NO_VERSIONS
    tag: int | None = None
    default: Any = None
    struct: Struct | None = None  # for "struct" and "[]struct"
    ignorable: bool = False

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element(self) -> str:
        return self.type[2:]

    @property
    def tagged(self) -> bool:
        return self.tag is not None


def _type_default(type_name: str) -> Any:
    if type_name.startswith("[]"):
        return []
    if type_name in ("bool",):
        return False
    if type_name in ("string",):
        return ""
    if type_name in ("bytes",):
        return b""
    if type_name == "records":
        return None
    if type_name == "uuid":
        return ZERO_UUID
    if type_name == "float64":
        return 0.0
    return 0


def struct_default(struct: Struct) -> dict[str, Any]:
    """A struct with every field at its default, as Kafka's no-argument constructor makes it."""
    return {f.name: (dict(f.default) if isinstance(f.default, dict) else f.default) for f in struct.fields}


def F(
    name: str,
    type: FieldType,
    versions: str = "0+",
    *,
    nullable: str | None = None,
    tag: int | None = None,
    default: Any = MISSING,
    ignorable: bool = False,
) -> Field:
    """Declare a field. `versions` is where it exists (for a tagged field: where
    it may be sent as a tagged field). `default` follows Kafka's schema default;
    when omitted, the type's zero value (0, "", false, empty array)."""
    struct: Struct | None = None
    if isinstance(type, list):
        struct = Struct(type)
        type_name = "[]struct"
    elif isinstance(type, Struct):
        struct = type
        type_name = "struct"
    else:
        type_name = type
        element = type_name[2:] if type_name.startswith("[]") else type_name
        if element not in PRIMITIVES:
            raise ValueError(f"unknown type {type_name!r} for field {name}")
    if default is MISSING:
        default = struct_default(struct) if type_name == "struct" and struct is not None else _type_default(type_name)
    return Field(
        name=name,
        type=type_name,
        versions=parse_versions(versions),
        nullable=parse_versions(nullable),
        tag=tag,
        default=default,
        struct=struct,
        ignorable=ignorable,
    )


@dataclass(frozen=True, eq=False)
class Message:
    """One request or response schema, covering all its versions."""

    name: str
    api_key: int
    kind: str  # "request" or "response"
    valid: VersionRange
    flexible: VersionRange
    fields: tuple[Field, ...] = field(default_factory=tuple)

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible


def request(name: str, api_key: int, valid: str, flexible: str, fields: list[Field]) -> Message:
    return Message(name, api_key, "request", parse_versions(valid), parse_versions(flexible), tuple(fields))


def response(name: str, api_key: int, valid: str, flexible: str, fields: list[Field]) -> Message:
    return Message(name, api_key, "response", parse_versions(valid), parse_versions(flexible), tuple(fields))

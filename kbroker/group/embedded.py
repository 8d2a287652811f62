"""The consumer protocol embedded in classic JoinGroup metadata and SyncGroup assignments, read and written
by the coordinator when classic members share a consumer-protocol group (KIP-848's online migration).

    Subscription  int16 version | [string topic] | nullable bytes user data
                  | v1+: [string topic, [int32 partition]] owned partitions | v2+: int32 generation
                  | v3+: nullable string rack id
    Assignment    int16 version | [string topic, [int32 partition]] | nullable bytes user data

Versions above those known are read as their highest known layout (Kafka's rule for this protocol).
Pure; a malformed payload raises EmbeddedProtocolError.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

Assignment = dict[str, frozenset[int]]
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class EmbeddedProtocolError(ValueError):
    """The bytes are not a consumer-protocol subscription or assignment."""


@dataclass(frozen=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    owned: Assignment = field(default_factory=dict)
    rack_id: str | None = None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def take(self, size: int) -> bytes:
        if size < 0 or self.position + size > len(self.data):
            raise EmbeddedProtocolError("truncated consumer protocol payload")
        chunk = self.data[self.position : self.position + size]
        self.position += size
        return bytes(chunk)

    def int16(self) -> int:
        return int(_I16.unpack(self.take(2))[0])

    def int32(self) -> int:
        return int(_I32.unpack(self.take(4))[0])

    def string(self, nullable: bool = False) -> str | None:
        length = self.int16()
        if length < 0:
            if nullable:
                return None
            raise EmbeddedProtocolError("null string in consumer protocol payload")
        try:
            return self.take(length).decode()
        except UnicodeDecodeError:
            raise EmbeddedProtocolError("consumer protocol string is not UTF-8") from None

    def count(self) -> int:
        n = self.int32()
        if n < 0 or n > len(self.data):  # each element takes at least one byte
            raise EmbeddedProtocolError(f"bad array length {n} in consumer protocol payload")
        return n

    def partitions(self) -> Assignment:
        result: dict[str, frozenset[int]] = {}
        for _ in range(self.count()):
            topic = self.string()
            assert topic is not None
            result[topic] = result.get(topic, frozenset()) | {self.int32() for _ in range(self.count())}
        return result

    def skip_bytes(self) -> None:
        length = self.int32()
        if length >= 0:
            self.take(length)


def version_of(data: bytes) -> int:
    if len(data) < 2:
        raise EmbeddedProtocolError("empty consumer protocol payload")
    return int(_I16.unpack_from(data)[0])


def parse_subscription(data: bytes) -> Subscription:
    reader = _Reader(data)
    version = reader.int16()
    if version < 0:
        raise EmbeddedProtocolError(f"bad consumer protocol version {version}")
    topics = []
    for _ in range(reader.count()):
        topic = reader.string()
        assert topic is not None
        topics.append(topic)
    reader.skip_bytes()  # user data: for the client-side assignor only
    owned: Assignment = {}
    rack_id = None
    if version >= 1:
        owned = reader.partitions()
    if version >= 2:
        reader.int32()  # generation: the coordinator knows the member's epoch itself
    if version >= 3:
        rack_id = reader.string(nullable=True)
    return Subscription(version, tuple(topics), owned, rack_id)


def parse_assignment(data: bytes) -> Assignment:
    if not data:
        return {}  # a member the leader gave nothing (Kafka's empty assignment)
    reader = _Reader(data)
    if reader.int16() < 0:
        raise EmbeddedProtocolError("bad consumer protocol version")
    return reader.partitions()


def assignment_bytes(assignment: Assignment, version: int) -> bytes:
    """An Assignment in the member's subscription version (capped at 3, the highest known), null user data."""
    parts = [_I16.pack(min(max(version, 0), 3)), _I32.pack(len([t for t, p in assignment.items() if p]))]
    for topic in sorted(assignment):
        partitions = sorted(assignment[topic])
        if not partitions:
            continue
        name = topic.encode()
        parts += [_I16.pack(len(name)), name, _I32.pack(len(partitions))]
        parts += [_I32.pack(p) for p in partitions]
    parts.append(_I32.pack(-1))
    return b"".join(parts)

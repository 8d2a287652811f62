"""Named consumers' positions and the ack rules (pure, no I/O), and their records in the positions topic.

A position is the offset of the next record a consumer reads (Kafka's committed-offset
convention). A consumer without a stored position reads from the start of its queue. An ack
sets the position:
  - forwards (or to the same offset) always;
  - backwards only with `allow_rewind`; without it the ack is stale (another reader of the same
    name moved further): StaleAck, answered 409, nothing changes;
  - never past the partition's log end offset: AckOutOfRange.

Positions topic records: key = version 0, queue, consumer; value = version 0, offset, time of the
ack (ms); a null value is a tombstone (consumer or queue deleted).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAX_NAME_BYTES = 249
_VERSION = struct.Struct(">h")
_LEN = struct.Struct(">H")
_VALUE = struct.Struct(">hqq")


class StaleAck(Exception):
    def __init__(self, position: int) -> None:
        super().__init__(f"stale ack: the position is {position} already (allow_rewind moves it back)")
        self.position = position


class AckOutOfRange(Exception):
    pass


def check_name(kind: str, name: str) -> str | None:
    """Why `name` cannot name a queue or consumer (None: it can): 1 to 249 UTF-8 bytes, no control characters."""
    size = len(name.encode("utf-8", "surrogatepass"))
    if not 0 < size <= MAX_NAME_BYTES:
        return f"a {kind} name has 1 to {MAX_NAME_BYTES} bytes"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return f"a {kind} name has no control characters"
    try:
        name.encode()
    except UnicodeEncodeError:
        return f"a {kind} name is valid UTF-8"
    return None


@dataclass(frozen=True, slots=True)
class Ack:
    previous: int | None
    position: int


class Positions:
    def __init__(self) -> None:
        self.by_queue: dict[str, dict[str, int]] = {}

    def get(self, queue: str, consumer: str) -> int | None:
        consumers = self.by_queue.get(queue)
        return None if consumers is None else consumers.get(consumer)

    def consumers(self, queue: str) -> dict[str, int]:
        return self.by_queue.get(queue, {})

    def ack(self, queue: str, consumer: str, offset: int, *, allow_rewind: bool, log_end: int) -> Ack:
        """Apply the ack rules; the new position is in memory on return (the caller persists it)."""
        if offset < 0 or offset > log_end:
            raise AckOutOfRange(f"offset {offset} is outside [0, {log_end}] (the log end offset)")
        previous = self.get(queue, consumer)
        if previous is not None and offset < previous and not allow_rewind:
            raise StaleAck(previous)
        self.set(queue, consumer, offset)
        return Ack(previous, offset)

    def set(self, queue: str, consumer: str, offset: int) -> None:
        self.by_queue.setdefault(queue, {})[consumer] = offset

    def remove(self, queue: str, consumer: str) -> bool:
        consumers = self.by_queue.get(queue)
        if consumers is None or consumer not in consumers:
            return False
        del consumers[consumer]
        if not consumers:
            del self.by_queue[queue]
        return True

    def remove_queue(self, queue: str) -> list[str]:
        return list(self.by_queue.pop(queue, {}))

    def replay(self, key: bytes, value: bytes | None) -> None:
        """Apply one record of the positions topic (start-up)."""
        queue, consumer = decode_key(key)
        if value is None:
            self.remove(queue, consumer)
        else:
            self.set(queue, consumer, decode_value(value))


def encode_key(queue: str, consumer: str) -> bytes:
    q, c = queue.encode(), consumer.encode()
    return _VERSION.pack(0) + _LEN.pack(len(q)) + q + _LEN.pack(len(c)) + c


def decode_key(key: bytes) -> tuple[str, str]:
    try:
        (version,) = _VERSION.unpack_from(key, 0)
        if version != 0:
            raise ValueError(f"unknown positions key version {version}")
        (size,) = _LEN.unpack_from(key, 2)
        queue = key[4 : 4 + size].decode()
        (csize,) = _LEN.unpack_from(key, 4 + size)
        consumer = key[6 + size : 6 + size + csize].decode()
    except (struct.error, UnicodeDecodeError) as error:
        raise ValueError(f"malformed positions key: {error}") from error
    if 6 + size + csize != len(key):
        raise ValueError("malformed positions key: trailing bytes")
    return queue, consumer


def encode_value(offset: int, now_ms: int) -> bytes:
    return _VALUE.pack(0, offset, now_ms)


def decode_value(value: bytes) -> int:
    try:
        version, offset, _ = _VALUE.unpack_from(value, 0)
    except struct.error as error:
        raise ValueError(f"malformed positions value: {error}") from error
    if version != 0:
        raise ValueError(f"unknown positions value version {version}")
    return int(offset)

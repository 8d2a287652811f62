"""The records of __consumer_offsets, in Kafka's own layout (so Kafka's tools could read them).

Key, by its leading int16 version:
  0, 1  offset commit   group string, topic string, partition int32
  2     group metadata  group string
  19266 consumer group  int16-length group id: kbroker's own record of a KIP-848 group (consumer_records.py)
Value (None = tombstone: the offset or group was deleted):
  offset commit v3      offset int64, leader epoch int32, metadata string, commit timestamp int64
  group metadata v3     protocol type string, generation int32, protocol string?, leader string?,
                        current state timestamp int64, members (int32 count, always 0: members are not kept)
Strings are int16-length UTF-8 (-1 = null), integers big-endian: Kafka's non-flexible encoding.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kbroker.group.group import CommittedOffset, TopicPartition
from kbroker.group.offsets import GroupRecord

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3
CONSUMER_GROUP_KEY_VERSION = 0x4B42  # kbroker/group/consumer_records.py

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class RecordFormatError(ValueError):
    """A record of __consumer_offsets this version of kbroker cannot read."""


@dataclass(frozen=True)
class OffsetKey:
    group_id: str
    tp: TopicPartition


@dataclass(frozen=True)
class GroupKey:
    group_id: str


@dataclass(frozen=True)
class ConsumerGroupKey:
    group_id: str


def offset_key(group_id: str, tp: TopicPartition) -> bytes:
    return _I16.pack(OFFSET_KEY_VERSION) + _string(group_id) + _string(tp[0]) + _I32.pack(tp[1])


def group_key(group_id: str) -> bytes:
    return _I16.pack(GROUP_KEY_VERSION) + _string(group_id)


def offset_value(committed: CommittedOffset) -> bytes:
    return (
        _I16.pack(OFFSET_VALUE_VERSION)
        + _I64.pack(committed.offset)
        + _I32.pack(committed.leader_epoch)
        + _string(committed.metadata)
        + _I64.pack(committed.commit_timestamp)
    )


def group_value(record: GroupRecord) -> bytes:
    return (
        _I16.pack(GROUP_VALUE_VERSION)
        + _string(record.protocol_type)
        + _I32.pack(record.generation_id)
        + _string(record.protocol_name)
        + _string(record.leader_id)
        + _I64.pack(record.state_timestamp)
        + _I32.pack(0)
    )


def parse_key(key: bytes) -> OffsetKey | GroupKey | ConsumerGroupKey:
    reader = _Reader(key)
    version = reader.int16()
    if version in (0, 1):
        group_id, topic = reader.string(), reader.string()
        return OffsetKey(group_id or "", (topic or "", reader.int32()))
    if version == GROUP_KEY_VERSION:
        return GroupKey(reader.string() or "")
    if version == CONSUMER_GROUP_KEY_VERSION:
        return ConsumerGroupKey(reader.string() or "")
    raise RecordFormatError(f"unknown key version {version}")


def parse_offset_value(value: bytes) -> CommittedOffset:
    reader = _Reader(value)
    version = reader.int16()
    if version != OFFSET_VALUE_VERSION:
        raise RecordFormatError(f"unknown offset value version {version}")
    offset, epoch = reader.int64(), reader.int32()
    metadata = reader.string() or ""
    return CommittedOffset(offset, epoch, metadata, reader.int64())


def parse_group_value(value: bytes) -> GroupRecord:
    reader = _Reader(value)
    version = reader.int16()
    if version != GROUP_VALUE_VERSION:
        raise RecordFormatError(f"unknown group value version {version}")
    protocol_type, generation = reader.string() or "", reader.int32()
    protocol, leader = reader.string(), reader.string()
    return GroupRecord(protocol_type, generation, protocol, leader, reader.int64())


def _string(text: str | None) -> bytes:
    if text is None:
        return _I16.pack(-1)
    data = text.encode()
    return _I16.pack(len(data)) + data


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def _unpack(self, fmt: struct.Struct) -> int:
        try:
            (value,) = fmt.unpack_from(self.data, self.position)
        except struct.error as error:
            raise RecordFormatError(f"truncated record: {error}") from error
        self.position += fmt.size
        return int(value)

    def int16(self) -> int:
        return self._unpack(_I16)

    def int32(self) -> int:
        return self._unpack(_I32)

    def int64(self) -> int:
        return self._unpack(_I64)

    def string(self) -> str | None:
        length = self.int16()
        if length < 0:
            return None
        end = self.position + length
        if end > len(self.data):
            raise RecordFormatError("truncated string")
        text = bytes(self.data[self.position : end]).decode()
        self.position = end
        return text

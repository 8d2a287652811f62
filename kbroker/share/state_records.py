"""The record layout of `__share_group_state`: one record per share partition, its whole state.

kbroker writes a snapshot of the share partition each time (Kafka's share coordinator writes
ShareSnapshot and ShareUpdate records; kbroker's layout is its own, big-endian):

    key    int16 version (0) | int16 length + UTF-8 group id | 16-byte topic id | int32 partition
    value  int16 version (0) | int64 start offset | int32 batch count |
           count x (int64 first offset | int64 last offset | int8 state | int16 delivery count)

States are Kafka's RecordState ids (0 AVAILABLE, 2 ACKNOWLEDGED, 4 ARCHIVED; an ACQUIRED record is
written AVAILABLE). A null value (tombstone) removes the share partition. Keys name the topic by
id, so a topic deleted and re-created under the same name starts afresh.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kbroker.share.partition import RecordState, StateBatch

VERSION = 0
_HEAD = struct.Struct(">hqi")
_BATCH = struct.Struct(">qqbh")
_KEY_TAIL = struct.Struct(">16si")


@dataclass(frozen=True)
class StateKey:
    group_id: str
    topic_id: bytes
    partition: int


@dataclass(frozen=True)
class ShareState:
    start_offset: int
    batches: tuple[StateBatch, ...]


def encode_key(key: StateKey) -> bytes:
    group = key.group_id.encode()
    return struct.pack(">hh", VERSION, len(group)) + group + _KEY_TAIL.pack(key.topic_id, key.partition)


def decode_key(data: bytes) -> StateKey:
    version, length = struct.unpack_from(">hh", data)
    if version != VERSION or len(data) != 4 + length + _KEY_TAIL.size:
        raise ValueError(f"not a share-state key (version {version}, {len(data)} bytes)")
    topic_id, partition = _KEY_TAIL.unpack_from(data, 4 + length)
    return StateKey(data[4 : 4 + length].decode(), topic_id, partition)


def encode_value(state: ShareState) -> bytes:
    parts = [_HEAD.pack(VERSION, state.start_offset, len(state.batches))]
    parts += [_BATCH.pack(b.first_offset, b.last_offset, int(b.state), b.delivery_count) for b in state.batches]
    return b"".join(parts)


def decode_value(data: bytes) -> ShareState:
    version, start, count = _HEAD.unpack_from(data)
    if version != VERSION or len(data) != _HEAD.size + count * _BATCH.size:
        raise ValueError(f"not a share-state value (version {version}, {len(data)} bytes)")
    batches = []
    for i in range(count):
        first, last, state, delivery_count = _BATCH.unpack_from(data, _HEAD.size + i * _BATCH.size)
        batches.append(StateBatch(first, last, RecordState(state), delivery_count))
    return ShareState(start, tuple(batches))

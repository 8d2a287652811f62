"""The records of __transaction_state (kbroker's own layout, big-endian, Kafka-style strings).

Key:   version int16 (0), transactional id string
Value: version int16 (0), producer id int64, last producer id int64, producer epoch int16,
       last producer epoch int16, timeout ms int32, state int8 (Kafka's state ids, see
       transaction.py), start timestamp int64, last update timestamp int64,
       partition count int32, then per partition: topic string, partition int32;
       version 1 then: next producer id int64, client transaction version int8 (transactions v2)
A null value is a tombstone: the transactional id expired.
Strings are an int16 length then UTF-8.
"""

from __future__ import annotations

import struct

from kbroker.txn.transaction import TxnRecord, TxnState

KEY_VERSION = 0
VALUE_VERSION = 1  # written; 0 (no v2 fields) is still read

_STRING_LENGTH = struct.Struct(">h")
_VALUE_HEAD = struct.Struct(">hqqhhibqqi")
_PARTITION = struct.Struct(">i")
_V1_TAIL = struct.Struct(">qb")


class TxnLogFormatError(ValueError):
    """A __transaction_state record this kbroker cannot read."""


def _string(text: str) -> bytes:
    data = text.encode()
    return _STRING_LENGTH.pack(len(data)) + data


def _read_string(data: bytes, position: int) -> tuple[str, int]:
    (length,) = _STRING_LENGTH.unpack_from(data, position)
    position += 2
    end = position + length
    if length < 0 or end > len(data):
        raise TxnLogFormatError("truncated string")
    return bytes(data[position:end]).decode(), end


def txn_key(transactional_id: str) -> bytes:
    return _STRING_LENGTH.pack(KEY_VERSION) + _string(transactional_id)


def parse_txn_key(key: bytes) -> str:
    try:
        (version,) = _STRING_LENGTH.unpack_from(key)
        if version != KEY_VERSION:
            raise TxnLogFormatError(f"unknown key version {version}")
        transactional_id, end = _read_string(key, 2)
    except (struct.error, UnicodeDecodeError) as error:
        raise TxnLogFormatError(str(error)) from error
    if end != len(key):
        raise TxnLogFormatError("bytes after the transactional id")
    return transactional_id


def txn_value(record: TxnRecord) -> bytes:
    parts = [
        _VALUE_HEAD.pack(
            VALUE_VERSION,
            record.producer_id,
            record.last_producer_id,
            record.producer_epoch,
            record.last_producer_epoch,
            record.timeout_ms,
            record.state.code,
            record.start_timestamp,
            record.last_update_timestamp,
            len(record.partitions),
        )
    ]
    for topic, partition in sorted(record.partitions):
        parts.append(_string(topic) + _PARTITION.pack(partition))
    parts.append(_V1_TAIL.pack(record.next_producer_id, record.client_version))
    return b"".join(parts)


def parse_txn_value(value: bytes) -> TxnRecord:
    try:
        version, pid, last_pid, epoch, last_epoch, timeout, state, start, update, count = _VALUE_HEAD.unpack_from(value)
        if version not in (0, VALUE_VERSION):
            raise TxnLogFormatError(f"unknown value version {version}")
        position = _VALUE_HEAD.size
        partitions = set()
        for _ in range(count):
            topic, position = _read_string(value, position)
            (partition,) = _PARTITION.unpack_from(value, position)
            position += _PARTITION.size
            partitions.add((topic, partition))
        next_pid, client_version = -1, 0
        if version >= 1:
            next_pid, client_version = _V1_TAIL.unpack_from(value, position)
        txn_state = TxnState.from_code(state)
    except (struct.error, UnicodeDecodeError, ValueError) as error:
        if isinstance(error, TxnLogFormatError):
            raise
        raise TxnLogFormatError(str(error)) from error
    return TxnRecord(
        pid,
        last_pid,
        epoch,
        last_epoch,
        timeout,
        txn_state,
        frozenset(partitions),
        start,
        update,
        next_pid,
        client_version,
    )

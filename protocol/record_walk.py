"""Walk the records of a batch without decoding them: Kafka's structural checks, on the produce hot path.

Kafka's LogValidator iterates every record of a produced batch (DefaultRecord.readFrom, or
readPartiallyFrom for compressed batches) and refuses the batch when the records do not add up. The
rules, which ``walk_records`` applies to the (decompressed) records section:

- exactly ``records_count`` records, then nothing: fewer ("premature EOF") or bytes left over
  ("records still remaining") is an InvalidRecordError;
- each record's fields (attributes, timestamp delta varlong, offset delta varint, key, value, header
  count, headers) end exactly where its length varint says;
- varints at most 5 bytes, varlongs at most 10, values wrapped as Java's int and long;
- a negative key or value length is a null; a negative header count or header key length is an error.

It returns what the policy checks of ``kbroker.log.validator`` need: bounds on the timestamp deltas,
how many keys are null, and whether the offset deltas run 0, 1, ... (a compressed batch must).

Speed. Nothing is allocated per record. Two ways through the records:

- runs of records of one shape: producers very often send records of one size, so records ``i`` and
  ``i + 1`` share every byte of their layout except the attributes, timestamp delta, offset delta,
  key and value. A run is checked with strided slices (``data[offset::size]``, a loop in C) against
  the first record of the run, which is decoded in full: its length bytes, key and value length
  bytes and the empty header count recur in every record, each timestamp delta has the first one's
  byte count (checked by the continuation bits), the offset deltas are exactly ``i, i + 1, ...``
  (compared with a table of their encodings). A record that passes these checks is well formed for
  the same reasons the first one is;
- otherwise one Python loop over each record, its one- and two-byte varints read inline.

A run is tried when at least ``RUN_MIN`` records remain; after a run shorter than that (records of
varying sizes) the next ``BACKOFF`` records go through the loop before the next try, twice as many
after each further miss (up to ``MAX_BACKOFF``), so that varying records cost little more than the loop.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from protocol.errors import InvalidRecordError
from protocol.primitives import Buffer, DecodeError, read_varint, read_varlong

RUN_MIN = 8
BACKOFF = 32
MAX_BACKOFF = 1024
_FAR = 1 << 64
_ZIGZAG = [(b >> 1) ^ -(b & 1) for b in range(0x80)]  # one-byte zigzag varints, decoded
_LOW_BYTE = re.compile(b"[\\x00-\\x7f]")
_HIGH_BYTE = re.compile(b"[\\x80-\\xff]")
# offset deltas of 1, 2 and 3 bytes: the records indexes each size class covers
# (runs stop at index 2**17; a batch rarely holds more records, the loop walks any beyond)
_OFFSET_CLASSES = {1: (0, 64), 2: (64, 8192), 3: (8192, 1 << 17)}


class RecordsSummary(NamedTuple):
    """What a walk over a batch's records found.

    Every record's timestamp delta (relative to the base timestamp) lies in
    [min_timestamp_delta, max_timestamp_delta]; the bounds may be loose (runs report the range
    their varint size allows), so a caller checks exact values only when a bound is out of range.
    """

    records: int
    min_timestamp_delta: int
    max_timestamp_delta: int
    null_keys: int
    offsets_in_order: bool


def walk_records(data: Buffer, count: int) -> RecordsSummary:
    """Check that ``data`` holds exactly ``count`` well-formed records (see the module docstring).

    ``data`` is the records section, bytes (fastest: the validator copies uncompressed records once,
    about 45 us per MiB, which the loop repays) or any buffer.
    """
    if count < 0:
        raise InvalidRecordError(f"invalid record count {count}")
    try:
        return _walk(data, count)
    except IndexError:
        raise InvalidRecordError("incorrect declared batch size, premature end of the records") from None
    except DecodeError as error:
        raise InvalidRecordError(f"invalid record structure: {error}") from None


def _walk(data: Buffer, count: int) -> RecordsSummary:
    pos = 0
    index = 0
    low = _FAR
    high = -_FAR
    null_keys = 0
    in_order = True
    next_try = 0
    backoff = BACKOFF
    while index < count:
        if index >= next_try and count - index >= RUN_MIN:
            run = _uniform_run(data, pos, index, count)
            if run is not None:
                records, size, run_low, run_high, run_nulls = run
                pos += records * size
                index += records
                low = min(low, run_low)
                high = max(high, run_high)
                null_keys += run_nulls
                if records >= RUN_MIN:
                    backoff = BACKOFF
                    continue
            next_try = index + backoff
            backoff = min(2 * backoff, MAX_BACKOFF)
            continue
        stop = count if count - index < RUN_MIN else min(count, max(next_try, index + 1))
        pos, loop_low, loop_high, loop_nulls, loop_in_order = _walk_loop(data, pos, index, stop)
        index = stop
        low = min(low, loop_low)
        high = max(high, loop_high)
        null_keys += loop_nulls
        in_order = in_order and loop_in_order
    if pos != len(data):
        raise InvalidRecordError(f"incorrect declared batch size: {len(data) - pos} bytes after {count} records")
    if count == 0:
        low = high = 0
    return RecordsSummary(count, low, high, null_keys, in_order)


# -- the loop -----------------------------------------------------------------------------


def _walk_loop(data: Buffer, pos: int, first: int, stop: int) -> tuple[int, int, int, int, bool]:
    """Records first..stop-1 one by one; (position after them, low, high, null keys, in order).

    Reads may run past a record's end (never past the data: IndexError); the length check after
    each record refuses that. The timestamp bounds come from the widest zigzag-encoded delta.
    """
    widest = 0  # largest zigzag-encoded timestamp delta: |delta| <= (widest + 1) / 2
    null_keys = 0
    in_order = True
    zigzag = _ZIGZAG
    for expected in range(first << 1, stop << 1, 2):  # zigzag of the record index: 2 * index
        # length
        b = data[pos]
        if b < 0x80:
            length = zigzag[b]
            pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                raw = (b & 0x7F) | (c << 7)
                length = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                length, pos = read_varint(data, pos)
        start = pos
        # attributes (one byte, not checked, as in Kafka), then the timestamp delta
        b = data[pos + 1]
        if b < 0x80:
            if b > widest:
                widest = b
            pos += 2
        else:
            c = data[pos + 2]
            if c < 0x80:
                raw = (b & 0x7F) | (c << 7)
                if raw > widest:
                    widest = raw
                pos += 3
            else:
                delta, pos = read_varlong(data, pos + 1)
                raw = (delta << 1) ^ (delta >> 63)
                if raw > widest:
                    widest = raw
        # offset delta
        b = data[pos]
        if b < 0x80:
            if b != expected:
                in_order = False
            pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                if (b & 0x7F) | (c << 7) != expected:
                    in_order = False
                pos += 2
            else:
                offset_delta, pos = read_varint(data, pos)
                if offset_delta << 1 != expected:
                    in_order = False
        # key: an odd zigzag value is negative, a null
        b = data[pos]
        if b < 0x80:
            pos += 1
            if b & 1:
                null_keys += 1
            else:
                pos += b >> 1
        else:
            size, pos = read_varint(data, pos)
            if size < 0:
                null_keys += 1
            else:
                pos += size
        # value
        b = data[pos]
        if b < 0x80:
            pos += 1
            if not b & 1:
                pos += b >> 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                pos += 2
                if not b & 1:
                    pos += ((b & 0x7F) | (c << 7)) >> 1
            else:
                size, pos = read_varint(data, pos)
                if size > 0:
                    pos += size
        # headers: usually none
        if data[pos]:
            pos = _skip_headers(data, pos)
        else:
            pos += 1
        if pos - start != length:
            raise InvalidRecordError(
                f"record {expected >> 1}: its fields take {pos - start} bytes, its length says {length}"
            )
    return pos, -((widest + 1) >> 1), widest >> 1, null_keys, in_order


def _skip_headers(data: Buffer, pos: int) -> int:
    """The position after a record's headers (header count varint, then key/value pairs)."""
    headers, pos = read_varint(data, pos)
    if headers < 0:
        raise InvalidRecordError(f"invalid number of record headers {headers}")
    if headers > len(data) - pos:
        raise InvalidRecordError(f"{headers} record headers cannot fit in the {len(data) - pos} bytes left")
    for _ in range(headers):
        size, pos = read_varint(data, pos)
        if size < 0:
            raise InvalidRecordError(f"invalid negative header key size {size}")
        size, pos = read_varint(data, pos + size)
        if size > 0:
            pos += size
    return pos


# -- runs of one shape --------------------------------------------------------------------


class _Shape(NamedTuple):
    """The layout of a run's first record (offsets from the record's first byte)."""

    size: int  # bytes of the whole record, length varint included
    constants: tuple[tuple[int, int], ...]  # (offset, byte) that every record of the run repeats
    timestamp_at: int
    timestamp_bytes: int
    offset_at: int
    offset_bytes: int
    null_key: bool


def _uniform_run(data: Buffer, pos: int, index: int, count: int) -> tuple[int, int, int, int, int] | None:
    """The longest run of records shaped like the one at ``pos``: (records, size, low, high, null keys).

    None when that record cannot start a run (headers, a long varint, its offset delta out of order).
    """
    shape = _shape(data, pos, index)
    if shape is None:
        return None
    size = shape.size
    first_index, end_index = _OFFSET_CLASSES[shape.offset_bytes]
    limit = min(count - index, (len(data) - pos) // size, end_index - index)
    if limit < 1 or first_index > index:
        return None
    records = _fitting(data, pos, index, min(RUN_MIN, limit), shape)
    if records == RUN_MIN and limit > RUN_MIN:
        records = _fitting(data, pos, index, limit, shape)
    timestamps = data[pos + shape.timestamp_at : pos + records * size : size]
    if shape.timestamp_bytes == 1:
        widest = max(timestamps)  # zigzag: |delta| <= (raw + 1) / 2
        low_delta, high_delta = -((widest + 1) >> 1), widest >> 1
    else:  # two bytes
        low_delta, high_delta = -8192, 8191
    return records, size, low_delta, high_delta, records if shape.null_key else 0


def _fitting(data: Buffer, pos: int, index: int, records: int, shape: _Shape) -> int:
    """How many of the ``records`` records from ``pos`` have ``shape`` (see the module docstring).

    Each column is one strided slice, made bytes (a copy of one byte per record; none for bytes).
    """
    size = shape.size
    stop = pos + records * size
    fit = records
    for offset, byte in shape.constants:
        column = bytes(data[pos + offset : stop : size])
        if column.count(byte) != records:
            fit = min(fit, records - len(column.lstrip(bytes((byte,)))))
    at = pos + shape.timestamp_at
    if shape.timestamp_bytes == 2:
        # the first byte of each delta continues (>= 0x80), the second ends it
        column = bytes(data[at:stop:size])
        low = _LOW_BYTE.search(column)
        if low is not None:
            fit = min(fit, low.start())
        at += 1
    column = bytes(data[at:stop:size])
    if not column.isascii():
        fit = min(fit, _HIGH_BYTE.search(column).start())  # type: ignore[union-attr]
    first_index = _OFFSET_CLASSES[shape.offset_bytes][0]
    at = pos + shape.offset_at
    for byte in range(shape.offset_bytes):
        column = bytes(data[at + byte : stop : size])
        expected = _offset_delta_bytes(shape.offset_bytes, byte)[index - first_index : index - first_index + records]
        if column != expected:
            fit = min(fit, _common_prefix(column, expected))
    return fit


def _common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix of two equally long byte strings (a binary search)."""
    low, high = 0, len(a)
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _shape(data: Buffer, pos: int, index: int) -> _Shape | None:
    """Decode the record at ``pos`` (exactly as the loop would) and describe its layout."""
    length, start = read_varint(data, pos)
    attributes_at = start
    _, at = read_varlong(data, attributes_at + 1)
    timestamp_bytes = at - attributes_at - 1
    offset_at = at
    offset_delta, at = read_varint(data, at)
    offset_bytes = at - offset_at
    if offset_delta != index or timestamp_bytes > 2 or offset_bytes > 3:
        return None
    key_at = at
    key_size, at = read_varint(data, at)
    key_bytes = at - key_at
    at += max(key_size, 0)
    value_at = at
    value_size, at = read_varint(data, at)
    value_bytes = at - value_at
    at += max(value_size, 0)
    if at >= len(data) or data[at] != 0 or at + 1 - start != length:
        return None  # headers, or a malformed record: the loop reports it
    end = at + 1
    constants = [(offset, data[offset + pos]) for offset in range(start - pos)]
    constants += [(key_at - pos + i, data[key_at + i]) for i in range(key_bytes)]
    constants += [(value_at - pos + i, data[value_at + i]) for i in range(value_bytes)]
    constants.append((at - pos, 0))
    return _Shape(
        end - pos,
        tuple(constants),
        attributes_at + 1 - pos,
        timestamp_bytes,
        offset_at - pos,
        offset_bytes,
        key_size < 0,
    )


@functools.cache
def _offset_delta_bytes(width: int, byte: int) -> bytes:
    """Byte ``byte`` of the zigzag varint of each offset delta whose encoding takes ``width`` bytes.

    Offset delta i is zigzag 2 * i: byte 0 is (2 * i) & 0x7F, byte j >= 1 is (i >> (7 * j - 1)) & 0x7F,
    with the continuation bit on all but the last; built by repetition, not per index.
    """
    first, end = _OFFSET_CLASSES[width]
    flag = 0 if byte == width - 1 else 0x80
    if byte == 0:
        block = bytes(((i & 0x3F) << 1) | flag for i in range(64))
    else:
        step = 1 << (7 * byte - 1)
        block = b"".join(bytes(((v & 0x7F) | flag,)) * step for v in range(128))
    return (block * (end // len(block) + 1))[first:end]

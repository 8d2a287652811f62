"""The record headers share groups act on (kbroker's extensions), read on the share-fetch path only.

- `kbroker-deliver-at`: epoch milliseconds before which the record is not delivered to share groups;
- `kbroker-deliver-after-ms`: milliseconds after the record's timestamp (its CreateTime, or the
  LogAppendTime of a topic that uses it) before which it is not delivered. With both, the later time;
- `kbroker-tag`: one tag of the record (a record may carry several), for `kbroker.share.tag.filter`.

Values are UTF-8 text; the times are decimal integers that fit a Java long. A time that does not parse,
is negative or is larger is ignored (the record is delivered as if it had no such header).

Cost: a batch is decoded only when its records contain the bytes `kbroker-` at all, found with one
C-speed search over the records section (after decompression for a compressed batch). Other batches,
and control batches, cost that search and nothing per record.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol import compression
from protocol.records import HEADER_SIZE, RecordBatch

DELIVER_AT = "kbroker-deliver-at"
DELIVER_AFTER_MS = "kbroker-deliver-after-ms"
TAG = "kbroker-tag"
MARKER = b"kbroker-"
NO_TAGS: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class RecordInfo:
    """What the headers of one record say to the share-partition engine."""

    deliver_at: int = 0  # epoch ms; 0: now
    tags: frozenset[str] = NO_TAGS


def may_carry_headers(batch: RecordBatch) -> bool:
    """Whether the batch's records contain `kbroker-` anywhere (no false negatives; no per-record work)."""
    if batch.is_control or batch.records_count <= 0:
        return False
    if batch.compression == compression.NONE:
        buffer = batch.buffer
        start = batch.position + HEADER_SIZE
        end = batch.position + batch.size
        if isinstance(buffer, bytes | bytearray):
            return buffer.find(MARKER, start, end) >= 0
        return MARKER in bytes(buffer[start:end])
    return MARKER in batch.records_data()


def batch_record_info(batch: RecordBatch) -> dict[int, RecordInfo]:
    """Offset -> RecordInfo for the records of `batch` that carry a delivery time or tags."""
    if not may_carry_headers(batch):
        return {}
    found: dict[int, RecordInfo] = {}
    for record in batch.records():
        deliver_at = 0
        tags: list[str] = []
        for header in record.headers:
            key = header.key
            if not key.startswith("kbroker-") or header.value is None:
                continue
            if key == TAG:
                tags.append(header.value.decode("utf-8", "replace"))
            elif key == DELIVER_AT:
                deliver_at = max(deliver_at, _millis(header.value))
            elif key == DELIVER_AFTER_MS:
                after = _millis(header.value)
                if after > 0:
                    deliver_at = max(deliver_at, record.timestamp + after)
        if deliver_at > 0 or tags:
            found[record.offset] = RecordInfo(deliver_at, frozenset(tags))
    return found


def _millis(value: bytes) -> int:
    """A non-negative decimal that fits a Java long (at most 19 digits), else 0 (ignored)."""
    text = value.strip()
    if not text.isdigit() or len(text) > 19:
        return 0
    number = int(text)
    return number if number < 1 << 63 else 0

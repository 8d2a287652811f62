"""The key -> last offset map of the dirty section (Kafka's SkimpyOffsetMap).

Keys are stored as a 16-byte BLAKE2b digest, as Kafka stores an MD5 digest, so the map's
capacity depends only on `log.cleaner.dedupe.buffer.size`: 24 bytes a slot (digest + offset),
filled up to `log.cleaner.io.buffer.load.factor`. A full map ends a cleaning round early;
the rest of the dirty section is cleaned in the next round.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable

from kbroker.cleaner.txn_metadata import AbortedTxnLike, CleanedTransactionMetadata
from protocol.records import RecordBatch

HASH_SIZE = 16
# The cleaner thread decodes records in Python, holding the GIL; without a pause the event loop
# waits up to the interpreter's switch interval (5 ms) each time it needs the GIL back.
# Releasing it every 64 records (~0.3 ms of work) keeps that wait short.
GIL_YIELD_RECORDS = 64
ENTRY_SIZE = HASH_SIZE + 8


class GilYield:
    """Counts decoded records across batches and releases the GIL every GIL_YIELD_RECORDS of them.

    Counted per round, not per batch: a producer's batches often hold fewer than 64 records, and a
    count restarted at every batch would never reach a pause."""

    __slots__ = ("_left",)

    def __init__(self) -> None:
        self._left = GIL_YIELD_RECORDS

    def record(self) -> None:
        self._left -= 1
        if self._left == 0:
            self._left = GIL_YIELD_RECORDS
            time.sleep(0)  # the event loop thread takes the GIL meanwhile


def key_digest(key: bytes) -> bytes:
    return hashlib.blake2b(key, digest_size=HASH_SIZE).digest()


class OffsetMap:
    """Last offset of each key (by digest), and the last offset the map covers."""

    __slots__ = ("_offsets", "slots", "max_entries", "latest_offset")

    def __init__(self, buffer_bytes: int, load_factor: float = 0.9) -> None:
        self.slots = max(1, buffer_bytes // ENTRY_SIZE)
        self.max_entries = max(1, int(self.slots * load_factor))
        self._offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    def clear(self) -> None:
        self._offsets.clear()
        self.latest_offset = -1

    @property
    def is_full(self) -> bool:
        return len(self._offsets) >= self.max_entries

    def put(self, key: bytes, offset: int) -> None:
        self._offsets[key_digest(key)] = offset
        self.latest_offset = max(self.latest_offset, offset)

    def get(self, key: bytes) -> int:
        """The last offset seen for `key`, or -1."""
        return self._offsets.get(key_digest(key), -1)

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = max(self.latest_offset, offset)

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def utilization(self) -> float:
        return len(self._offsets) / self.slots


def build_offset_map(
    offset_map: OffsetMap,
    segments: Iterable[tuple[Iterable[RecordBatch], int]],
    start_offset: int,
    aborted: Iterable[AbortedTxnLike],
) -> bool:
    """Map each key of the dirty section to its last offset (Kafka's buildOffsetMap); True when the map filled.

    `segments` gives, for each dirty segment in order, its batches from the one holding
    `start_offset` and the next segment's base offset (the round's end for the last one).
    Aborted transactions' data and control batches add no key; every batch at or after
    `start_offset` moves the map's latest offset, and so does a gap up to the next segment.
    """
    offset_map.clear()
    gil = GilYield()
    transactions = CleanedTransactionMetadata()
    transactions.add_aborted_transactions(aborted)
    for batches, next_segment_start in segments:
        for batch in batches:
            if batch.is_control:
                transactions.on_control_batch_read(batch)
            elif not transactions.on_batch_read(batch):
                for record in batch.records():
                    gil.record()
                    if record.key is not None and record.offset >= start_offset:
                        if offset_map.is_full:
                            return True
                        offset_map.put(record.key, record.offset)
            if batch.last_offset >= start_offset:
                offset_map.update_latest_offset(batch.last_offset)
        offset_map.update_latest_offset(next_segment_start - 1)
    return False

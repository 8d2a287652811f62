"""BatchRecords and BatchCache: read one record of a batch without decoding the others (pure).

A Kafka producer writing to many queues packs thousands of queues' records in one (often
compressed) batch, and a virtual queue's read wants one or a few of them. BatchRecords keeps a
batch's records section (decompressed once) and where each record starts in it, found from the
records' length prefixes alone (4 bytes a record); `get(offset)` then decodes that one record:
O(record), not O(batch).

BatchCache keeps the BatchRecords of recently read batches, least recently used out first,
bounded by their bytes (sections, positions and a fixed overhead each): reading queue after
queue decompresses and walks each batch once while it stays cached. A batch larger than the
bound is kept alone. Keys carry the topic id, partition, base offset, size and CRC of the batch
as its header in the log says, so a batch written again at the same offset (a log truncated and
appended to anew) is never mistaken for the cached one.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import OrderedDict

from protocol.records import Record, RecordBatch, read_record, record_positions

CACHE_MIN_RECORDS = 16  # smaller batches are read again rather than kept
ENTRY_OVERHEAD = 256  # bytes an entry costs besides its section and positions: objects, key, dict slot

BatchKey = tuple[bytes, int, int, int, int]  # topic id, partition, base offset, batch length, CRC


class BatchRecords:
    __slots__ = ("append_time", "base_offset", "base_timestamp", "data", "offsets", "positions")

    def __init__(self, batch: RecordBatch) -> None:
        self.base_offset = batch.base_offset
        self.base_timestamp = batch.base_timestamp
        self.append_time: int | None = batch.max_timestamp if batch.is_log_append_time else None
        self.data = batch.records_data()
        self.positions = record_positions(self.data, batch.records_count)
        # A producer's batch holds offsets base, base + 1, ... (the broker assigns them so): record i
        # is offset base + i. Otherwise (a compacted batch) the offsets are read once, below.
        self.offsets: array[int] | None = None
        if batch.records_count != batch.last_offset_delta + 1:
            self._read_offsets()

    @property
    def count(self) -> int:
        return len(self.positions) - 1

    @property
    def size(self) -> int:
        """Bytes this entry holds, for the cache's bound."""
        offsets = 0 if self.offsets is None else self.offsets.itemsize * len(self.offsets)
        return len(self.data) + self.positions.itemsize * len(self.positions) + offsets + ENTRY_OVERHEAD

    def get(self, offset: int) -> Record | None:
        """The record at `offset`, decoding only it; None when the batch has no such offset."""
        if self.offsets is None:
            at = offset - self.base_offset
            if not 0 <= at < self.count:
                return None
        else:
            at = bisect_left(self.offsets, offset)
            if at == len(self.offsets) or self.offsets[at] != offset:
                return None
        record = self._record(at)
        if record.offset != offset:  # offset deltas not 0, 1, 2...: index them and look again
            if self.offsets is not None:
                return None
            self._read_offsets()
            return self.get(offset)
        return record

    def _record(self, at: int) -> Record:
        positions = self.positions
        return read_record(
            self.data, positions[at], positions[at + 1], self.base_offset, self.base_timestamp, self.append_time
        )

    def _read_offsets(self) -> None:
        self.offsets = array("q", (self._record(i).offset for i in range(self.count)))  # ascending, as Kafka writes


class BatchCache:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._batches: OrderedDict[BatchKey, BatchRecords] = OrderedDict()

    def __len__(self) -> int:
        return len(self._batches)

    def get(self, key: BatchKey) -> BatchRecords | None:
        batch = self._batches.get(key)
        if batch is not None:
            self._batches.move_to_end(key)
        return batch

    def put(self, key: BatchKey, batch: BatchRecords) -> None:
        if batch.count < CACHE_MIN_RECORDS or key in self._batches:
            return
        self._batches[key] = batch
        self.bytes += batch.size
        while self.bytes > self.max_bytes and len(self._batches) > 1:  # a batch larger than the bound: alone
            _, dropped = self._batches.popitem(last=False)
            self.bytes -= dropped.size

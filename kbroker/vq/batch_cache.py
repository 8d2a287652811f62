"""BatchCache: recently decoded record batches of the data topic, least recently used first out (pure).

A Kafka producer writing to many queues packs thousands of queues' records in one (often
compressed) batch; reading one queue's record means decoding that batch. The cache keeps the
decoded records of the last batches read, bounded by their total record count, so reading many
queues one after the other decodes each batch once. Record batches never change once written
(the data topic is not compacted), so entries need no invalidation; keys carry the topic id.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Sequence
from typing import Generic, TypeVar

T = TypeVar("T")

CACHE_MIN_RECORDS = 16  # smaller batches decode fast enough uncached


class DecodedBatch(Generic[T]):
    __slots__ = ("offsets", "records")

    def __init__(self, offsets: Sequence[int], records: Sequence[T]) -> None:
        self.offsets = offsets  # ascending
        self.records = records

    def get(self, offset: int) -> T | None:
        at = bisect_left(self.offsets, offset)
        return self.records[at] if at < len(self.offsets) and self.offsets[at] == offset else None


class BatchCache(Generic[T]):
    def __init__(self, max_records: int) -> None:
        self.max_records = max_records
        self.records = 0
        self._batches: OrderedDict[tuple[bytes, int, int], DecodedBatch[T]] = OrderedDict()

    def get(self, key: tuple[bytes, int, int]) -> DecodedBatch[T] | None:
        batch = self._batches.get(key)
        if batch is not None:
            self._batches.move_to_end(key)
        return batch

    def put(self, key: tuple[bytes, int, int], batch: DecodedBatch[T]) -> None:
        if len(batch.offsets) < CACHE_MIN_RECORDS or key in self._batches:
            return
        self._batches[key] = batch
        self.records += len(batch.offsets)
        while self.records > self.max_records and len(self._batches) > 1:  # a batch larger than the bound: alone
            _, dropped = self._batches.popitem(last=False)
            self.records -= len(dropped.offsets)

"""What a partition remembers of one producer id (Kafka's ProducerStateEntry and BatchMetadata)."""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

NUM_BATCHES_TO_RETAIN = 5  # Java producers keep at most 5 requests in flight per partition
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_OFFSET = -1
MAX_SEQUENCE = 0x7FFFFFFF  # sequences wrap from Int.MAX to 0


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """Whether `next_seq` directly follows `last_seq` (with the wrap at Int.MAX)."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == MAX_SEQUENCE)


def first_sequence(last_seq: int, offset_delta: int) -> int:
    """The first sequence of a batch from its last sequence and record span (undoing the wrap)."""
    first = last_seq - offset_delta
    return first + MAX_SEQUENCE + 1 if first < 0 else first


class BatchMetadata(NamedTuple):
    """One appended batch: its sequence range, offsets and max timestamp (a tuple: cheap to build)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return first_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


class ProducerStateEntry:
    """A producer id's epoch, its last batches (newest last) and, for transactions, the open one's first offset."""

    __slots__ = ("producer_id", "producer_epoch", "batches", "coordinator_epoch", "last_timestamp", "txn_first_offset")

    def __init__(
        self,
        producer_id: int,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        *,
        coordinator_epoch: int = -1,
        last_timestamp: int = -1,
        txn_first_offset: int = NO_OFFSET,
        batches: list[BatchMetadata] | None = None,
    ) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.batches: deque[BatchMetadata] = deque(batches or (), maxlen=NUM_BATCHES_TO_RETAIN)
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.txn_first_offset = txn_first_offset  # NO_OFFSET: no transaction open

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else NO_OFFSET

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """The retained batch with exactly this epoch and sequence range, if any."""
        if epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.last_seq == last_seq and batch.first_seq == first_seq:
                return batch
        return None

    def update_epoch(self, epoch: int) -> None:
        """A new epoch forgets the batches of the old one."""
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def add_batch(self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> None:
        self.update_epoch(epoch)
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def is_expired(self, now: int, expiration_ms: int) -> bool:
        """Kafka's rule: idle for producer.id.expiration.ms (by batch timestamp) and no open transaction."""
        return self.txn_first_offset == NO_OFFSET and now - self.last_timestamp >= expiration_ms

    def __repr__(self) -> str:
        return (
            f"ProducerStateEntry(producer_id={self.producer_id}, epoch={self.producer_epoch}, "
            f"batches={list(self.batches)}, last_timestamp={self.last_timestamp})"
        )

"""Producer state of one partition (Kafka's ProducerStateManager + ProducerAppendInfo rules).

For each producer id: its epoch, its last 5 batches (sequences, offsets, max
timestamp) and the first offset of its open transaction, if any. This is the
partition's one tracker of open transactions: the last stable offset and the
aborted-transaction index (txn_index.py) are derived from it. UnifiedLog asks
`check(...)` before a client append (a duplicate returns the original batch, a bad
sequence or epoch raises) and `apply(...)` for every appended batch with a producer
id, whoever wrote it. Both are O(1).

Kafka's rules for batches from clients, in order:
- no state for the producer (new, or expired): any sequence is accepted;
- same epoch and exactly the sequence range of a retained batch: duplicate;
- epoch below the current one: INVALID_PRODUCER_EPOCH (Produce answers 47 at every
  version since Kafka 2.7, not PRODUCER_FENCED);
- a higher epoch must start at sequence 0, else OUT_OF_ORDER_SEQUENCE_NUMBER;
- the same epoch must continue at last sequence + 1 (Int.MAX wraps to 0), else
  OUT_OF_ORDER_SEQUENCE_NUMBER.
Kafka 3.x/4.x no longer answers UNKNOWN_PRODUCER_ID to Produce: a producer whose
state expired may resume at any sequence.

State read back from the log (rebuild) is applied without these checks, as Kafka
does for replicated data. Producers idle for producer.id.expiration.ms (judged by
their last batch's max timestamp, as Kafka does) with no open transaction are
forgotten every producer.id.expiration.check.interval.ms.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import structlog

from kbroker.log.producer_entry import NO_OFFSET, NO_PRODUCER_EPOCH, ProducerStateEntry, in_sequence
from kbroker.log.producer_state_config import DEFAULT_EXPIRATION_CHECK_INTERVAL_MS, DEFAULT_EXPIRATION_MS, wall_clock_ms
from protocol.errors import ErrorCode, KafkaProtocolError
from protocol.records import RecordBatch

log = structlog.get_logger(__name__)

ABORT = 0  # ControlRecordType of transaction markers
COMMIT = 1


class ProducerStateError(KafkaProtocolError):
    """A batch refused for its producer epoch or sequence."""


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction ended by a marker in this partition (Kafka's CompletedTxn).

    first_offset: the producer's first transactional offset of this transaction in the
    partition, or the marker's own offset when the transaction wrote nothing here.
    """

    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    is_aborted: bool


@dataclass(frozen=True, slots=True)
class DuplicateBatch:
    """A batch already in the log: answer with its offsets, append nothing."""

    base_offset: int
    last_offset: int
    timestamp: int  # the original batch's max timestamp


class ProducerStateManager:
    """The producers of one partition; every method runs on the event loop thread."""

    def __init__(
        self,
        topic: str = "",
        partition: int = -1,
        *,
        expiration_ms: int = DEFAULT_EXPIRATION_MS,
        expiration_check_interval_ms: int = DEFAULT_EXPIRATION_CHECK_INTERVAL_MS,
        clock: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.expiration_ms = expiration_ms
        self.expiration_check_interval_ms = expiration_check_interval_ms
        self.clock = clock
        self.producers: dict[int, ProducerStateEntry] = {}
        self.next_expiration_check = clock() + expiration_check_interval_ms
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction here
        # called for every marker, by live appends and by rebuilds alike (UnifiedLog keeps the aborted index)
        self.on_txn_completed: Callable[[CompletedTxn], None] | None = None

    # -- client appends ------------------------------------------------
    def check(self, batch: RecordBatch) -> DuplicateBatch | None:
        """Validate a client batch before it is appended (nothing changes).

        Returns the original batch of a duplicate; raises ProducerStateError
        (INVALID_PRODUCER_EPOCH or OUT_OF_ORDER_SEQUENCE_NUMBER). Batches without
        a producer id always pass.
        """
        if batch.producer_id < 0:
            return None
        return self.check_sequence(batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.last_sequence)

    def check_sequence(self, producer_id: int, epoch: int, first_seq: int, last_seq: int) -> DuplicateBatch | None:
        now = self.clock()
        if now >= self.next_expiration_check:
            self.remove_expired(now)
        entry = self.producers.get(producer_id)
        if entry is None or entry.producer_epoch == NO_PRODUCER_EPOCH:
            return None
        duplicate = entry.find_duplicate(epoch, first_seq, last_seq)
        if duplicate is not None:
            return DuplicateBatch(duplicate.first_offset, duplicate.last_offset, duplicate.timestamp)
        current = entry.producer_epoch
        if epoch < current:
            raise ProducerStateError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"epoch {epoch} of producer {producer_id} is older than its current epoch {current}",
            )
        if epoch > current:
            if first_seq != 0:
                raise ProducerStateError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"new epoch {epoch} of producer {producer_id} must start at sequence 0, not {first_seq}",
                )
            return None
        if not in_sequence(entry.last_seq, first_seq):
            raise ProducerStateError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {producer_id} sent sequence {first_seq}, expected {entry.last_seq + 1}",
            )
        return None

    # -- state changes (client appends and rebuilds) -------------------
    def apply(
        self,
        producer_id: int,
        epoch: int,
        base_sequence: int,
        last_offset_delta: int,
        base_offset: int,
        timestamp: int,
        is_transactional: bool = False,
        is_control: bool = False,
        control_type: int = -1,
    ) -> None:
        """Update the producer's entry with one batch, without checks (rebuilds use this directly).

        For a control batch `control_type` is its ControlRecordType (0 ABORT, 1 COMMIT).
        """
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id)
        if is_control:  # a transaction marker ends the open transaction
            first = self.ongoing.pop(producer_id, base_offset)
            entry.update_epoch(epoch)
            entry.txn_first_offset = NO_OFFSET
            entry.last_timestamp = timestamp
            if self.on_txn_completed is not None and control_type in (ABORT, COMMIT):
                self.on_txn_completed(CompletedTxn(producer_id, first, base_offset, control_type == ABORT))
            return
        last_seq = (base_sequence + last_offset_delta) % 0x80000000 if base_sequence >= 0 else base_sequence
        entry.add_batch(epoch, last_seq, base_offset + last_offset_delta, last_offset_delta, timestamp)
        if is_transactional and entry.txn_first_offset == NO_OFFSET:
            entry.txn_first_offset = self.ongoing[producer_id] = base_offset

    # -- read side: open transactions -------------------------------------
    def ongoing_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of its open transaction in this partition."""
        return dict(self.ongoing)

    def first_unstable_offset(self) -> int | None:
        """The smallest first offset of any open transaction (the LSO is min(this, high watermark)), or None."""
        return min(self.ongoing.values()) if self.ongoing else None

    def set_coordinator_epoch(self, producer_id: int, coordinator_epoch: int) -> None:
        """The coordinator epoch of the marker just applied for `producer_id`."""
        entry = self.producers.get(producer_id)
        if entry is not None:
            entry.coordinator_epoch = coordinator_epoch

    def load(self, entries: Iterable[ProducerStateEntry]) -> None:
        for entry in entries:
            self.producers[entry.producer_id] = entry
            if entry.txn_first_offset != NO_OFFSET:
                self.ongoing[entry.producer_id] = entry.txn_first_offset

    def remove_expired(self, now: int | None = None) -> int:
        """Forget producers idle for producer.id.expiration.ms; return how many."""
        now = self.clock() if now is None else now
        self.next_expiration_check = now + self.expiration_check_interval_ms
        expired = [pid for pid, e in self.producers.items() if e.is_expired(now, self.expiration_ms)]
        for pid in expired:
            del self.producers[pid]
        if expired:
            log.info("producers_expired", topic=self.topic, partition=self.partition, count=len(expired))
        return len(expired)

    def entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def __len__(self) -> int:
        return len(self.producers)

"""The sequence and epoch rules of ProducerStateManager, as Kafka's ProducerAppendInfo applies them."""

from __future__ import annotations

import pytest

from kbroker.log.producer_entry import MAX_SEQUENCE, NUM_BATCHES_TO_RETAIN, first_sequence, in_sequence
from kbroker.log.producer_state import DuplicateBatch, ProducerStateError, ProducerStateManager
from protocol.errors import ErrorCode
from tests.log.producer_batches import idempotent_batch, record, view


class Clock:
    def __init__(self, now: int = 10_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


class Partition:
    """A state manager plus a pretend log end offset, appending like the Produce handler."""

    def __init__(self, **kwargs: int) -> None:
        self.clock = Clock()
        self.state = ProducerStateManager("t", 0, clock=self.clock, **kwargs)
        self.log_end_offset = 0

    def produce(self, pid: int, epoch: int, seq: int, records: int = 1, timestamp: int = 1_000) -> int:
        """Check and append; return the base offset (the original one for a duplicate)."""
        batch = view(idempotent_batch(pid, epoch, seq, records, timestamp=timestamp))
        duplicate = self.state.check(batch)
        if duplicate is not None:
            return duplicate.base_offset
        base = self.log_end_offset
        self.log_end_offset += records
        record(self.state, batch, base)
        return base


def error_of(partition: Partition, pid: int, epoch: int, seq: int, records: int = 1) -> ErrorCode:
    with pytest.raises(ProducerStateError) as info:
        partition.produce(pid, epoch, seq, records)
    return info.value.code


def test_in_sequence_and_wrap() -> None:
    assert in_sequence(-1, 0)
    assert in_sequence(4, 5)
    assert not in_sequence(4, 6)
    assert not in_sequence(4, 4)
    assert in_sequence(MAX_SEQUENCE, 0)
    assert not in_sequence(MAX_SEQUENCE - 1, 0)
    assert first_sequence(2, 5) == MAX_SEQUENCE - 2
    assert first_sequence(9, 3) == 6


def test_in_order_batches_get_increasing_offsets() -> None:
    p = Partition()
    assert [p.produce(7, 0, 0, 3), p.produce(7, 0, 3, 2), p.produce(7, 0, 5, 1)] == [0, 3, 5]
    entry = p.state.entry(7)
    assert entry is not None and entry.last_seq == 5 and entry.last_offset == 5


def test_batch_without_producer_id_is_not_checked_nor_recorded() -> None:
    p = Partition()
    batch = view(idempotent_batch(-1, -1, -1))
    assert p.state.check(batch) is None
    record(p.state, batch, 0)
    assert len(p.state) == 0


@pytest.mark.parametrize("which", range(NUM_BATCHES_TO_RETAIN))
def test_each_of_the_last_five_batches_is_a_duplicate(which: int) -> None:
    p = Partition()
    bases = [p.produce(1, 0, seq * 2, 2) for seq in range(7)]  # seq 0..13, offsets 0..13
    retained = list(range(7))[-NUM_BATCHES_TO_RETAIN:]
    index = retained[which]
    before = p.log_end_offset
    assert p.produce(1, 0, index * 2, 2) == bases[index]
    assert p.log_end_offset == before  # nothing appended


def test_duplicate_carries_offsets_and_timestamp() -> None:
    p = Partition()
    p.produce(1, 0, 0, 3, timestamp=5_000)
    duplicate = p.state.check(view(idempotent_batch(1, 0, 0, 3)))
    assert duplicate == DuplicateBatch(0, 2, 5_002)


def test_a_batch_older_than_the_window_is_out_of_order() -> None:
    p = Partition()
    for seq in range(NUM_BATCHES_TO_RETAIN + 1):
        p.produce(1, 0, seq)
    assert error_of(p, 1, 0, 0) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_partial_overlap_is_not_a_duplicate() -> None:
    p = Partition()
    p.produce(1, 0, 0, 4)
    assert error_of(p, 1, 0, 0, 2) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert error_of(p, 1, 0, 2, 2) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_gap_is_out_of_order_and_leaves_state_unchanged() -> None:
    p = Partition()
    p.produce(1, 0, 0, 2)
    assert error_of(p, 1, 0, 3) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert p.produce(1, 0, 2) == 2


def test_stale_epoch_is_invalid_producer_epoch() -> None:
    p = Partition()
    p.produce(1, 3, 0)
    assert error_of(p, 1, 2, 1) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert error_of(p, 1, 2, 0) == ErrorCode.INVALID_PRODUCER_EPOCH  # even a retry of an old epoch's batch


def test_new_epoch_must_start_at_zero_and_forgets_old_batches() -> None:
    p = Partition()
    p.produce(1, 0, 0, 3)
    assert error_of(p, 1, 1, 3) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert p.produce(1, 1, 0) == 3
    entry = p.state.entry(1)
    assert entry is not None and entry.producer_epoch == 1 and len(entry.batches) == 1
    assert error_of(p, 1, 0, 0, 3) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_unknown_producer_may_start_at_any_sequence() -> None:
    """Kafka 3.x/4.x: no state (new or expired producer) accepts any sequence; no UNKNOWN_PRODUCER_ID."""
    p = Partition()
    assert p.produce(9, 4, 1234) == 0
    assert p.produce(9, 4, 1235) == 1
    assert error_of(p, 9, 4, 1237) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_sequence_wraps_at_int_max() -> None:
    p = Partition()
    p.produce(1, 0, MAX_SEQUENCE - 1, 2)  # sequences MAX-1, MAX
    assert p.produce(1, 0, 0, 2) == 2
    assert p.produce(1, 0, 2) == 4


def test_batch_spanning_the_wrap_is_detected_as_duplicate() -> None:
    p = Partition()
    p.produce(1, 0, MAX_SEQUENCE - 2)
    assert p.produce(1, 0, MAX_SEQUENCE - 1, 4) == 1  # sequences MAX-1, MAX, 0, 1
    entry = p.state.entry(1)
    assert entry is not None and entry.last_seq == 1
    assert p.produce(1, 0, MAX_SEQUENCE - 1, 4) == 1
    assert p.log_end_offset == 5
    assert p.produce(1, 0, 2) == 5


def test_producers_are_independent() -> None:
    p = Partition()
    p.produce(1, 0, 0)
    p.produce(2, 0, 0)
    assert p.produce(1, 0, 1) == 2
    assert p.produce(2, 0, 0) == 1  # duplicate of producer 2's first batch
    assert error_of(p, 2, 0, 5) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_expiry_runs_every_check_interval_and_forgets_idle_producers() -> None:
    p = Partition(expiration_ms=1_000, expiration_check_interval_ms=500)
    p.produce(1, 0, 0, timestamp=10_000)
    p.produce(2, 0, 0, timestamp=10_800)
    p.clock.now = 11_000  # producer 1 has been idle for 1000 ms
    p.state.next_expiration_check = 11_000
    # producer 1 expires: its state is gone, so any sequence is accepted again
    assert p.produce(1, 0, 77) == 2
    assert p.state.entry(2) is not None
    assert p.state.next_expiration_check == 11_500
    p.clock.now = 11_499
    p.produce(3, 0, 0, timestamp=11_499)
    assert p.state.entry(2) is not None  # not yet checked again
    p.clock.now = 11_800
    p.state.check(view(idempotent_batch(3, 0, 1)))
    assert p.state.entry(2) is None and p.state.entry(3) is not None


def test_expiry_keeps_a_producer_with_an_open_transaction() -> None:
    p = Partition(expiration_ms=1_000)
    p.state.apply(5, 0, 0, 0, 0, 1_000, is_transactional=True)
    p.state.apply(6, 0, 0, 0, 1, 1_000)
    assert p.state.remove_expired(50_000) == 1
    entry = p.state.entry(5)
    assert entry is not None and entry.txn_first_offset == 0


def test_control_batch_ends_the_transaction_and_may_bump_the_epoch() -> None:
    p = Partition()
    p.state.apply(5, 0, 0, 1, 10, 1_000, is_transactional=True)
    p.state.apply(5, 0, 2, 0, 12, 1_000, is_transactional=True)
    entry = p.state.entry(5)
    assert entry is not None and entry.txn_first_offset == 10
    p.state.apply(5, 1, -1, 0, 13, 1_001, is_transactional=True, is_control=True)
    assert entry.txn_first_offset == -1 and entry.producer_epoch == 1 and not entry.batches

"""The in-flight engine of one share partition, on a fake clock (milliseconds passed by hand)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbroker.share.partition import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    RecordState,
    SharePartition,
    SharePartitionConfig,
    StateBatch,
)
from protocol.errors import ErrorCode

ACCEPT, RELEASE, REJECT, RENEW, GAP = (
    AcknowledgeType.ACCEPT,
    AcknowledgeType.RELEASE,
    AcknowledgeType.REJECT,
    AcknowledgeType.RENEW,
    AcknowledgeType.GAP,
)
CONFIG = SharePartitionConfig(record_lock_duration_ms=1000, delivery_count_limit=3, max_record_locks=10)


def ack(first: int, last: int, *types: int) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, tuple(int(t) for t in types))


def test_acquire_new_records_from_the_start_offset() -> None:
    sp = SharePartition(5, CONFIG)
    assert sp.acquire("a", 0, 3, fetch_end=100) == [AcquiredRecords(5, 7, 1)]
    assert sp.acquire("b", 0, 3, fetch_end=100) == [AcquiredRecords(8, 10, 1)]
    assert (sp.start_offset, sp.end_offset) == (5, 11)
    assert sp.state_of(6) == (RecordState.ACQUIRED, 1)


def test_acquire_stops_at_fetch_end_and_at_the_window() -> None:
    sp = SharePartition(0, CONFIG)
    assert sp.acquire("a", 0, 100, fetch_end=4) == [AcquiredRecords(0, 3, 1)]
    assert sp.acquire("a", 0, 100, fetch_end=4) == []
    assert sp.acquire("a", 0, 100, fetch_end=50) == [AcquiredRecords(4, 9, 1)]  # max_record_locks=10
    assert not sp.can_acquire()
    assert sp.acquire("b", 0, 100, fetch_end=50) == []
    assert sp.acknowledge("a", [ack(0, 1, ACCEPT)], 0) is ErrorCode.NONE
    assert sp.start_offset == 2
    assert sp.acquire("b", 0, 100, fetch_end=50) == [AcquiredRecords(10, 11, 1)]


def test_accept_moves_the_start_offset_only_past_a_contiguous_run() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", 0, 6, fetch_end=100)
    assert sp.acknowledge("a", [ack(2, 3, ACCEPT)], 0) is ErrorCode.NONE
    assert sp.start_offset == 0
    assert sp.acknowledge("a", [ack(0, 1, ACCEPT, REJECT)], 0) is ErrorCode.NONE
    assert sp.start_offset == 4
    assert sp.state_of(1) is None  # left the window


def test_release_redelivers_with_a_higher_delivery_count_first() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", 0, 4, fetch_end=100)
    assert sp.acknowledge("a", [ack(0, 3, ACCEPT, RELEASE, RELEASE, ACCEPT)], 0) is ErrorCode.NONE
    assert sp.start_offset == 1
    assert sp.acquire("b", 0, 5, fetch_end=100) == [
        AcquiredRecords(1, 2, 2),
        AcquiredRecords(4, 6, 1),
    ]


def test_delivery_count_limit_archives_on_release_and_expiry() -> None:
    sp = SharePartition(0, CONFIG)  # limit 3
    for attempt in range(1, 4):
        assert sp.acquire("a", attempt * 10_000, 1, fetch_end=2) == [AcquiredRecords(0, 0, attempt)]
        if attempt < 3:
            assert sp.acknowledge("a", [ack(0, 0, RELEASE)], attempt * 10_000) is ErrorCode.NONE
    assert sp.expire_locks(30_000 + 1000) == 1  # third delivery's lock expires: archived, not available
    assert sp.state_of(0) is None
    assert sp.start_offset == 1
    assert sp.acquire("a", 40_000, 5, fetch_end=2) == [AcquiredRecords(1, 1, 1)]


def test_reject_and_gap_archive() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", 0, 3, fetch_end=100)
    assert sp.acknowledge("a", [ack(0, 2, REJECT, GAP, ACCEPT)], 0) is ErrorCode.NONE
    assert sp.start_offset == 3
    assert sp.acquire("a", 0, 3, fetch_end=100) == [AcquiredRecords(3, 5, 1)]


def test_lock_expiry_makes_records_available_to_others() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", 0, 2, fetch_end=100)
    assert sp.next_deadline() == 1000
    assert sp.expire_locks(999) == 0
    assert sp.expire_locks(1000) == 2
    assert sp.acknowledge("a", [ack(0, 0, ACCEPT)], 1000) is ErrorCode.INVALID_RECORD_STATE
    assert sp.acquire("b", 1000, 5, fetch_end=2) == [AcquiredRecords(0, 1, 2)]


def test_renew_extends_the_lock() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", 0, 2, fetch_end=100)
    assert sp.acknowledge("a", [ack(0, 0, RENEW)], 900) is ErrorCode.NONE
    assert sp.expire_locks(1000) == 1  # offset 1 only
    assert sp.state_of(0) == (RecordState.ACQUIRED, 1)
    assert sp.expire_locks(1899) == 0
    assert sp.acknowledge("a", [ack(0, 0, ACCEPT)], 1899) is ErrorCode.NONE
    assert sp.start_offset == 1


def test_acknowledge_checks_owner_and_state_all_or_nothing() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", 0, 3, fetch_end=100)
    assert sp.acknowledge("b", [ack(0, 0, ACCEPT)], 0) is ErrorCode.INVALID_RECORD_STATE
    assert sp.acknowledge("a", [ack(0, 0, ACCEPT), ack(2, 5, ACCEPT)], 0) is ErrorCode.INVALID_RECORD_STATE
    assert sp.state_of(0) == (RecordState.ACQUIRED, 1)  # nothing applied
    assert sp.acknowledge("a", [ack(0, 2, ACCEPT, ACCEPT)], 0) is ErrorCode.INVALID_REQUEST
    assert sp.acknowledge("a", [ack(0, 0, 9)], 0) is ErrorCode.INVALID_REQUEST
    assert sp.acknowledge("a", [ack(1, 1, ACCEPT), ack(0, 0, ACCEPT)], 0) is ErrorCode.INVALID_REQUEST
    assert sp.acknowledge("a", [ack(1, 1, ACCEPT)], 0) is ErrorCode.NONE
    assert sp.acknowledge("a", [ack(1, 1, ACCEPT)], 0) is ErrorCode.INVALID_RECORD_STATE  # finished, above start
    assert sp.acknowledge("a", [ack(0, 0, ACCEPT)], 0) is ErrorCode.NONE
    assert sp.start_offset == 2
    # below the start offset every record is finished: acknowledging it again changes nothing, as on Kafka
    assert sp.acknowledge("a", [ack(0, 1, RELEASE)], 0) is ErrorCode.NONE
    assert sp.acknowledge("b", [ack(0, 2, ACCEPT)], 0) is ErrorCode.INVALID_RECORD_STATE  # 2 is a's
    assert sp.state_of(2) == (RecordState.ACQUIRED, 1) and sp.start_offset == 2


def test_member_leaving_releases_only_its_records() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", 0, 2, fetch_end=100)
    sp.acquire("b", 0, 2, fetch_end=100)
    assert sp.acquired_offsets("a") == [0, 1] and sp.acquired_offsets("b") == [2, 3]
    assert sp.release_member("a") == 2
    assert sp.acquired_by("b") == 2 and sp.acquired_offsets("a") == []
    assert sp.acquire("c", 0, 5, fetch_end=4) == [AcquiredRecords(0, 1, 2)]


def test_reset_and_log_start() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", 0, 5, fetch_end=100)
    sp.move_to_log_start(3)
    assert (sp.start_offset, sp.end_offset) == (3, 5)
    assert sp.acknowledge("a", [ack(3, 4, ACCEPT)], 0) is ErrorCode.NONE
    sp.reset(50)
    assert (sp.start_offset, sp.end_offset, sp.in_flight) == (50, 50, 0)
    assert sp.acquire("a", 0, 2, fetch_end=100) == [AcquiredRecords(50, 51, 1)]


def test_state_batches_round_trip_and_acquired_comes_back_available() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", 0, 6, fetch_end=100)
    sp.acknowledge("a", [ack(1, 5, ACCEPT, RELEASE, RELEASE, REJECT, ACCEPT)], 0)
    batches = sp.state_batches()
    assert batches == [
        StateBatch(0, 0, RecordState.AVAILABLE, 1),
        StateBatch(1, 1, RecordState.ACKNOWLEDGED, 1),
        StateBatch(2, 3, RecordState.AVAILABLE, 1),
        StateBatch(4, 4, RecordState.ARCHIVED, 1),
        StateBatch(5, 5, RecordState.ACKNOWLEDGED, 1),
    ]
    restored = SharePartition.restore(sp.start_offset, batches, CONFIG)
    assert (restored.start_offset, restored.end_offset) == (0, 6)
    assert restored.acquire("b", 0, 10, fetch_end=8) == [
        AcquiredRecords(0, 0, 2),
        AcquiredRecords(2, 3, 2),
        AcquiredRecords(6, 7, 1),
    ]


def test_restore_archives_records_at_the_delivery_limit() -> None:
    restored = SharePartition.restore(10, [StateBatch(10, 11, RecordState.AVAILABLE, 3)], CONFIG)
    assert restored.start_offset == 12


@pytest.mark.parametrize("members", [1, 3])
def test_every_record_delivered_once_when_all_accept(members: int) -> None:
    sp = SharePartition(0, SharePartitionConfig(max_record_locks=50))
    seen: list[int] = []
    now = 0
    while sp.start_offset < 1000:
        for m in range(members):
            for r in sp.acquire(f"m{m}", now, 7, fetch_end=1000):
                seen.extend(range(r.first_offset, r.last_offset + 1))
                assert sp.acknowledge(f"m{m}", [ack(r.first_offset, r.last_offset, ACCEPT)], now) is ErrorCode.NONE
        now += 1
    assert seen == sorted(seen) and seen == list(range(1000))


OPS = st.lists(
    st.tuples(
        st.sampled_from(["acquire", "ack", "expire", "leave", "produce"]),
        st.integers(0, 2),  # member
        st.integers(1, 6),  # count / how far the clock moves
        st.sampled_from([ACCEPT, RELEASE, REJECT, RENEW, GAP]),
    ),
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_random_operations_keep_the_invariants(ops: list[tuple[str, int, int, AcknowledgeType]]) -> None:
    """Whatever happens: a finished (accepted/archived) record is never acquired again, nobody acknowledges
    what it does not hold, the start offset never goes back, the window stays within the lock limit, and
    no record is delivered more than the delivery limit."""
    sp = SharePartition(0, CONFIG)
    now, log_end = 0, 5
    held: dict[str, set[int]] = {f"m{i}": set() for i in range(3)}
    finished: set[int] = set()
    deliveries: dict[int, int] = {}
    for op, m, n, kind in ops:
        member = f"m{m}"
        start = sp.start_offset
        if op == "produce":
            log_end += n
        elif op == "acquire":
            for r in sp.acquire(member, now, n, log_end):
                for offset in range(r.first_offset, r.last_offset + 1):
                    assert offset not in finished
                    deliveries[offset] = deliveries.get(offset, 0) + 1
                    assert r.delivery_count == sp.state_of(offset)[1] <= CONFIG.delivery_count_limit  # type: ignore[index]
                    for others in held.values():
                        others.discard(offset)
                    held[member].add(offset)
        elif op == "ack" and held[member]:
            offset = min(held[member])
            state = sp.state_of(offset)
            still_held = state is not None and state[0] is RecordState.ACQUIRED
            code = sp.acknowledge(member, [ack(offset, offset, kind)], now)
            if code is ErrorCode.NONE:
                # As Kafka does, an acknowledgement below the start offset is skipped: that record is finished
                # (here archived at the delivery limit after its lock expired), so there is nothing to refuse.
                assert still_held or offset < start
                if kind is not RENEW or not still_held:
                    held[member].discard(offset)
                if kind in (ACCEPT, REJECT, GAP):
                    finished.add(offset)
            else:
                assert code is ErrorCode.INVALID_RECORD_STATE
                held[member].discard(offset)  # its lock expired and someone else may hold it now
        elif op == "expire":
            now += n * 300
            sp.expire_locks(now)
        elif op == "leave":
            sp.release_member(member)
            held[member].clear()
        assert sp.start_offset >= start
        assert sp.in_flight <= CONFIG.max_record_locks
        for offset in finished:  # finished records are out of the window or terminal in it
            state = sp.state_of(offset)
            assert state is None or state[0] in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
    assert all(count <= CONFIG.delivery_count_limit for count in deliveries.values())


def test_a_huge_acknowledgement_range_is_refused_at_once() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", 0, 3, fetch_end=100)
    assert sp.acknowledge("a", [ack(0, 2**62, ACCEPT)], 0) is ErrorCode.INVALID_RECORD_STATE
    assert sp.acknowledge("a", [ack(-5, 1, ACCEPT)], 0) is ErrorCode.INVALID_REQUEST
    assert sp.state_of(0) == (RecordState.ACQUIRED, 1)


def test_restore_ignores_runs_no_window_could_hold() -> None:
    restored = SharePartition.restore(0, [StateBatch(5, 2**60, RecordState.ACKNOWLEDGED, 1)], CONFIG)
    assert (restored.start_offset, restored.end_offset) == (0, 0)

"""kbroker's extensions of the in-flight engine, on a fake clock: delayed delivery, tag filtering, dead letters."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kbroker.share.partition import (
    DELIVERY_LIMIT,
    REJECTED,
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    DeadLetter,
    RecordState,
    SharePartition,
    SharePartitionConfig,
)
from kbroker.share.record_headers import RecordInfo
from kbroker.share.tag_filter import parse_tag_filter
from protocol.errors import ErrorCode

CONFIG = SharePartitionConfig(record_lock_duration_ms=1000, delivery_count_limit=3, max_record_locks=10)


def ack(first: int, last: int, kind: AcknowledgeType) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, (int(kind),))


def offsets(ranges: list[AcquiredRecords]) -> list[int]:
    return [o for r in ranges for o in range(r.first_offset, r.last_offset + 1)]


def test_a_delayed_record_is_held_and_later_records_go_first() -> None:
    sp = SharePartition(0, CONFIG)
    info = {1: RecordInfo(deliver_at=5000)}
    assert offsets(sp.acquire("a", 1000, 10, 4, info)) == [0, 2, 3]
    assert sp.state_of(1) == (RecordState.AVAILABLE, 0)
    assert sp.held == 1 and sp.next_deadline() == 2000  # the locks of 0, 2, 3 expire first
    assert sp.acknowledge("a", [ack(0, 0, AcknowledgeType.ACCEPT), ack(2, 3, AcknowledgeType.ACCEPT)], 1500) == 0
    assert sp.start_offset == 1  # the start offset cannot pass the held record
    sp.expire_locks(2000)  # (stale lock entries leave the heap)
    assert sp.next_deadline() == 5000
    assert sp.acquire("b", 4999, 10, 4) == []
    assert sp.release_due(4999) == 0
    assert sp.release_due(5000) == 1
    assert sp.acquire("b", 5000, 10, 4) == [AcquiredRecords(1, 1, 1)]  # delivery count 1: its first delivery
    assert sp.acknowledge("b", [ack(1, 1, AcknowledgeType.ACCEPT)], 5001) == 0
    assert (sp.start_offset, sp.in_flight, sp.held) == (4, 0, 0)


def test_acquire_releases_due_records_itself_and_serves_them_before_new_ones() -> None:
    sp = SharePartition(0, CONFIG)
    assert offsets(sp.acquire("a", 0, 2, 2, {0: RecordInfo(deliver_at=100)})) == [1]
    # no tick in between: acquire looks at the clock it is given
    assert offsets(sp.acquire("a", 100, 2, 10)) == [0, 2]


def test_held_records_fill_the_window() -> None:
    """Held records count towards max_record_locks: a window full of them stops new acquisitions."""
    sp = SharePartition(0, CONFIG)
    info = {o: RecordInfo(deliver_at=10_000) for o in range(10)}
    assert sp.acquire("a", 0, 100, 50, info) == []
    assert (sp.in_flight, sp.held, sp.end_offset) == (10, 10, 10)
    assert not sp.can_acquire()
    assert sp.acquire("a", 9_999, 100, 50) == []
    assert offsets(sp.acquire("a", 10_000, 100, 50)) == list(range(10))  # then the window moves on as usual
    assert sp.acknowledge("a", [ack(0, 9, AcknowledgeType.ACCEPT)], 10_001) == 0
    assert offsets(sp.acquire("a", 10_001, 100, 50)) == list(range(10, 20))


def test_a_released_record_is_not_held_again() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", 0, 1, 1, {0: RecordInfo(deliver_at=50)})
    assert offsets(sp.acquire("a", 50, 1, 1)) == [0]
    assert sp.acknowledge("a", [ack(0, 0, AcknowledgeType.RELEASE)], 60) == 0
    assert sp.acquire("b", 60, 1, 1) == [AcquiredRecords(0, 0, 2)]


def test_a_past_delivery_time_is_no_delay() -> None:
    sp = SharePartition(0, CONFIG)
    assert offsets(sp.acquire("a", 1000, 5, 2, {0: RecordInfo(deliver_at=999), 1: RecordInfo(deliver_at=1000)})) == [
        0,
        1,
    ]


def test_held_state_is_persisted_as_available_with_no_delivery_and_resolved_after_restore() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", 0, 10, 4, {1: RecordInfo(deliver_at=5000), 2: RecordInfo(deliver_at=3000)})
    assert sp.acknowledge("a", [ack(0, 0, AcknowledgeType.ACCEPT), ack(3, 3, AcknowledgeType.ACCEPT)], 10) == 0
    restored = SharePartition.restore(sp.start_offset, sp.state_batches(), CONFIG)
    assert restored.unresolved() == [1, 2]
    assert restored.acquire("b", 10_000, 10, 4) == []  # unresolved: not delivered before their headers are read
    assert restored.resolve({1: RecordInfo(deliver_at=5000), 2: RecordInfo(deliver_at=30_000)}, 10_000) == 1
    assert restored.unresolved() == []
    assert restored.acquire("b", 10_000, 10, 4) == [AcquiredRecords(1, 1, 1)]
    assert restored.next_deadline() == 11_000
    restored.release_due(30_000)
    assert restored.acquire("b", 30_000, 10, 4) == [AcquiredRecords(2, 2, 1)]


def test_tag_filter_archives_records_that_do_not_match() -> None:
    config = SharePartitionConfig(1000, 3, 10, tag_filter=parse_tag_filter("TagA || TagB"))
    sp = SharePartition(0, config)
    info = {
        0: RecordInfo(tags=frozenset({"TagA"})),
        2: RecordInfo(tags=frozenset({"TagC"})),
        3: RecordInfo(tags=frozenset({"TagB", "x"})),
    }
    assert offsets(sp.acquire("a", 0, 10, 5, info)) == [0, 3]  # 1 and 4 have no tag, 2 the wrong one
    for offset in (1, 2, 4):
        assert sp.state_of(offset) == (RecordState.ARCHIVED, 0)
    assert sp.acknowledge("a", [ack(0, 0, AcknowledgeType.ACCEPT)], 1) == 0
    assert sp.start_offset == 3
    assert sp.acknowledge("a", [ack(3, 3, AcknowledgeType.ACCEPT)], 1) == 0
    assert (sp.start_offset, sp.in_flight) == (5, 0)


def test_a_filter_change_applies_to_records_not_acquired_yet() -> None:
    sp = SharePartition(0, SharePartitionConfig(1000, 3, 10, tag_filter=parse_tag_filter("a")))
    info = {0: RecordInfo(tags=frozenset({"a"})), 1: RecordInfo(deliver_at=100, tags=frozenset({"b"}))}
    assert offsets(sp.acquire("m", 0, 10, 2, info)) == [0]
    assert sp.acknowledge("m", [ack(0, 0, AcknowledgeType.RELEASE)], 1) == 0
    sp.config = SharePartitionConfig(1000, 3, 10, tag_filter=parse_tag_filter("b"))
    # offset 0 was acquired once already: it stays deliverable; offset 1 is judged when it becomes due
    info = {2: RecordInfo(tags=frozenset({"a"})), 3: RecordInfo(tags=frozenset({"b"}))}
    assert offsets(sp.acquire("m", 100, 10, 4, info)) == [0, 1, 3]
    assert sp.state_of(2) == (RecordState.ARCHIVED, 0)


def test_a_delayed_record_meets_the_filter_in_force_at_its_first_acquisition() -> None:
    sp = SharePartition(0, SharePartitionConfig(1000, 3, 10, tag_filter=parse_tag_filter("a")))
    info = {0: RecordInfo(deliver_at=100, tags=frozenset({"b"})), 1: RecordInfo(deliver_at=100, tags=frozenset({"a"}))}
    assert sp.acquire("m", 0, 10, 2, info) == []
    assert sp.release_due(100) == 2  # due: acquirable, judged when acquired
    sp.config = SharePartitionConfig(1000, 3, 10, tag_filter=parse_tag_filter("b"))
    assert sp.acquire("m", 100, 10, 2) == [AcquiredRecords(0, 0, 1)]
    assert sp.state_of(1) == (RecordState.ARCHIVED, 0)
    assert sp.acknowledge("m", [ack(0, 0, AcknowledgeType.ACCEPT)], 101) == 0
    assert (sp.start_offset, sp.in_flight) == (2, 0)


def test_dead_letters_for_reject_and_the_delivery_limit_only() -> None:
    sp = SharePartition(0, SharePartitionConfig(1000, 2, 10, dead_letters=True))
    sp.acquire("a", 0, 4, 4)
    types = (AcknowledgeType.REJECT, AcknowledgeType.GAP, AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE)
    assert sp.acknowledge("a", [AcknowledgementBatch(0, 3, tuple(int(t) for t in types))], 1) == ErrorCode.NONE
    assert sp.dead_letters == [DeadLetter(0, 1, REJECTED)]
    assert sp.acquire("a", 2, 1, 4) == [AcquiredRecords(3, 3, 2)]
    sp.expire_locks(2000)  # a second delivery that was not acknowledged: the limit (2)
    assert sp.state_of(3) is None and sp.start_offset == 4
    assert sp.dead_letters == [DeadLetter(0, 1, REJECTED), DeadLetter(3, 2, DELIVERY_LIMIT)]
    sp.acquire("b", 3000, 1, 5)
    sp.release_member("b")
    assert sp.dead_letters == [DeadLetter(0, 1, REJECTED), DeadLetter(3, 2, DELIVERY_LIMIT)]  # count 1 < 2


def test_no_dead_letters_are_kept_without_a_dead_letter_topic() -> None:
    sp = SharePartition(0, SharePartitionConfig(1000, 2, 10))
    sp.acquire("a", 0, 1, 1)
    assert sp.acknowledge("a", [ack(0, 0, AcknowledgeType.REJECT)], 1) == 0
    assert sp.dead_letters == []


def test_a_restore_past_the_limit_is_a_dead_letter() -> None:
    sp = SharePartition(0, SharePartitionConfig(1000, 2, 10))
    sp.acquire("a", 0, 1, 1)
    sp.release_member("a")
    sp.acquire("a", 0, 1, 1)  # the second delivery, then a crash: written as available with count 2
    restored = SharePartition.restore(0, sp.state_batches(), SharePartitionConfig(1000, 2, 10, dead_letters=True))
    assert restored.dead_letters == [DeadLetter(0, 2, DELIVERY_LIMIT)]
    assert restored.start_offset == 1


def test_aborted_held_records_are_archived() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", 0, 3, 3, {1: RecordInfo(deliver_at=100)})
    assert sp.archive_acquired("a", 0, 2) == 3
    assert (sp.start_offset, sp.held) == (3, 0)
    assert sp.release_due(100) == 0


def test_records_deleted_from_the_log_are_no_longer_held() -> None:
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", 0, 3, 3, {0: RecordInfo(deliver_at=100), 2: RecordInfo(deliver_at=100)})
    sp.move_to_log_start(1)
    assert sp.held == 1
    assert sp.release_due(100) == 1
    assert sp.acquire("b", 100, 5, 3) == [AcquiredRecords(2, 2, 1)]


def test_holds_that_went_away_leave_no_deadline_behind() -> None:
    """A held record archived (aborted) or deleted from the log leaves a stale entry that release_due drops, so the
    runtime's timer does not keep waking for it."""
    sp = SharePartition(0, CONFIG)
    sp.acquire("a", 0, 3, 3, {o: RecordInfo(deliver_at=100 + o) for o in range(3)})
    sp.archive_acquired("a", 0, 0)
    sp.move_to_log_start(2)
    assert sp.held == 1 and sp.next_deadline() == 100
    assert sp.release_due(101) == 0  # two stale entries dropped
    assert sp.next_deadline() == 102
    assert sp.release_due(102) == 1
    assert sp.next_deadline() is None


def test_refused_records_at_the_head_of_an_empty_window_are_skipped_without_entries() -> None:
    sp = SharePartition(0, SharePartitionConfig(1000, 3, 10, tag_filter=parse_tag_filter("a")))
    assert sp.acquire("m", 0, 1000, 500) == []  # 500 untagged records: more than the window, no entry each
    assert (sp.start_offset, sp.end_offset, sp.in_flight) == (500, 500, 0)
    info = {502: RecordInfo(tags=frozenset({"a"})), 505: RecordInfo(tags=frozenset({"b"}))}
    assert offsets(sp.acquire("m", 0, 1000, 508, info)) == [502]
    # 500-501 skipped; 503-507 come after an acquired record: archived entries in the window
    assert (sp.start_offset, sp.end_offset) == (502, 508)
    assert [sp.state_of(o) for o in (503, 505, 507)] == [(RecordState.ARCHIVED, 0)] * 3
    assert sp.acknowledge("m", [ack(502, 502, AcknowledgeType.ACCEPT)], 1) == 0
    assert (sp.start_offset, sp.in_flight) == (508, 0)


LOG_SIZE = 40
TAGS = [frozenset(), frozenset({"a"}), frozenset({"b"}), frozenset({"a", "b"})]
FILTERS = [None, "a", "a || b", "!a", "a && !b"]
LOG = st.lists(
    st.tuples(st.sampled_from([0, 0, 500, 2000]), st.sampled_from(TAGS)), min_size=LOG_SIZE, max_size=LOG_SIZE
)
STEPS = st.lists(
    st.tuples(
        st.sampled_from(["produce", "acquire", "accept", "release", "reject", "time", "filter", "restore"]),
        st.integers(0, 1),
        st.integers(1, 8),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(LOG, STEPS)
def test_random_steps_with_holds_and_filters_keep_the_invariants(
    log: list[tuple[int, frozenset[str]]], steps: list[tuple[str, int, int]]
) -> None:
    """A record is never first delivered before its time, nor (at its first delivery) against the filter in
    force; a finished record never comes back, also across a restore; the start offset never passes a held
    record; the count of acquirable records matches the states."""
    infos = {o: RecordInfo(delay + 1000 if delay else 0, tags) for o, (delay, tags) in enumerate(log) if delay or tags}
    config = SharePartitionConfig(1000, 3, 8, dead_letters=True)
    sp = SharePartition(0, config)
    now, log_end = 1000, 0
    finished: set[int] = set()
    holding: dict[str, set[int]] = {"m0": set(), "m1": set()}
    for op, m, n in steps:
        member = f"m{m}"
        if op == "produce":
            log_end = min(LOG_SIZE, log_end + n)
        elif op == "acquire":
            for r in sp.acquire(member, now, n, log_end, {o: i for o, i in infos.items() if o < log_end}):
                for offset in range(r.first_offset, r.last_offset + 1):
                    assert offset not in finished
                    item = infos.get(offset, RecordInfo())
                    if r.delivery_count == 1:
                        assert item.deliver_at <= now
                        assert sp.config.tag_filter is None or sp.config.tag_filter.matches(item.tags)
                    for others in holding.values():
                        others.discard(offset)
                    holding[member].add(offset)
        elif op in ("accept", "release", "reject") and holding[member]:
            offset = min(holding[member])
            kind = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE}.get(
                op, AcknowledgeType.REJECT
            )
            if sp.acknowledge(member, [ack(offset, offset, kind)], now) == 0 and kind is not AcknowledgeType.RELEASE:
                finished.add(offset)
            holding[member].discard(offset)
        elif op == "time":
            now += n * 300
            sp.expire_locks(now)
            sp.release_due(now)
        elif op == "filter":
            text = FILTERS[n % len(FILTERS)]
            config = SharePartitionConfig(1000, 3, 8, tag_filter=None if text is None else parse_tag_filter(text))
            sp.config = config
        elif op == "restore":  # a kill -9: what the state says, held times read again from the log
            sp = SharePartition.restore(sp.start_offset, sp.state_batches(), config)
            sp.resolve({o: infos[o] for o in sp.unresolved() if o in infos}, now)
            holding = {"m0": set(), "m1": set()}
        states = {o: sp.state_of(o) for o in range(sp.start_offset, sp.end_offset)}
        for offset in sp._held:
            assert sp.start_offset <= offset < sp.end_offset
            assert states[offset] == (RecordState.AVAILABLE, 0)
        available = [o for o, s in states.items() if s and s[0] is RecordState.AVAILABLE and o not in sp._held]
        assert sp._available == len(available)
        assert sp.in_flight <= 8

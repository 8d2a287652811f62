"""Delivery headers of a virtual queue's records, and reading in order."""

from __future__ import annotations

from kbroker.vq.records import QueueRecord, deliverable, due_at
from protocol.records import Header


def record(offset: int, *headers: tuple[str, bytes | None], timestamp: int = 1000) -> QueueRecord:
    return QueueRecord(offset, timestamp, b"v", tuple(Header(k, v) for k, v in headers))


def test_due_at() -> None:
    assert due_at(1000, []) is None
    assert due_at(1000, [Header("kbroker-deliver-at", b"5000")]) == 5000
    assert due_at(1000, [Header("kbroker-deliver-after-ms", b"250")]) == 1250
    both = [Header("kbroker-deliver-at", b"1100"), Header("kbroker-deliver-after-ms", b"250")]
    assert due_at(1000, both) == 1250  # the later time wins
    assert due_at(1000, [Header("kbroker-deliver-at", b"soon")]) is None  # ignored
    assert due_at(1000, [Header("kbroker-deliver-at", None)]) is None


def test_delivery_times_are_read_as_share_groups_read_them() -> None:
    """A time that is not ASCII digits or does not fit a Java long is ignored (due at once) by a virtual queue
    as by a share group: a Kafka producer's header means the same to both."""
    from kbroker.share.record_headers import _millis as share_millis

    for raw in (b"0", b"5000", b" 7 ", b"9223372036854775807", b"9223372036854775808", b"1" * 20, b"-5", b"",
                "\u00b2".encode(), "\u0663".encode(), b"1e3", b"12x"):  # fmt: skip
        due = due_at(1000, [Header("kbroker-deliver-at", raw)])
        assert (due or 0) == share_millis(raw), raw
    assert due_at(1000, [Header("kbroker-deliver-at", b"9223372036854775808")]) is None
    assert due_at(1000, [Header("kbroker-deliver-at", b"9223372036854775807")]) == (1 << 63) - 1


def test_tag() -> None:
    assert record(0, ("kbroker-tag", b"urgent")).tag == "urgent"
    assert record(0).tag is None


def test_a_record_not_yet_due_holds_the_ones_behind_it() -> None:
    records = [record(0), record(1, ("kbroker-deliver-at", b"2000")), record(2)]
    entries = [(r.offset, r) for r in records]
    ready, next_offset, blocked = deliverable(entries, now=1500, start=0)
    assert [r.offset for r in ready] == [0] and next_offset == 1 and blocked == 2000
    ready, next_offset, blocked = deliverable(entries, now=2000, start=0)
    assert [r.offset for r in ready] == [0, 1, 2] and next_offset == 3 and blocked is None
    assert deliverable([], now=0, start=7) == ([], 7, None)


def test_records_not_to_deliver_are_passed() -> None:
    # an aborted transaction's records (None) are skipped, and the next offset moves past them
    entries = [(3, None), (5, record(5)), (9, None)]
    ready, next_offset, blocked = deliverable(entries, now=0, start=2)
    assert [r.offset for r in ready] == [5] and next_offset == 10 and blocked is None
    assert deliverable([(4, None)], now=0, start=0) == ([], 5, None)

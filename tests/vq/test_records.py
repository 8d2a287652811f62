"""Delivery headers of a virtual queue's records, and reading in order."""

from __future__ import annotations

from kbroker.vq.records import QueueRecord, deliverable, due_at
from protocol.records import Header


def record(offset: int, *headers: tuple[str, bytes | None], timestamp: int = 1000) -> QueueRecord:
    return QueueRecord(offset, timestamp, b"v", [Header(k, v) for k, v in headers])


def test_due_at() -> None:
    assert due_at(1000, []) is None
    assert due_at(1000, [Header("kbroker-deliver-at", b"5000")]) == 5000
    assert due_at(1000, [Header("kbroker-deliver-after-ms", b"250")]) == 1250
    both = [Header("kbroker-deliver-at", b"1100"), Header("kbroker-deliver-after-ms", b"250")]
    assert due_at(1000, both) == 1250  # the later time wins
    assert due_at(1000, [Header("kbroker-deliver-at", b"soon")]) is None  # ignored
    assert due_at(1000, [Header("kbroker-deliver-at", None)]) is None


def test_tag() -> None:
    assert record(0, ("kbroker-tag", b"urgent")).tag == "urgent"
    assert record(0).tag is None


def test_a_record_not_yet_due_holds_the_ones_behind_it() -> None:
    records = [record(0), record(1, ("kbroker-deliver-at", b"2000")), record(2)]
    ready, blocked = deliverable(records, now=1500)
    assert [r.offset for r in ready] == [0] and blocked == 2000
    ready, blocked = deliverable(records, now=2000)
    assert [r.offset for r in ready] == [0, 1, 2] and blocked is None
    assert deliverable([], now=0) == ([], None)

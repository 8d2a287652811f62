"""A share group's acquisition locks expire when the virtual clock passes their duration."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Producer, ShareConsumer

from kbroker.testing import InProcessBroker


def poll(consumer: Any, seconds: float) -> list[tuple[int, int]]:
    """(offset, delivery count) of the records acquired within `seconds`, not acknowledged."""
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not got:
        got = [(m.offset(), m.delivery_count()) for m in consumer.poll(0.2) if not m.error()]
    return got


def test_unacknowledged_records_come_back_after_the_lock_expires(kbroker: InProcessBroker) -> None:
    producer = Producer({"bootstrap.servers": kbroker.bootstrap})
    for i in range(3):
        producer.produce("jobs", f"job{i}".encode())
    assert producer.flush(10) == 0
    config = {
        "bootstrap.servers": kbroker.bootstrap,
        "group.id": "workers",
        "share.acknowledgement.mode": "explicit",
    }
    first = ShareConsumer({**config, "client.id": "first"})
    first.subscribe(["jobs"])
    # share.auto.offset.reset is latest: the group starts at the end, so produce again once it has joined
    deadline = time.monotonic() + 20
    acquired: list[tuple[int, int]] = []
    while not acquired and time.monotonic() < deadline:
        producer.produce("jobs", b"job")
        producer.flush(10)
        acquired = poll(first, 1.0)
    assert acquired and all(count == 1 for _, count in acquired)
    second = ShareConsumer({**config, "client.id": "second"})
    second.subscribe(["jobs"])
    assert poll(second, 1.5) == [], "the records are locked by the first consumer"
    kbroker.advance(31)  # group.share.record.lock.duration.ms is 30 s: the locks expire
    again = poll(second, 15)
    assert {offset for offset, _ in again} >= {offset for offset, _ in acquired[:1]}
    assert all(count == 2 for offset, count in again if offset in dict(acquired))
    second.close()
    first.close()
    cleared = kbroker.reset()
    assert (cleared["share_groups"], cleared["topics"]) == (1, 1)

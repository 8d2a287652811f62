"""Scenario 7: a topic is auto-created (num.partitions, default 1) by a produce and by a metadata request."""

from __future__ import annotations

from tests.compat.clients.adapter import Record
from tests.compat.support import Compat


def test_auto_create_on_produce(compat: Compat) -> None:
    compat.need(ops=("produce", "consume"))
    topic = compat.topic("auto-produce")
    produced = compat.client.produce(compat.bootstrap, topic, [Record(b"k", b"first")])
    assert produced[0][0] in (0, -1), "one partition (num.partitions=1), or -1 where the client cannot tell"
    result = compat.client.consume(compat.bootstrap, topic, [0], "earliest", 1, timeout_s=20)
    assert result.error is None, result.error_message
    assert [(r.offset, r.value) for r in result.records] == [(0, b"first")]


def test_auto_create_on_metadata(compat: Compat) -> None:
    compat.need(ops=("partitions_for",))
    topic = compat.topic("auto-metadata")
    assert compat.client.partitions_for(compat.bootstrap, topic) == [0]

"""Scenario 9: DeleteRecords, then consuming from earliest starts at the new log start offset."""

from __future__ import annotations

from tests.compat.clients.adapter import Record
from tests.compat.support import Compat, assert_dense

COUNT = 10


def test_delete_records(compat: Compat) -> None:
    compat.need(ops=("delete_records", "consume"))
    topic = compat.setup_topic("delete-records")
    compat.setup_produce(topic, [Record(f"k{i}".encode(), f"v{i}".encode()) for i in range(COUNT)])
    assert compat.client.delete_records(compat.bootstrap, topic, 0, 4) == 4
    result = compat.client.consume(compat.bootstrap, topic, [0], "earliest", COUNT - 4, timeout_s=20)
    assert result.error is None, result.error_message
    assert_dense(result.records, start=4)
    assert [r.value for r in result.records] == [f"v{i}".encode() for i in range(4, COUNT)]

"""Produce under topic configs: max.message.bytes rejects a larger batch; LogAppendTime replaces timestamps."""

from __future__ import annotations

import pytest

from tests.compat.clients.adapter import ClientError, Record
from tests.compat.support import Compat, assert_dense, now_ms


def test_record_larger_than_max_message_bytes_is_rejected(compat: Compat) -> None:
    compat.need(ops=("produce", "consume"))
    topic = compat.setup_topic("too-large", configs={"max.message.bytes": "10000"})
    with pytest.raises(ClientError) as failure:
        compat.client.produce(compat.bootstrap, topic, [Record(b"big", b"x" * 20_000)])
    assert failure.value.kind == "message_too_large", failure.value.message
    compat.client.produce(compat.bootstrap, topic, [Record(b"small", b"fits")])
    result = compat.client.consume(compat.bootstrap, topic, [0], "earliest", 1, timeout_s=20)
    assert result.error is None, result.error_message
    assert [(r.offset, r.value) for r in result.records] == [(0, b"fits")], "the rejected record must not be stored"


def test_log_append_time_replaces_producer_timestamps(compat: Compat) -> None:
    compat.need(ops=("produce", "consume"))
    topic = compat.setup_topic("log-append-time", configs={"message.timestamp.type": "LogAppendTime"})
    old = now_ms() - 3_600_000
    explicit = "produce.timestamp" not in compat.client.missing
    records = [Record(f"k{i}".encode(), f"v{i}".encode(), timestamp=old + i if explicit else None) for i in range(20)]
    before = now_ms()
    compat.client.produce(compat.bootstrap, topic, records)
    after = now_ms()
    result = compat.client.consume(compat.bootstrap, topic, [0], "earliest", len(records), timeout_s=20)
    assert result.error is None, result.error_message
    assert_dense(result.records)
    for record in result.records:
        assert before - 1000 <= record.timestamp <= after + 1000, f"timestamp {record.timestamp} is not append time"

"""Scenario 4: a 900 KiB record, a null key, an empty value and a null value."""

from __future__ import annotations

from tests.compat.clients.adapter import Record
from tests.compat.support import Compat, assert_dense

BIG = 900 * 1024


def test_large_record(compat: Compat) -> None:
    compat.need(ops=("produce", "consume"))
    topic = compat.setup_topic("big")
    filler = (b"0123456789abcdef" * (BIG // 16 + 1))[:BIG]
    records = [Record(b"small-before", b"x"), Record(b"big", filler), Record(b"small-after", b"y")]
    compat.client.produce(compat.bootstrap, topic, records)
    result = compat.client.consume(compat.bootstrap, topic, [0], "earliest", 3, timeout_s=30)
    assert result.error is None, result.error_message
    assert_dense(result.records)
    assert [(r.key, r.value) for r in result.records] == [(r.key, r.value) for r in records]


def test_null_key_empty_and_null_values(compat: Compat) -> None:
    compat.need(ops=("produce", "consume"), caps=("produce.null_key", "produce.null_value"))
    topic = compat.setup_topic("nulls")
    records = [Record(None, b"no-key"), Record(b"empty", b""), Record(b"tombstone", None), Record(b"", b"empty-key")]
    compat.client.produce(compat.bootstrap, topic, records)
    result = compat.client.consume(compat.bootstrap, topic, [0], "earliest", len(records), timeout_s=30)
    assert result.error is None, result.error_message
    assert_dense(result.records)
    assert [(r.key, r.value) for r in result.records] == [(r.key, r.value) for r in records]

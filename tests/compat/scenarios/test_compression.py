"""Scenario 3: produce and consume with each compression codec the client supports."""

from __future__ import annotations

import pytest

from tests.compat.clients.wire import CODECS, fetch_batches
from tests.compat.scenarios.test_produce_consume import check_round_trip, make_records
from tests.compat.support import Compat, assert_dense, now_ms

COUNT = 200


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compression_round_trip(compat: Compat, codec: str) -> None:
    compat.need(ops=("produce", "consume"), caps=(f"compression.{codec}",))
    topic = compat.setup_topic(f"codec-{codec}")
    records = make_records(compat, COUNT, seed=3, compressible=True)
    start_ms = now_ms()
    produced = compat.client.produce(compat.bootstrap, topic, records, acks="all", compression=codec)
    result = compat.client.consume(compat.bootstrap, topic, [0], "earliest", COUNT, timeout_s=30)
    assert result.error is None, result.error_message
    assert_dense(result.records)
    check_round_trip(records, produced, result.records, start_ms)
    # The batches are stored as the client compressed them (topic compression.type=producer): a client that
    # silently stopped compressing (old librdkafka's version checks) fails here.
    batches = fetch_batches(compat.bootstrap, topic)
    assert sum(count for _, count, _ in batches) == COUNT
    assert {CODECS[codec_id] for _, _, codec_id in batches} == {codec}

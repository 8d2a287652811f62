"""Scenario 2: 1,000 keyed records with headers and explicit timestamps, acks=all, read back from earliest."""

from __future__ import annotations

import random

from tests.compat.clients.adapter import Consumed, Record
from tests.compat.support import Compat, assert_dense, by_partition, now_ms

COUNT = 1000
PARTITIONS = 3


def make_records(compat: Compat, count: int, *, seed: int = 2, compressible: bool = False) -> list[Record]:
    """Keyed records whose value carries the sequence number; headers and timestamps where the client can.

    ``compressible`` values repeat text, so that every batch shrinks when compressed (librdkafka sends a batch
    uncompressed when compression would not make it smaller).
    """
    rng = random.Random(seed)
    missing = compat.client.missing
    binary = "produce.binary" not in missing
    per_record_headers = "produce.record_headers" not in missing
    base_ts = now_ms() - 3_600_000
    records = []
    for i in range(count):
        noise = rng.randbytes(rng.randrange(0, 64)) if binary else rng.randbytes(24).hex().encode()
        if compressible:
            noise = noise[:8] + b" compressible text" * 16
        headers: tuple[tuple[str, bytes | None], ...] = (("origin", b"compat"),)
        if per_record_headers:
            headers = (("seq", str(i).encode()), ("origin", b"compat"), ("blank", b""))
        records.append(
            Record(
                key=f"key-{i % 37:03d}".encode(),
                value=f"value-{i:05d}-".encode() + noise,
                headers=headers,
                timestamp=base_ts + 10 * i if "produce.timestamp" not in missing else None,
            )
        )
    return records


def check_round_trip(sent: list[Record], produced: list[tuple[int, int]], got: list[Consumed], start_ms: int) -> None:
    """Every record came back once, exactly as sent, in order per partition, at dense offsets."""
    assert len(got) == len(sent), f"consumed {len(got)} of {len(sent)} records"
    expected = {r.value: (i, r) for i, r in enumerate(sent)}
    partition_of_key: dict[bytes | None, int] = {}
    for partition, records in by_partition(got).items():
        assert_dense(records)
        sequence = [expected[r.value][0] for r in records]
        assert sequence == sorted(sequence), f"partition {partition} out of produce order"
        for record in records:
            index, original = expected[record.value]
            assert record.key == original.key
            assert record.headers == original.headers
            if original.timestamp is not None:
                assert record.timestamp == original.timestamp
            else:
                assert start_ms - 60_000 <= record.timestamp <= now_ms() + 60_000
            assert partition_of_key.setdefault(record.key, partition) == partition, "one key in two partitions"
            if produced[index][1] >= 0:
                assert produced[index] == (record.partition, record.offset), f"record {index} offset mismatch"


def test_produce_consume_keyed_with_headers(compat: Compat) -> None:
    compat.need(ops=("produce", "consume"))
    topic = compat.setup_topic("keyed", partitions=PARTITIONS)
    records = make_records(compat, COUNT)
    start_ms = now_ms()
    produced = compat.client.produce(compat.bootstrap, topic, records, acks="all")
    assert len(produced) == COUNT
    result = compat.client.consume(compat.bootstrap, topic, range(PARTITIONS), "earliest", COUNT, timeout_s=30)
    assert result.error is None, result.error_message
    check_round_trip(records, produced, result.records, start_ms)

"""kbroker/log/validator.py: Kafka's LogValidator rules on hand-built batches, with a fixed clock."""

from __future__ import annotations

import pytest

from kbroker.log.config import LONG_MAX, LogConfig
from kbroker.log.validator import MAX_DECOMPRESSED_BYTES, RecordValidationError, validate_records
from protocol import compression
from protocol.errors import ErrorCode
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import RecordBatch
from tests.protocol.records_helpers import batch_with_body, raw_record

NOW = 1_800_000_000_000
HOUR = 3_600_000
E = ErrorCode


def records(*timestamps: int, key: bytes | None = b"k", codec: int = compression.NONE, **kw: int) -> RecordBatch:
    return RecordBatch(
        build_record_batch([SimpleRecord(key, b"v", (), t) for t in timestamps], compression_type=codec, **kw)
    )


def refusal(batch: RecordBatch, config: LogConfig | None = None) -> RecordValidationError:
    with pytest.raises(RecordValidationError) as caught:
        validate_records(batch, config or LogConfig(), NOW, "t-0")
    return caught.value


def test_a_good_batch_passes() -> None:
    for codec in (compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD):
        validate_records(records(NOW, NOW + 5, NOW - 10, codec=codec), LogConfig(), NOW, "t-0")


def test_after_max_defaults_to_one_hour() -> None:
    assert LogConfig().message_timestamp_after_max_ms == HOUR
    assert LogConfig().message_timestamp_before_max_ms == LONG_MAX
    validate_records(records(NOW + HOUR), LogConfig(), NOW, "t-0")
    error = refusal(records(NOW, NOW + HOUR + 1))
    assert error.code == E.INVALID_TIMESTAMP
    assert [e.batch_index for e in error.record_errors] == [1]
    assert error.record_errors[0].message == (
        f"Timestamp {NOW + HOUR + 1} of message with offset 1 is out of range. "
        f"The timestamp should be within [{NOW - LONG_MAX}, {NOW + HOUR}]"
    )


def test_before_max_and_minus_one() -> None:
    config = LogConfig.from_properties({"message.timestamp.before.max.ms": str(HOUR)})
    validate_records(records(NOW - HOUR, -1), config, NOW, "t-0")  # -1: no timestamp, never checked
    error = refusal(records(NOW - HOUR - 1, NOW, NOW - 2 * HOUR), config)
    assert (error.code, [e.batch_index for e in error.record_errors]) == (E.INVALID_TIMESTAMP, [0, 2])


def test_differences_wrap_as_java_longs() -> None:
    """Kafka computes now - timestamp in a long: for a timestamp near Long.MIN_VALUE it wraps negative, so with
    after.max.ms = Long.MAX_VALUE such a record passes (and with the default hour it fails the after check)."""
    lowest = -(2**63) + 1
    unlimited = LogConfig.from_properties({"message.timestamp.after.max.ms": str(LONG_MAX)})
    validate_records(records(lowest, NOW + 10**15), unlimited, NOW, "t-0")
    error = refusal(records(lowest))
    assert [e.batch_index for e in error.record_errors] == [0]
    assert error.record_errors[0].message.endswith(f"should be within [{NOW - LONG_MAX}, {NOW + HOUR}]")


def test_log_append_time_topics() -> None:
    config = LogConfig.from_properties({"message.timestamp.type": "LogAppendTime"})
    validate_records(records(0, NOW + 10 * HOUR), config, NOW, "t-0")  # timestamps are the broker's there
    error = refusal(records(NOW, NOW, log_append_time=NOW), config)
    assert (error.code, [e.batch_index for e in error.record_errors]) == (E.INVALID_TIMESTAMP, [0, 1])
    assert error.record_errors[0].message == (
        f"Invalid timestamp type in message DefaultRecord(offset=0, timestamp={NOW}, key=1 bytes, value=1 bytes). "
        "Producer should not set timestamp type to LogAppendTime."
    )


def test_producer_log_append_time_on_a_create_time_topic() -> None:
    validate_records(records(1, 2, log_append_time=NOW), LogConfig(), NOW, "t-0")  # its max timestamp is checked
    assert refusal(records(1, log_append_time=NOW + 2 * HOUR)).code == E.INVALID_TIMESTAMP
    assert refusal(records(1, log_append_time=-1)).code == E.INVALID_TIMESTAMP


def test_compacted_topics_need_keys() -> None:
    config = LogConfig.from_properties({"cleanup.policy": "delete,compact"})
    validate_records(records(NOW, key=None), LogConfig(), NOW, "t-0")
    validate_records(records(NOW, NOW), config, NOW, "t-0")
    body = raw_record(key=None) + raw_record(offset_delta=1) + raw_record(key=None, offset_delta=2)
    error = refusal(RecordBatch(batch_with_body(body, 3, base_timestamp=NOW)), config)
    assert error.code == E.INVALID_RECORD
    assert [e.batch_index for e in error.record_errors] == [0, 2]
    reason = "Compacted topic cannot accept message without key in topic partition t-0"
    assert error.message == (
        "One or more records have been rejected due to 2 record errors in total, and only showing the first three "
        f"errors at most: [RecordError(batchIndex=0, message='{reason}'), RecordError(batchIndex=2, message='{reason}')]"
    )
    mixed = raw_record(key=None) + raw_record(offset_delta=1, timestamp_delta=2 * HOUR)
    error = refusal(RecordBatch(batch_with_body(mixed, 2, base_timestamp=NOW)), config)
    assert (error.code, [e.batch_index for e in error.record_errors]) == (E.INVALID_TIMESTAMP, [0, 1])


@pytest.mark.parametrize(
    ("body", "count", "attributes", "code"),
    [
        (raw_record() + raw_record(offset_delta=1), 3, 0, E.INVALID_RECORD),
        (raw_record() + raw_record(offset_delta=1), 1, 0, E.INVALID_RECORD),
        (raw_record(), 1, compression.GZIP, E.UNKNOWN_SERVER_ERROR),  # a compression flag on plain bytes
        (compression.compress(compression.LZ4, raw_record())[:-4], 1, compression.LZ4, E.UNKNOWN_SERVER_ERROR),
        (
            compression.compress(compression.ZSTD, raw_record() + raw_record(offset_delta=3)),
            2,
            compression.ZSTD,
            E.UNKNOWN_SERVER_ERROR,  # compressed offset deltas out of order
        ),
        (
            compression.compress(compression.ZSTD, bytes(MAX_DECOMPRESSED_BYTES + 1)),
            1,
            compression.ZSTD,
            E.INVALID_RECORD,
        ),
    ],
)
def test_structure_and_compression(body: bytes, count: int, attributes: int, code: ErrorCode) -> None:
    batch = RecordBatch(batch_with_body(body, count, attributes=attributes, base_timestamp=NOW))
    before = bytes(batch.view())
    error = refusal(batch)
    assert (error.code, error.record_errors) == (code, ())
    assert bytes(batch.view()) == before  # a refused batch is left as it came


def test_uncompressed_offset_deltas_are_not_checked_as_in_kafka() -> None:
    batch = RecordBatch(batch_with_body(raw_record() + raw_record(offset_delta=9), 2, base_timestamp=NOW))
    validate_records(batch, LogConfig(), NOW, "t-0")


def test_loose_run_bounds_fall_back_to_exact_checks() -> None:
    """Records of one shape report bounds wider than their deltas; near a limit the exact pass decides."""
    config = LogConfig.from_properties({"message.timestamp.after.max.ms": "100"})
    batch = records(*[NOW + 90 + (i % 2) for i in range(64)])
    validate_records(batch, config, NOW, "t-0")  # bounds say up to NOW + 90 + 64: exact pass accepts
    error = refusal(records(*[NOW + 90 + 11 * (i == 40) for i in range(64)]), config)
    assert [e.batch_index for e in error.record_errors] == [40]

"""Kafka's LogValidator for a batch a client produces: its records, the topic's rules, Kafka's error codes.

``validate_records(batch, config, now, topic_partition)`` runs before anything is appended; it raises
``RecordValidationError`` (code, message, per-record errors) and leaves the batch untouched. The batch
header checks (magic, one batch, base offset, size, CRC, count against last offset delta, control and
sequence bits) come first, in the produce path; this is the part that reads the records:

- structure (``protocol.record_walk``): exactly ``records_count`` well-formed records, ending at the
  batch's end; compressed records decompress, to at most ``MAX_DECOMPRESSED_BYTES``, and their offset
  deltas run 0, 1, ...;
- keys: a compacted topic (``cleanup.policy`` containing compact) refuses records without a key;
- timestamps: with ``message.timestamp.type=CreateTime`` every record's timestamp (but -1) lies within
  [now - ``message.timestamp.before.max.ms``, now + ``message.timestamp.after.max.ms``]; a batch marked
  LogAppendTime by its producer is refused unless it is a CreateTime topic's batch with a valid max timestamp.

Error codes, as Apache Kafka 4.3 answers (checked against it in tests/broker/test_record_validation.py):
malformed records, and a decompressed size over the cap, are INVALID_RECORD; records that cannot be
decompressed at all, and compressed records whose offset deltas are not 0, 1, ..., are
UNKNOWN_SERVER_ERROR (Kafka fails those with an unexpected exception). Key and timestamp violations are
collected for every record, as Kafka does: INVALID_TIMESTAMP when any record's timestamp is wrong, else
INVALID_RECORD, with the list of (record index, message) and Kafka's summary message.

Cost: the walk is the only per-record work on the common path; the records are decoded once more only
when a bound says a record may break a key or timestamp rule, to name exactly which ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbroker.log.config import LogConfig
from protocol.compression import MAX_DECOMPRESSED_SIZE, CompressionError, DecompressedSizeError
from protocol.errors import ErrorCode, InvalidRecordError
from protocol.record_walk import RecordsSummary, walk_records
from protocol.records import Record, RecordBatch

MAX_DECOMPRESSED_BYTES = MAX_DECOMPRESSED_SIZE  # 64 MiB: a bigger decompressed batch is refused
NO_TIMESTAMP = -1
# Timestamps within this range cannot overflow Java's long arithmetic in Kafka's checks, so they can
# be compared with Python integers; anything outside goes through the exact, wrapping comparison.
_SAFE = 1 << 62


@dataclass(frozen=True, slots=True)
class RecordError:
    """One refused record: its index in the batch and why (Produce v8+ ``record_errors``)."""

    batch_index: int
    message: str


class RecordValidationError(Exception):
    """The batch is refused with ``code``; ``record_errors`` names the records at fault, if any."""

    def __init__(self, code: ErrorCode, message: str, record_errors: tuple[RecordError, ...] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.record_errors = record_errors


def validate_records(batch: RecordBatch, config: LogConfig, now: int, topic_partition: str) -> None:
    """Refuse ``batch`` (RecordValidationError) unless its records pass Kafka's LogValidator checks."""
    summary = _walk(batch)
    if batch.compression and not summary.offsets_in_order:
        raise RecordValidationError(
            ErrorCode.UNKNOWN_SERVER_ERROR, "the offset deltas of compressed records must be 0, 1, 2, ..."
        )
    if _maybe_invalid(batch, summary, config, now):
        errors, bad_timestamp = _record_errors(batch, config, now, topic_partition)
        if errors:
            raise _refusal(errors, bad_timestamp)


def _walk(batch: RecordBatch) -> RecordsSummary:
    try:
        # uncompressed records are copied too: the walk indexes bytes faster than a memoryview
        return walk_records(batch.records_data(MAX_DECOMPRESSED_BYTES), batch.records_count)
    except DecompressedSizeError as error:
        raise RecordValidationError(ErrorCode.INVALID_RECORD, f"records refused: {error}") from None
    except CompressionError as error:
        raise RecordValidationError(
            ErrorCode.UNKNOWN_SERVER_ERROR, f"records cannot be decompressed: {error}"
        ) from None
    except InvalidRecordError as error:
        raise RecordValidationError(ErrorCode.INVALID_RECORD, str(error)) from None


def _maybe_invalid(batch: RecordBatch, summary: RecordsSummary, config: LogConfig, now: int) -> bool:
    """Whether some record may break the key or timestamp rules (False: none can)."""
    if config.compacted and summary.null_keys:
        return True
    if config.log_append_time:
        return batch.is_log_append_time
    if batch.is_log_append_time:  # every record reads the max timestamp
        low = high = batch.max_timestamp
        if low == NO_TIMESTAMP:
            return True
    else:
        low = batch.base_timestamp + summary.min_timestamp_delta
        high = batch.base_timestamp + summary.max_timestamp_delta
    if not -_SAFE < low <= high < _SAFE:
        return True
    return now - low > config.message_timestamp_before_max_ms or high - now > config.message_timestamp_after_max_ms


def _record_errors(
    batch: RecordBatch, config: LogConfig, now: int, topic_partition: str
) -> tuple[list[RecordError], bool]:
    """Every record's key and timestamp checked as Kafka's validateRecord does; (errors, any timestamp error)."""
    errors: list[RecordError] = []
    bad_timestamp = False
    before = config.message_timestamp_before_max_ms
    after = config.message_timestamp_after_max_ms
    for index, record in enumerate(batch.records(MAX_DECOMPRESSED_BYTES)):
        if config.compacted and record.key is None:
            errors.append(
                RecordError(
                    index, f"Compacted topic cannot accept message without key in topic partition {topic_partition}"
                )
            )
            continue
        timestamp = _long(record.timestamp)
        if not config.log_append_time and timestamp != NO_TIMESTAMP:
            difference = _long(now - timestamp)
            if difference > before or _long(-difference) > after:
                bad_timestamp = True
                errors.append(
                    RecordError(
                        index,
                        f"Timestamp {timestamp} of message with offset {record.offset} is out of range. The timestamp "
                        f"should be within [{_long(now - before)}, {_long(now + after)}]",
                    )
                )
        elif batch.is_log_append_time:
            bad_timestamp = True
            errors.append(
                RecordError(
                    index,
                    f"Invalid timestamp type in message {_describe(record, timestamp)}. Producer should not set "
                    "timestamp type to LogAppendTime.",
                )
            )
    return errors, bad_timestamp


def _refusal(errors: list[RecordError], bad_timestamp: bool) -> RecordValidationError:
    """Kafka's processRecordErrors: one exception for the batch, naming every record at fault."""
    if bad_timestamp:
        return RecordValidationError(
            ErrorCode.INVALID_TIMESTAMP,
            "One or more records have been rejected due to invalid timestamp",
            tuple(errors),
        )
    shown = ", ".join(f"RecordError(batchIndex={e.batch_index}, message='{e.message}')" for e in errors[:3])
    return RecordValidationError(
        ErrorCode.INVALID_RECORD,
        f"One or more records have been rejected due to {len(errors)} record errors in total, and only showing "
        f"the first three errors at most: [{shown}]",
        tuple(errors),
    )


def _describe(record: Record, timestamp: int) -> str:
    key = 0 if record.key is None else len(record.key)
    value = 0 if record.value is None else len(record.value)
    return f"DefaultRecord(offset={record.offset}, timestamp={timestamp}, key={key} bytes, value={value} bytes)"


def _long(value: int) -> int:
    """``value`` wrapped to a signed 64-bit integer, as Java's long arithmetic wraps."""
    return ((value + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


__all__ = ["MAX_DECOMPRESSED_BYTES", "RecordError", "RecordValidationError", "validate_records"]

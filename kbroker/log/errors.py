"""Errors raised by the storage layer, each mapping to one Kafka error code."""

from __future__ import annotations


class LogError(Exception):
    """Base class of every storage-layer error."""


class KafkaStorageError(LogError):
    """Disk full, I/O error or an offline log: the produce path answers KAFKA_STORAGE_ERROR (56)."""


class LogOfflineError(KafkaStorageError):
    """The log stopped accepting writes after an I/O error it cannot undo (a failed fsync,
    a partial write it could not cut); a restart recovers it. Also KAFKA_STORAGE_ERROR."""


class NotCoordinatorError(LogError):
    """A coordinator write to an internal partition this broker no longer leads (cluster mode)."""


class NotEnoughReplicasError(LogError):
    """An acks=all write the in-sync replicas did not confirm (too few of them, a timeout, leadership lost):
    a coordinator answers COORDINATOR_NOT_AVAILABLE and the client retries, as Kafka's do."""


class OffsetOutOfRangeError(LogError):
    """An offset outside [log start offset, log end offset]: OFFSET_OUT_OF_RANGE (1)."""

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(
            f"offset {offset} is out of range [{log_start_offset}, {log_end_offset}]",
        )
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class RecordTooLargeError(LogError):
    """A batch larger than max.message.bytes or segment.bytes: MESSAGE_TOO_LARGE (10)."""


class InvalidConfigError(LogError, ValueError):
    """A topic config name or value is not acceptable: INVALID_CONFIG (40)."""


class InvalidTopicError(LogError, ValueError):
    """A topic name that is not legal in Kafka: INVALID_TOPIC_EXCEPTION (17)."""


class UnknownTopicOrPartitionError(LogError, KeyError):
    """No such topic or partition: UNKNOWN_TOPIC_OR_PARTITION (3)."""


class TopicExistsError(LogError):
    """The topic already exists: TOPIC_ALREADY_EXISTS (36)."""

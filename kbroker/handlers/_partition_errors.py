"""The error for a partition kbroker has no log for: unknown, or offline since startup."""

from __future__ import annotations

from kbroker.context import RequestContext
from protocol.errors import ErrorCode


def missing_log_error(ctx: RequestContext, topic: str, partition: int) -> ErrorCode:
    """KAFKA_STORAGE_ERROR for a partition that failed to load, else UNKNOWN_TOPIC_OR_PARTITION."""
    if (topic, partition) in ctx.broker.logs.offline_partitions:
        return ErrorCode.KAFKA_STORAGE_ERROR
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

"""DescribeLogDirs (35) v1-5: the data directory, its volume's space, and the size of each partition.

kbroker keeps every partition in one data directory (`--data-dir`), reported by its absolute
path as Kafka reports each of its `log.dirs`. Topics null asks for every partition; otherwise
only the listed partitions that exist are answered and a topic with none is left out, as Kafka
does. The offset lag of a current (not future) log is max(high watermark - log end offset, 0):
0 on this single replica. Total and usable bytes (v4+) are the volume's, as Java's FileStore
reports them; no directory is ever cordoned (v5).
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.DESCRIBE_LOG_DIRS, "1-5")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.CLUSTER):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), "results": []}
    wanted = request["topics"]
    requested = None if wanted is None else {(t["topic"], p) for t in wanted for p in t["partitions"]}
    logs = ctx.broker.logs
    by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (topic, partition), log in sorted(logs.logs()):
        if requested is not None and (topic, partition) not in requested:
            continue
        by_topic[topic].append(
            {
                "partition_index": partition,
                "partition_size": log.size_in_bytes,
                "offset_lag": max(log.high_watermark - log.log_end_offset, 0),
                "is_future_key": False,
            }
        )
    directory = os.path.abspath(logs.data_dir)
    result: dict[str, Any] = {"error_code": 0, "log_dir": directory, "is_cordoned": False}
    try:
        total, usable = _volume_space(directory)
    except OSError as error:
        ctx.log.error("describe_log_dirs_storage_error", log_dir=directory, error=str(error))
        result["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
        result["topics"] = []
    else:
        result.update(total_bytes=total, usable_bytes=usable)
        result["topics"] = [{"name": name, "partitions": partitions} for name, partitions in by_topic.items()]
    return {"throttle_time_ms": 0, "error_code": 0, "results": [result]}


def _volume_space(directory: str) -> tuple[int, int]:
    """(total, usable) bytes of the volume holding `directory`, as FileStore.getTotalSpace/getUsableSpace."""
    stats = os.statvfs(directory)
    return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize

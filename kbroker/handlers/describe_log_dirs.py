"""DescribeLogDirs (35) v1-5: each data directory, its volume's space, and the size of each of its partitions.

Every directory of `log.dirs` (one with `--data-dir`) is reported by its absolute path, as Kafka
reports them, with the partitions it holds. Topics null asks for every partition; otherwise
only the listed partitions that exist are answered and a topic with none is left out, as Kafka
does. The offset lag of a current (not future) log is max(high watermark - log end offset, 0):
0 on this single replica. Total and usable bytes (v4+) are the volume's, as Java's FileStore
reports them; no directory is ever cordoned (v5).
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
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
    by_dir: dict[Path, dict[str, list[dict[str, Any]]]] = {d: defaultdict(list) for d in logs.log_dirs}
    for (topic, partition), log in sorted(logs.logs()):
        if requested is not None and (topic, partition) not in requested:
            continue
        by_dir.setdefault(log.directory.parent, defaultdict(list))[topic].append(
            {
                "partition_index": partition,
                "partition_size": log.size_in_bytes,
                "offset_lag": max(log.high_watermark - log.log_end_offset, 0),
                "is_future_key": False,
            }
        )
    results = [_log_dir(ctx, directory, by_topic) for directory, by_topic in by_dir.items()]
    return {"throttle_time_ms": 0, "error_code": 0, "results": results}


def _log_dir(ctx: RequestContext, log_dir: Path, by_topic: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    directory = os.path.abspath(log_dir)
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
    return result


def _volume_space(directory: str) -> tuple[int, int]:
    """(total, usable) bytes of the volume holding `directory`, as FileStore.getTotalSpace/getUsableSpace."""
    stats = os.statvfs(directory)
    return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize

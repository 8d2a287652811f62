"""CreatePartitions (37) v0-3: raise a topic's partition count (never lower it).

`count` is the new total. Kafka's checks and messages: a topic named twice is INVALID_REQUEST,
an unknown topic UNKNOWN_TOPIC_OR_PARTITION, a count that is not an increase INVALID_PARTITIONS,
assignments that do not cover exactly the new partitions (or name another broker than this
node) INVALID_REPLICA_ASSIGNMENT. validate_only checks without changing anything.
In cluster mode (zookeeper.connect) the controller adds the partitions: _cluster_topics.py.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers._quota import THROTTLED_MESSAGE, mutation_refused
from kbroker.handlers._topic_admin import MAX_PARTITIONS_PER_REQUEST, NO_MESSAGE, fail
from kbroker.handlers.create_topics import check_replicas
from kbroker.handlers.registry import handles
from kbroker.log import InvalidConfigError, KafkaStorageError, UnknownTopicOrPartitionError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaProtocolError


@handles(ApiKey.CREATE_PARTITIONS, "0-3")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any] | Awaitable[dict[str, Any]]:
    if ctx.broker.cluster is not None:  # cluster mode: the controller assigns the new partitions in ZooKeeper
        from kbroker.handlers._cluster_topics import add_partitions_in_cluster

        return add_partitions_in_cluster(ctx, ctx.broker.cluster, request)
    topics = request["topics"]
    names = [topic["name"] for topic in topics]
    results: dict[str, dict[str, Any]] = {}
    valid: list[dict[str, Any]] = []
    alterable = ctx.authorized(AclOperation.ALTER, ResourceType.TOPIC, set(names))
    for topic in topics:
        name = topic["name"]
        if name in results:
            continue
        try:
            if names.count(name) > 1:
                raise fail(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            if name not in alterable:
                raise fail(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "The topic authorization is failed.")
            _check(ctx, topic)
            valid.append(topic)
            results[name] = _result(name, None)
        except KafkaProtocolError as exc:
            results[name] = _result(name, exc)
    added = sum(topic["count"] - _current(ctx, topic["name"]) for topic in valid)
    if added > MAX_PARTITIONS_PER_REQUEST:
        error = fail(ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
        return _response([_result(name, error) for name in results])
    for topic in valid:
        if mutation_refused(ctx, topic["count"] - _current(ctx, topic["name"]), strict_since=3):
            results[topic["name"]] = _result(
                topic["name"], fail(ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED_MESSAGE)
            )
        elif not request["validate_only"]:
            results[topic["name"]] = _result(topic["name"], _apply(ctx, topic["name"], topic["count"]))
    return _response(list(results.values()))


def _current(ctx: RequestContext, name: str) -> int:
    metadata = ctx.broker.logs.topic(name)
    return metadata.partitions if metadata else 0


def _check(ctx: RequestContext, topic: dict[str, Any]) -> None:
    name, count, assignments = topic["name"], topic["count"], topic["assignments"]
    metadata = ctx.broker.logs.topic(name)
    if metadata is None:
        raise fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NO_MESSAGE)
    current = metadata.partitions
    if count == current:
        raise fail(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    if count < current:
        raise fail(
            ErrorCode.INVALID_PARTITIONS,
            f"The topic {name} currently has {current} partition(s); {count} would not be an increase.",
        )
    additional = count - current
    if assignments is not None:
        if len(assignments) != additional:
            raise fail(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Attempted to add {additional} additional partition(s), but only {len(assignments)} "
                "assignment(s) were specified.",
            )
        for assignment in assignments:
            check_replicas(ctx, assignment["broker_ids"])


def _apply(ctx: RequestContext, name: str, count: int) -> KafkaProtocolError | None:
    try:
        ctx.broker.logs.create_partitions(name, count)
    except UnknownTopicOrPartitionError:
        return fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NO_MESSAGE)
    except InvalidConfigError as exc:
        return fail(ErrorCode.INVALID_PARTITIONS, str(exc))
    except (KafkaStorageError, OSError) as exc:
        ctx.log.error("create_partitions_failed", topic=name, error=str(exc))
        return fail(ErrorCode.KAFKA_STORAGE_ERROR, f"Could not create the new partitions' logs: {exc}")
    ctx.log.info("partitions_created", topic=name, partitions=count)
    return None


def _result(name: str, error: KafkaProtocolError | None) -> dict[str, Any]:
    if error is None:
        return {"name": name, "error_code": 0, "error_message": None}
    return {"name": name, "error_code": int(error.code), "error_message": error.message or None}


def _response(results: list[dict[str, Any]]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "results": results}

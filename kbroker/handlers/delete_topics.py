"""DeleteTopics (20) v1-6: delete topics by name, or (v6) by topic id.

As in Kafka: with delete.topic.enable=false every topic fails (INVALID_REQUEST before v3,
TOPIC_DELETION_DISABLED after); a name and an id together, neither, or the same topic twice is
INVALID_REQUEST; unknown names answer UNKNOWN_TOPIC_OR_PARTITION and unknown ids UNKNOWN_TOPIC_ID.
The partition directories are renamed away at once and removed after file.delete.delay.ms.
In cluster mode (zookeeper.connect) the controller deletes topics: _cluster_topics.py.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers._quota import THROTTLED_MESSAGE, mutation_refused
from kbroker.handlers._topic_admin import ZERO_UUID, fail, find_topic_by_id
from kbroker.handlers.registry import handles
from kbroker.log import KafkaStorageError, UnknownTopicOrPartitionError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaProtocolError

Target = tuple[str | None, bytes]  # (name, topic id) as given in the request


@handles(ApiKey.DELETE_TOPICS, "1-6")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any] | Awaitable[dict[str, Any]]:
    targets = _targets(ctx, request)
    if not ctx.broker.config.get_bool("delete.topic.enable"):
        code = ErrorCode.INVALID_REQUEST if ctx.api_version < 3 else ErrorCode.TOPIC_DELETION_DISABLED
        error = fail(code, "Topic deletion is disabled (delete.topic.enable=false).")
        return _response([_result(name, topic_id, error) for name, topic_id in targets])
    if ctx.broker.cluster is not None:  # cluster mode: the controller deletes the topic from ZooKeeper
        from kbroker.handlers._cluster_topics import delete_in_cluster

        return delete_in_cluster(ctx, ctx.broker.cluster, request, list(dict.fromkeys(targets)))
    names = [name for name, topic_id in targets if name is not None and topic_id == ZERO_UUID]
    ids = [topic_id for name, topic_id in targets if name is None and topic_id != ZERO_UUID]
    targets = list(dict.fromkeys(targets))  # a name or id given twice is answered once, as Kafka does
    resolved: list[str | KafkaProtocolError] = []
    for name, topic_id in targets:  # resolve every entry before deleting anything
        try:
            if name is not None and not ctx.authorize(AclOperation.DELETE, ResourceType.TOPIC, name):
                raise fail(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            topic = _resolve(ctx, name, topic_id, names, ids)
            if name is None and not ctx.authorize(AclOperation.DELETE, ResourceType.TOPIC, topic):
                raise fail(ErrorCode.TOPIC_AUTHORIZATION_FAILED)  # the name stays unsaid, the id is no secret
            if topic in resolved:
                raise fail(
                    ErrorCode.INVALID_REQUEST, "The provided topic name maps to an ID that was already supplied."
                )
            resolved.append(topic)
        except KafkaProtocolError as exc:
            resolved.append(exc)
    results = []
    for (name, topic_id), target in zip(targets, resolved, strict=True):
        try:
            if isinstance(target, KafkaProtocolError):
                raise target
            deleted_id = _delete(ctx, target)
            results.append(_result(target, deleted_id if ctx.api_version >= 6 else topic_id, None))
        except KafkaProtocolError as exc:
            results.append(_result(name, topic_id, exc))
    return _response(results)


def _targets(ctx: RequestContext, request: dict[str, Any]) -> list[Target]:
    if ctx.api_version >= 6:
        return [(topic["name"], bytes(topic["topic_id"])) for topic in request["topics"]]
    return [(name, ZERO_UUID) for name in request["topic_names"]]


def _resolve(ctx: RequestContext, name: str | None, topic_id: bytes, names: list[str], ids: list[bytes]) -> str:
    """The name of the existing topic a request entry refers to."""
    if name is None and topic_id == ZERO_UUID:
        raise fail(ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified.")
    if name is not None and topic_id != ZERO_UUID:
        raise fail(ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id.")
    if name is not None:
        if names.count(name) > 1:
            raise fail(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
        if ctx.broker.logs.topic(name) is None:
            raise fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return name
    if ids.count(topic_id) > 1:
        raise fail(ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
    metadata = find_topic_by_id(ctx.broker, topic_id)
    if metadata is None:
        raise fail(ErrorCode.UNKNOWN_TOPIC_ID)
    return metadata.name


def _delete(ctx: RequestContext, name: str) -> bytes:
    """Delete the topic; returns its id."""
    metadata = ctx.broker.logs.topic(name)
    if metadata is None:
        raise fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if mutation_refused(ctx, metadata.partitions, strict_since=5):
        raise fail(ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED_MESSAGE)
    try:
        ctx.broker.logs.delete_topic(name)
    except UnknownTopicOrPartitionError:
        raise fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) from None
    except (KafkaStorageError, OSError) as exc:
        ctx.log.error("topic_delete_failed", topic=name, error=str(exc))
        raise fail(ErrorCode.KAFKA_STORAGE_ERROR, f"Could not delete the topic's log: {exc}") from None
    ctx.log.info("topic_deleted_by_request", topic=name)
    for partition in range(metadata.partitions):
        ctx.broker.fetch_waiters.wake((name, partition))  # they answer UNKNOWN_TOPIC_OR_PARTITION now
    return metadata.topic_id.bytes


def _result(name: str | None, topic_id: bytes, error: KafkaProtocolError | None) -> dict[str, Any]:
    return {
        "name": name,
        "topic_id": topic_id,
        "error_code": int(error.code) if error else 0,
        "error_message": error.message if error else None,
    }


def _response(results: list[dict[str, Any]]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "responses": results}

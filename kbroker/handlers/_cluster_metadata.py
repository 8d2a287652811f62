"""Metadata in cluster mode (zookeeper.connect): every live broker, the elected controller, and each topic's
replicas, leader, leader epoch, ISR and offline replicas as the controller wrote them in ZooKeeper.

Brokers are listed with their endpoint on the listener the request came through (a broker without that
listener is left out, as Kafka does). A partition whose leader is not known yet, or offline, answers
LEADER_NOT_AVAILABLE with leader -1. The internal topics of this broker's own coordinators (not in
ZooKeeper) are answered as a broker alone answers them; any other topic is the cluster's or does not exist. Auto-creation writes the topic's assignment
to ZooKeeper from whichever broker was asked (as Kafka's ZooKeeper-mode brokers did); the controller then
elects its leaders, so the first answer is LEADER_NOT_AVAILABLE and the client asks again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kbroker.cluster.assignment import InvalidReplicationFactor
from kbroker.cluster.metadata import ClusterMetadata
from kbroker.cluster.store import TopicExistsInZkError
from kbroker.context import RequestContext
from kbroker.internal_topics import INTERNAL_TOPICS
from kbroker.log import InvalidTopicError
from kbroker.log.metadata import validate_topic_name
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from kbroker.cluster.runtime import ClusterRuntime

AUTHORIZED_OPERATIONS_UNKNOWN = -(2**31)
NO_LEADER = -1


async def cluster_metadata(
    ctx: RequestContext, cluster: ClusterRuntime, request: dict[str, Any], local_topic: Any
) -> dict[str, Any]:
    metadata = cluster.metadata
    requested = request["topics"]
    if requested is None or (ctx.api_version == 0 and not requested):
        topics = [_topic(metadata, name) for name in sorted(metadata.topics)]
    else:
        allow_create = ctx.api_version < 4 or request["allow_auto_topic_creation"]
        topics = []
        for entry in requested:
            name = entry["name"]
            if name is None:  # a lookup by topic id (v10+)
                name = next(
                    (t for t, a in metadata.topics.items() if a.topic_id.bytes == bytes(entry["topic_id"])), None
                )
            if name is not None and name in metadata.topics:
                topics.append(_topic(metadata, name))
            elif name is None or name.startswith("__"):
                topics.append(local_topic(ctx, entry, allow_create))  # by id, or an internal topic of this broker
            else:
                topics.append(await _missing(ctx, cluster, name, allow_create))
        metadata = cluster.metadata
    return {
        "throttle_time_ms": 0,
        "brokers": live_brokers(metadata, ctx.listener),
        "cluster_id": ctx.broker.cluster_id,
        "controller_id": metadata.controller_id if metadata.controller_id is not None else -1,
        "topics": topics,
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_UNKNOWN,
    }


def live_brokers(metadata: ClusterMetadata, listener: str) -> list[dict[str, Any]]:
    """Metadata's broker entries (also DescribeCluster's): each live broker's endpoint on `listener`."""
    brokers = []
    for broker_id, registration in sorted(metadata.brokers.items()):
        endpoint = registration.endpoint(listener)
        if endpoint is not None:
            brokers.append(
                {"node_id": broker_id, "host": endpoint.host, "port": endpoint.port, "rack": registration.rack}
            )
    return brokers


def _topic(metadata: ClusterMetadata, name: str) -> dict[str, Any]:
    assignment = metadata.topics[name]
    return {
        "error_code": 0,
        "name": name,
        "topic_id": assignment.topic_id.bytes,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": partition_entries(metadata, name, sorted(assignment.partitions)),
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_UNKNOWN,
    }


def partition_entries(metadata: ClusterMetadata, name: str, indexes: Iterable[int]) -> list[dict[str, Any]]:
    """Metadata's partition entries (also DescribeTopicPartitions') for partitions of a topic in the cluster."""
    replicas_of = metadata.topics[name].partitions
    partitions = []
    for index in indexes:
        replicas = replicas_of.get(index, ())
        state = metadata.state(name, index)
        led = state is not None and state.has_leader
        partitions.append(
            {
                "error_code": 0 if led else int(ErrorCode.LEADER_NOT_AVAILABLE),
                "partition_index": index,
                "leader_id": state.leader if state is not None else NO_LEADER,
                "leader_epoch": state.leader_epoch if state is not None else -1,
                "replica_nodes": list(replicas),
                "isr_nodes": list(state.isr) if state is not None else [],
                "offline_replicas": metadata.offline_replicas(replicas),
            }
        )
    return partitions


async def _missing(ctx: RequestContext, cluster: ClusterRuntime, name: str, allow_create: bool) -> dict[str, Any]:
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return _error(ErrorCode.INVALID_TOPIC_EXCEPTION, name)
    config = ctx.broker.config
    if name.startswith("__") or not (allow_create and config.get_bool("auto.create.topics.enable")):
        return _error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
    try:
        await cluster.create_topic(
            name,
            config.get_int("num.partitions"),
            config.get_int("default.replication.factor"),
            {},
            by_controller=False,
        )
    except TopicExistsInZkError:
        pass
    except InvalidReplicationFactor as exc:
        ctx.log.warning("topic_auto_create_failed", topic=name, error=str(exc))
        return _error(ErrorCode.INVALID_REPLICATION_FACTOR, name)
    ctx.log.info("topic_auto_created", topic=name)
    return _error(ErrorCode.LEADER_NOT_AVAILABLE, name)


def _error(code: int, name: str) -> dict[str, Any]:
    return {
        "error_code": int(code),
        "name": name,
        "topic_id": b"\x00" * 16,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": [],
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_UNKNOWN,
    }

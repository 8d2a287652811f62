"""CreateTopics (19) v2-7: create topics with a partition count, or with explicit replica assignments.

Checks follow Kafka's controller, in its order: duplicate names in the request, the topic name
(and '.'/'_' collisions with existing topics), existence, the configs, then assignments or the
replication factor and partition count. kbroker is one node, so the only replication factor it
can satisfy is 1 (-1 means default.replication.factor). v5+ answers with the partition count,
replication factor and every config of the topic with its source; v7 adds the topic id.
validate_only runs every check and creates nothing (the answer carries a topic id all the same, a random one
that names nothing, as Kafka's does).
In cluster mode (zookeeper.connect) the controller creates topics: _cluster_topics.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers._quota import THROTTLED_MESSAGE, mutation_refused
from kbroker.handlers._topic_admin import (
    CLUSTER_METADATA_TOPIC,
    MAX_PARTITIONS_PER_REQUEST,
    ZERO_UUID,
    check_topic_configs,
    check_topic_name,
    colliding_topic,
    fail,
    topic_config_entries,
)
from kbroker.handlers.registry import handles
from kbroker.log import InvalidConfigError, InvalidTopicError, KafkaStorageError, TopicExistsError, TopicMetadata
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaProtocolError


@dataclass(slots=True)
class TopicPlan:
    name: str
    partitions: int
    configs: dict[str, str]


@handles(ApiKey.CREATE_TOPICS, "2-7")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any] | Awaitable[dict[str, Any]]:
    if ctx.broker.cluster is not None:  # cluster mode: the controller assigns replicas in ZooKeeper
        from kbroker.handlers._cluster_topics import create_in_cluster

        return create_in_cluster(ctx, ctx.broker.cluster, request)
    existing = set(ctx.broker.logs.topics())
    results: dict[str, dict[str, Any]] = {}
    plans: list[TopicPlan] = []
    duplicates = _duplicate_names(request["topics"])
    creatable = None
    if not ctx.authorize(AclOperation.CREATE, ResourceType.CLUSTER, log=False):  # else CREATE on each topic
        creatable = ctx.authorized(AclOperation.CREATE, ResourceType.TOPIC, {t["name"] for t in request["topics"]})
    for topic in request["topics"]:
        name = topic["name"]
        if name in results:
            continue
        try:
            if name in duplicates:
                raise fail(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            if creatable is not None and name not in creatable and name != CLUSTER_METADATA_TOPIC:
                raise fail(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            plans.append(_plan(ctx, topic, existing))
            results[name] = {}  # filled once the topic is created
        except KafkaProtocolError as exc:
            results[name] = _error_result(name, exc)
    if sum(plan.partitions for plan in plans) > MAX_PARTITIONS_PER_REQUEST:
        error = fail(ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
        return _response([_error_result(name, error) for name in results])
    for plan in plans:
        results[plan.name] = _create(ctx, plan, request["validate_only"])
        if results[plan.name]["error_code"] == 0 and not ctx.authorize(
            AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, plan.name, log=False
        ):  # the new topic's configs are only shown to who may describe them
            results[plan.name].update(configs=[], topic_config_error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    return _response(list(results.values()))


def _duplicate_names(topics: list[dict[str, Any]]) -> set[str]:
    seen: set[str] = set()
    duplicates = set()
    for topic in topics:
        if topic["name"] in seen:
            duplicates.add(topic["name"])
        seen.add(topic["name"])
    return duplicates


def _plan(ctx: RequestContext, topic: dict[str, Any], existing: set[str]) -> TopicPlan:
    """Every check Kafka makes before creating a topic; raises KafkaProtocolError on the first failure."""
    name = topic["name"]
    if name == CLUSTER_METADATA_TOPIC:
        raise fail(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited.")
    check_topic_name(name)
    if name in existing:
        raise fail(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    other = colliding_topic(name, existing)
    if other is not None:
        raise fail(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topic: {other}")
    raw_configs: dict[str, str | None] = {c["name"]: c["value"] for c in topic["configs"]}
    configs = check_topic_configs(ctx.broker, raw_configs)
    if topic["assignments"]:
        partitions = _check_assignments(ctx, topic)
    else:
        partitions = _check_counts(ctx, topic["num_partitions"], topic["replication_factor"])
    return TopicPlan(name, partitions, configs)


def _check_counts(ctx: RequestContext, num_partitions: int, replication_factor: int) -> int:
    if replication_factor < -1 or replication_factor == 0:
        raise fail(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    if num_partitions < -1 or num_partitions == 0:
        raise fail(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
    config = ctx.broker.config
    factor = config.get_int("default.replication.factor") if replication_factor == -1 else replication_factor
    if factor != 1:
        raise fail(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {factor} time(s): The target replication factor of {factor} "
            "cannot be reached because only 1 broker(s) are registered. kbroker is a single-node broker: "
            "use replication factor 1 (or -1 for the default).",
        )
    return config.get_int("num.partitions") if num_partitions == -1 else num_partitions


def _check_assignments(ctx: RequestContext, topic: dict[str, Any]) -> int:
    if topic["replication_factor"] != -1:
        raise fail(
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but replication factor was not set to -1.",
        )
    if topic["num_partitions"] != -1:
        raise fail(
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        )
    seen: set[int] = set()
    for assignment in topic["assignments"]:
        index = assignment["partition_index"]
        if index in seen:
            raise fail(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Found multiple manual partition assignments for partition {index}",
            )
        check_replicas(ctx, assignment["broker_ids"])
        seen.add(index)
    if seen != set(range(len(seen))):
        raise fail(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence")
    return len(seen)


def check_replicas(ctx: RequestContext, broker_ids: list[int]) -> None:
    """A manual assignment of one partition: on a single node, exactly [node id]."""
    if not broker_ids:
        raise fail(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
        )
    node = ctx.broker.node_id
    previous = None
    for broker_id in sorted(broker_ids):
        if broker_id != node:
            raise fail(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker {broker_id}, but no such broker is registered "
                f"(kbroker is a single node, id {node}).",
            )
        if broker_id == previous:
            raise fail(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes the broker {broker_id} more than once.",
            )
        previous = broker_id


def _create(ctx: RequestContext, plan: TopicPlan, validate_only: bool) -> dict[str, Any]:
    if mutation_refused(ctx, plan.partitions, strict_since=6):
        return _error_result(plan.name, fail(ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED_MESSAGE))
    if validate_only:
        metadata = TopicMetadata(plan.name, uuid.uuid4(), plan.partitions, plan.configs)
        return _success_result(ctx, metadata, topic_id=metadata.topic_id.bytes)
    try:
        metadata = ctx.broker.logs.create_topic(plan.name, plan.partitions, configs=plan.configs)
    except TopicExistsError:
        return _error_result(plan.name, fail(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{plan.name}' already exists."))
    except InvalidTopicError as exc:
        return _error_result(plan.name, fail(ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc)))
    except InvalidConfigError as exc:
        return _error_result(plan.name, fail(ErrorCode.INVALID_CONFIG, str(exc)))
    except (KafkaStorageError, OSError) as exc:
        ctx.log.error("topic_create_failed", topic=plan.name, error=str(exc))
        return _error_result(plan.name, fail(ErrorCode.KAFKA_STORAGE_ERROR, f"Could not create the topic's log: {exc}"))
    ctx.log.info("topic_created_by_request", topic=plan.name, partitions=plan.partitions, configs=plan.configs)
    return _success_result(ctx, metadata, topic_id=metadata.topic_id.bytes)


def _success_result(ctx: RequestContext, metadata: TopicMetadata, *, topic_id: bytes) -> dict[str, Any]:
    entries = sorted(topic_config_entries(ctx.broker, metadata), key=lambda e: e.name)
    return {
        "name": metadata.name,
        "topic_id": topic_id,
        "error_code": 0,
        "error_message": None,
        "num_partitions": metadata.partitions,
        "replication_factor": 1,
        "configs": [
            {
                "name": e.name,
                "value": e.value,
                "read_only": e.read_only,
                "config_source": int(e.source),
                "is_sensitive": False,
            }
            for e in entries
        ],
        "topic_config_error_code": 0,
    }


def _error_result(name: str, exc: KafkaProtocolError) -> dict[str, Any]:
    return {
        "name": name,
        "topic_id": ZERO_UUID,
        "error_code": int(exc.code),
        "error_message": exc.message,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": [],
        "topic_config_error_code": 0,
    }


def _response(topics: list[dict[str, Any]]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "topics": topics}  # the pipeline sets quota throttles (kbroker.quota)

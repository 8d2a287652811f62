"""CreateTopics in cluster mode (zookeeper.connect), as Kafka's ZooKeeper-mode controller answers it.

Only the controller creates topics (any other broker answers NOT_CONTROLLER; clients send CreateTopics to
the controller named in Metadata). The same checks as a broker alone, in Kafka's order, except that the
replication factor is checked against the live brokers and an explicit assignment may name any of them.
The topic's replica assignment and configs are written to ZooKeeper; the answer waits, up to the request's
timeout_ms, until every partition has a leader (then REQUEST_TIMED_OUT, the topic being created all the same).

CreatePartitions likewise: the controller writes the grown assignment (a compare-and-set on the topic's
znode) and elects the new partitions' leaders; the answer waits for them up to timeout_ms.
DeleteTopics likewise: the controller removes the topic's znodes in one fenced transaction, every broker
deletes its logs when its metadata no longer has the topic, and the answer waits (up to timeout_ms) until
this broker's metadata has dropped it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbroker.cluster.assignment import InvalidReplicaAssignment, InvalidReplicationFactor
from kbroker.cluster.runtime import InvalidPartitionCount, NotControllerError
from kbroker.cluster.store import StaleStateError, TopicExistsInZkError
from kbroker.cluster.zk import NoNodeError
from kbroker.cluster.znodes import TopicAssignment
from kbroker.context import RequestContext
from kbroker.handlers._topic_admin import (
    CLUSTER_METADATA_TOPIC,
    NO_MESSAGE,
    ZERO_UUID,
    check_topic_configs,
    check_topic_name,
    colliding_topic,
    fail,
)
from kbroker.log import TopicMetadata
from protocol.errors import ErrorCode, KafkaProtocolError

if TYPE_CHECKING:
    from kbroker.cluster.runtime import ClusterRuntime


async def create_in_cluster(ctx: RequestContext, cluster: ClusterRuntime, request: dict[str, Any]) -> dict[str, Any]:
    from kbroker.handlers.create_topics import _duplicate_names, _error_result, _success_result

    results: dict[str, dict[str, Any]] = {}
    duplicates = _duplicate_names(request["topics"])
    created: list[str] = []
    for topic in request["topics"]:
        name = topic["name"]
        if name in results:
            continue
        try:
            if not cluster.is_controller:
                raise fail(ErrorCode.NOT_CONTROLLER, f"Broker {cluster.node_id} is not the controller.")
            if name in duplicates:
                raise fail(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            assignment, configs = await _create(ctx, cluster, topic, request["validate_only"])
        except KafkaProtocolError as exc:
            results[name] = _error_result(name, exc)
            continue
        metadata = TopicMetadata(name, assignment.topic_id, len(assignment.partitions), configs)
        topic_id = ZERO_UUID if request["validate_only"] else assignment.topic_id.bytes
        result = _success_result(ctx, metadata, topic_id=topic_id)
        result["replication_factor"] = len(assignment.partitions[0])
        results[name] = result
        if not request["validate_only"]:
            created.append(name)
    timeout_ms = request["timeout_ms"]
    if created and timeout_ms > 0:
        ready = await cluster.wait_for(lambda m: all(m.leaders_known(n) for n in created), timeout_ms / 1000)
        if not ready:
            for name in created:
                if not cluster.metadata.leaders_known(name):
                    results[name]["error_code"] = int(ErrorCode.REQUEST_TIMED_OUT)
                    results[name]["error_message"] = "Timed out waiting for the partitions' leaders."
    return {"throttle_time_ms": 0, "topics": list(results.values())}


async def _create(
    ctx: RequestContext, cluster: ClusterRuntime, topic: dict[str, Any], validate_only: bool
) -> tuple[TopicAssignment, dict[str, str]]:
    name = topic["name"]
    if name == CLUSTER_METADATA_TOPIC:
        raise fail(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited.")
    check_topic_name(name)
    existing = set(cluster.metadata.topics)
    if name in existing:
        raise fail(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    other = colliding_topic(name, existing)
    if other is not None:
        raise fail(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topic: {other}")
    configs = check_topic_configs(ctx.broker, {c["name"]: c["value"] for c in topic["configs"]})
    config = ctx.broker.config
    explicit = None
    partitions = replication_factor = 0
    if topic["assignments"]:
        if topic["replication_factor"] != -1 or topic["num_partitions"] != -1:
            raise fail(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but numPartitions or replicationFactor was not -1.",
            )
        explicit = {a["partition_index"]: tuple(a["broker_ids"]) for a in topic["assignments"]}
        if len(explicit) != len(topic["assignments"]):
            raise fail(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Found multiple manual assignments for a partition")
    else:
        replication_factor = topic["replication_factor"]
        partitions = topic["num_partitions"]
        if replication_factor < -1 or replication_factor == 0:
            raise fail(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if partitions < -1 or partitions == 0:
            raise fail(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
        if replication_factor == -1:
            replication_factor = config.get_int("default.replication.factor")
        if partitions == -1:
            partitions = config.get_int("num.partitions")
    try:
        assignment = await cluster.create_topic(
            name, partitions, replication_factor, configs, explicit, validate_only=validate_only
        )
    except NotControllerError:
        raise fail(ErrorCode.NOT_CONTROLLER, f"Broker {cluster.node_id} is not the controller.") from None
    except TopicExistsInZkError:
        raise fail(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.") from None
    except InvalidReplicationFactor as exc:
        raise fail(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc)) from None
    except InvalidReplicaAssignment as exc:
        raise fail(ErrorCode.INVALID_REPLICA_ASSIGNMENT, str(exc)) from None
    return assignment, configs


async def delete_in_cluster(
    ctx: RequestContext, cluster: ClusterRuntime, request: dict[str, Any], targets: list[tuple[str | None, bytes]]
) -> dict[str, Any]:
    from kbroker.handlers.delete_topics import _response, _result

    results = []
    deleted: list[str] = []
    for name, topic_id in targets:
        try:
            if not cluster.is_controller:
                raise fail(ErrorCode.NOT_CONTROLLER, f"Broker {cluster.node_id} is not the controller.")
            topic = _resolve(cluster, name, topic_id)
            try:
                assignment = await cluster.delete_topic(topic)
            except NotControllerError:
                raise fail(ErrorCode.NOT_CONTROLLER, f"Broker {cluster.node_id} is not the controller.") from None
            except NoNodeError:
                raise fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) from None
            ctx.log.info("topic_deleted_by_request", topic=topic)
            deleted.append(topic)
            results.append(_result(topic, assignment.topic_id.bytes if ctx.api_version >= 6 else topic_id, None))
        except KafkaProtocolError as exc:
            results.append(_result(name, topic_id, exc))
    if deleted and request["timeout_ms"] > 0:
        await cluster.wait_for(lambda m: not any(n in m.topics for n in deleted), request["timeout_ms"] / 1000)
    return _response(results)


def _resolve(cluster: ClusterRuntime, name: str | None, topic_id: bytes) -> str:
    if (name is None) == (topic_id == ZERO_UUID):
        raise fail(ErrorCode.INVALID_REQUEST, "Exactly one of topic name and topic id must be given.")
    topics = cluster.metadata.topics
    if name is not None:
        if name not in topics:
            raise fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return name
    found = next((t for t, a in topics.items() if a.topic_id.bytes == bytes(topic_id)), None)
    if found is None:
        raise fail(ErrorCode.UNKNOWN_TOPIC_ID)
    return found


async def add_partitions_in_cluster(
    ctx: RequestContext, cluster: ClusterRuntime, request: dict[str, Any]
) -> dict[str, Any]:
    from kbroker.handlers.create_partitions import _response, _result

    names = [topic["name"] for topic in request["topics"]]
    results: dict[str, dict[str, Any]] = {}
    grown: list[str] = []
    for topic in request["topics"]:
        name = topic["name"]
        if name in results:
            continue
        try:
            if names.count(name) > 1:
                raise fail(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            if not cluster.is_controller:
                raise fail(ErrorCode.NOT_CONTROLLER, f"Broker {cluster.node_id} is not the controller.")
            given = topic["assignments"]
            assignment = None if given is None else [tuple(a["broker_ids"]) for a in given]
            try:
                await cluster.add_partitions(name, topic["count"], assignment, validate_only=request["validate_only"])
            except NotControllerError:
                raise fail(ErrorCode.NOT_CONTROLLER, f"Broker {cluster.node_id} is not the controller.") from None
            except NoNodeError:
                raise fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NO_MESSAGE) from None
            except InvalidPartitionCount as exc:
                raise fail(ErrorCode.INVALID_PARTITIONS, str(exc)) from None
            except InvalidReplicaAssignment as exc:
                raise fail(ErrorCode.INVALID_REPLICA_ASSIGNMENT, str(exc)) from None
            except InvalidReplicationFactor as exc:
                raise fail(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc)) from None
            except StaleStateError:
                raise fail(ErrorCode.UNKNOWN_SERVER_ERROR, "The topic kept changing meanwhile; try again.") from None
            results[name] = _result(name, None)
            if not request["validate_only"]:
                grown.append(name)
        except KafkaProtocolError as exc:
            results[name] = _result(name, exc)
    if grown and request["timeout_ms"] > 0:
        await cluster.wait_for(lambda m: all(m.leaders_known(n) for n in grown), request["timeout_ms"] / 1000)
    return _response(list(results.values()))

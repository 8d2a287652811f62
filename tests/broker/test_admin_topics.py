"""CreateTopics, DeleteTopics, CreatePartitions and DescribeCluster against a real kbroker process:
exact codes and fields with our codec, then the admin clients of kafka-python, confluent-kafka and aiokafka."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.broker.conftest import batch_of, produce, unique_topic
from tests.process import BrokerProcess, RawClient

ZERO_UUID = b"\x00" * 16
CONFIG_SOURCE_TOPIC = 1
CONFIG_SOURCE_STATIC_BROKER = 4
CONFIG_SOURCE_DEFAULT = 5


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker with non-default settings: 4 default partitions, deletion disabled, a static retention."""
    data = Path(tmp_path_factory.mktemp("configured")) / "data"
    process = BrokerProcess(
        data,
        "--config",
        "num.partitions=4",
        "--config",
        "delete.topic.enable=false",
        "--config",
        "log.retention.ms=3600000",
    ).start()
    try:
        yield process
    finally:
        process.stop()


def new_topic(name: str, partitions: int = 1, factor: int = 1, **extra: Any) -> dict[str, Any]:
    configs = extra.pop("configs", {})
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": factor,
        "assignments": extra.pop("assignments", []),
        "configs": [{"name": k, "value": v} for k, v in configs.items()],
    }


def create(raw: RawClient, *topics: dict[str, Any], version: int = 7, validate_only: bool = False) -> list[dict]:
    body = {"topics": list(topics), "timeout_ms": 5000, "validate_only": validate_only}
    return list(raw.call(ApiKey.CREATE_TOPICS, version, body)["topics"])


def create_one(raw: RawClient, topic: dict[str, Any], **kw: Any) -> dict[str, Any]:
    (result,) = create(raw, topic, **kw)
    assert result["name"] == topic["name"]
    return dict(result)


def metadata_topic(raw: RawClient, name: str) -> dict[str, Any]:
    body = {"topics": [{"topic_id": ZERO_UUID, "name": name}], "allow_auto_topic_creation": False}
    (topic,) = raw.call(ApiKey.METADATA, 12, body)["topics"]
    return dict(topic)


def partition_count(raw: RawClient, name: str) -> int:
    topic = metadata_topic(raw, name)
    assert topic["error_code"] == 0, topic
    return len(topic["partitions"])


def delete(raw: RawClient, names: list[str], version: int = 6) -> list[dict[str, Any]]:
    if version >= 6:
        body: dict[str, Any] = {"topics": [{"name": n, "topic_id": ZERO_UUID} for n in names], "timeout_ms": 5000}
    else:
        body = {"topic_names": names, "timeout_ms": 5000}
    return list(raw.call(ApiKey.DELETE_TOPICS, version, body)["responses"])


# --------------------------------------------------------------------------- CreateTopics, raw protocol


def test_create_v7_answers_partitions_configs_and_topic_id(raw: RawClient) -> None:
    name = unique_topic("create")
    result = create_one(raw, new_topic(name, 3, 1, configs={"retention.ms": "60000", "cleanup.policy": "delete"}))
    assert (result["error_code"], result["error_message"]) == (0, None)
    assert (result["num_partitions"], result["replication_factor"]) == (3, 1)
    configs = {c["name"]: c for c in result["configs"]}
    assert [c["name"] for c in result["configs"]] == sorted(configs)
    assert configs["retention.ms"]["value"] == "60000"
    assert configs["retention.ms"]["config_source"] == CONFIG_SOURCE_TOPIC
    assert configs["cleanup.policy"]["config_source"] == CONFIG_SOURCE_TOPIC
    assert configs["segment.bytes"]["config_source"] == CONFIG_SOURCE_DEFAULT
    assert not any(c["read_only"] or c["is_sensitive"] for c in result["configs"])
    meta = metadata_topic(raw, name)
    assert meta["error_code"] == 0 and len(meta["partitions"]) == 3
    assert result["topic_id"] == meta["topic_id"] != ZERO_UUID


def test_create_old_version_has_no_v5_fields(raw: RawClient) -> None:
    name = unique_topic("create-v2")
    result = create_one(raw, new_topic(name, 2), version=2)
    assert result["error_code"] == 0
    assert partition_count(raw, name) == 2


def test_minus_one_uses_broker_defaults(raw: RawClient, configured: BrokerProcess) -> None:
    name = unique_topic("defaults")
    assert create_one(raw, new_topic(name, -1, -1))["num_partitions"] == 1
    with RawClient(configured.bootstrap) as other:
        name = unique_topic("defaults")
        result = create_one(other, new_topic(name, -1, -1))
        assert (result["error_code"], result["num_partitions"], result["replication_factor"]) == (0, 4, 1)
        assert partition_count(other, name) == 4
        retention = next(c for c in result["configs"] if c["name"] == "retention.ms")
        assert (retention["value"], retention["config_source"]) == ("3600000", CONFIG_SOURCE_STATIC_BROKER)


@pytest.mark.parametrize(
    ("partitions", "factor", "code", "fragment"),
    [
        (1, 3, ErrorCode.INVALID_REPLICATION_FACTOR, "single-node"),
        (1, 2, ErrorCode.INVALID_REPLICATION_FACTOR, "only 1 broker(s)"),
        (1, 0, ErrorCode.INVALID_REPLICATION_FACTOR, "larger than 0"),
        (1, -2, ErrorCode.INVALID_REPLICATION_FACTOR, "larger than 0"),
        (0, 1, ErrorCode.INVALID_PARTITIONS, "non-positive"),
        (-5, 1, ErrorCode.INVALID_PARTITIONS, "non-positive"),
    ],
)
def test_create_bad_counts(raw: RawClient, partitions: int, factor: int, code: ErrorCode, fragment: str) -> None:
    name = unique_topic("bad-count")
    result = create_one(raw, new_topic(name, partitions, factor))
    assert result["error_code"] == code
    assert fragment in result["error_message"]
    assert (result["num_partitions"], result["replication_factor"], result["topic_id"]) == (-1, -1, ZERO_UUID)
    assert metadata_topic(raw, name)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("", "empty string"),
        (".", "'.' is not allowed"),
        ("..", "'..' is not allowed"),
        ("x" * 250, "longer than the max allowed length 249"),
        ("bad/name", "characters other than ASCII alphanumerics"),
        ("spaced name", "characters other than ASCII alphanumerics"),
    ],
)
def test_create_invalid_names(raw: RawClient, name: str, fragment: str) -> None:
    result = create_one(raw, new_topic(name))
    assert result["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert fragment in result["error_message"]


def test_longest_legal_name(raw: RawClient) -> None:
    name = unique_topic("long")
    name += "x" * (249 - len(name))
    assert create_one(raw, new_topic(name, 12))["error_code"] == 0
    assert produce(raw, name, batch_of(2), partition=11)["error_code"] == 0
    assert delete(raw, [name])[0]["error_code"] == 0
    assert metadata_topic(raw, name)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_create_existing_topic(raw: RawClient) -> None:
    name = unique_topic("exists")
    assert create_one(raw, new_topic(name, 2))["error_code"] == 0
    result = create_one(raw, new_topic(name, 5))
    assert result["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS
    assert result["error_message"] == f"Topic '{name}' already exists."
    assert partition_count(raw, name) == 2


def test_dot_and_underscore_collide(raw: RawClient) -> None:
    suffix = uuid.uuid4().hex[:8]
    assert create_one(raw, new_topic(f"dot.{suffix}"))["error_code"] == 0
    result = create_one(raw, new_topic(f"dot_{suffix}"))
    assert result["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert result["error_message"] == f"Topic 'dot_{suffix}' collides with existing topic: dot.{suffix}"


def test_duplicate_and_reserved_names(raw: RawClient) -> None:
    name = unique_topic("dup")
    results = create(raw, new_topic(name), new_topic(name), new_topic("__cluster_metadata"))
    assert [(r["name"], r["error_code"]) for r in results] == [
        (name, ErrorCode.INVALID_REQUEST),
        ("__cluster_metadata", ErrorCode.INVALID_REQUEST),
    ]
    assert results[0]["error_message"] == "Duplicate topic name."
    assert metadata_topic(raw, name)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize(
    ("configs", "fragment"),
    [
        ({"retention.ms": None}, "Null value not supported for topic configs: retention.ms"),
        ({"no.such.config": "1"}, "Unknown topic config name: no.such.config"),
        ({"retention.msec": "1"}, "did you mean 'retention.ms'"),
        ({"remote.storage.enable": "true"}, "Tiered Storage functionality is disabled in the broker"),
        ({"message.format.version": "3.0"}, "kbroker does not support"),
        ({"retention.ms": "abc"}, "retention.ms"),
        ({"segment.bytes": "1"}, "segment.bytes"),
        ({"cleanup.policy": "shred"}, "cleanup.policy"),
        ({"message.timestamp.type": "Now"}, "message.timestamp.type"),
        ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, "conflict topic config setting"),
    ],
)
def test_create_invalid_configs(raw: RawClient, configs: dict[str, str | None], fragment: str) -> None:
    name = unique_topic("bad-config")
    result = create_one(raw, new_topic(name, configs=configs))
    assert result["error_code"] == ErrorCode.INVALID_CONFIG
    assert fragment in result["error_message"]
    assert metadata_topic(raw, name)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_config_errors_come_before_count_errors(raw: RawClient) -> None:
    result = create_one(raw, new_topic(unique_topic("order"), 1, 3, configs={"nope": "1"}))
    assert result["error_code"] == ErrorCode.INVALID_CONFIG


def test_validate_only_creates_nothing(raw: RawClient) -> None:
    name = unique_topic("validate")
    result = create_one(raw, new_topic(name, 3, configs={"retention.ms": "1000"}), validate_only=True)
    assert (result["error_code"], result["num_partitions"], result["replication_factor"]) == (0, 3, 1)
    assert {c["name"]: c["value"] for c in result["configs"]}["retention.ms"] == "1000"
    assert metadata_topic(raw, name)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    bad = create_one(raw, new_topic(name, 3, 3), validate_only=True)
    assert bad["error_code"] == ErrorCode.INVALID_REPLICATION_FACTOR


def assignment(*partitions: list[int]) -> list[dict[str, Any]]:
    return [{"partition_index": i, "broker_ids": ids} for i, ids in enumerate(partitions)]


def test_manual_assignment_on_this_node(raw: RawClient) -> None:
    name = unique_topic("assigned")
    result = create_one(raw, new_topic(name, -1, -1, assignments=assignment([1], [1], [1])))
    assert (result["error_code"], result["num_partitions"], result["replication_factor"]) == (0, 3, 1)
    assert partition_count(raw, name) == 3


@pytest.mark.parametrize(
    ("partitions", "factor", "assignments", "code", "fragment"),
    [
        (-1, -1, assignment([2]), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "includes broker 2"),
        (-1, -1, assignment([1, 2]), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "includes broker 2"),
        (-1, -1, assignment([1, 1]), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "more than once"),
        (-1, -1, assignment([]), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "empty replica list"),
        (-1, -1, [{"partition_index": 1, "broker_ids": [1]}], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "consecutive"),
        (
            -1,
            -1,
            [{"partition_index": 0, "broker_ids": [1]}, {"partition_index": 0, "broker_ids": [1]}],
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "multiple manual partition assignments for partition 0",
        ),
        (-1, 1, assignment([1]), ErrorCode.INVALID_REQUEST, "replication factor was not set to -1"),
        (1, -1, assignment([1]), ErrorCode.INVALID_REQUEST, "numPartitions was not set to -1"),
    ],
)
def test_bad_manual_assignments(
    raw: RawClient, partitions: int, factor: int, assignments: list[dict[str, Any]], code: ErrorCode, fragment: str
) -> None:
    name = unique_topic("bad-assign")
    result = create_one(raw, new_topic(name, partitions, factor, assignments=assignments))
    assert result["error_code"] == code
    assert fragment in result["error_message"]


def test_too_many_partitions_in_one_request(raw: RawClient) -> None:
    results = create(raw, new_topic(unique_topic("huge"), 6000), new_topic(unique_topic("huge"), 6000))
    assert [r["error_code"] for r in results] == [ErrorCode.POLICY_VIOLATION] * 2


# --------------------------------------------------------------------------- DeleteTopics, raw protocol


def test_delete_by_name_then_unknown(raw: RawClient) -> None:
    name = unique_topic("delete")
    topic_id = create_one(raw, new_topic(name, 2))["topic_id"]
    (result,) = delete(raw, [name])
    assert (result["name"], result["topic_id"], result["error_code"]) == (name, topic_id, 0)
    assert metadata_topic(raw, name)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    for version in (1, 5, 6):
        (again,) = delete(raw, [name], version=version)
        assert again["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_delete_then_recreate_is_empty(raw: RawClient) -> None:
    name = unique_topic("recreate")
    create_one(raw, new_topic(name))
    assert produce(raw, name, batch_of(5))["error_code"] == 0
    assert delete(raw, [name])[0]["error_code"] == 0
    create_one(raw, new_topic(name))
    assert produce(raw, name, batch_of(1))["base_offset"] == 0


def test_delete_by_topic_id(raw: RawClient) -> None:
    name = unique_topic("delete-id")
    topic_id = create_one(raw, new_topic(name))["topic_id"]
    body = {"topics": [{"name": None, "topic_id": topic_id}], "timeout_ms": 5000}
    (result,) = raw.call(ApiKey.DELETE_TOPICS, 6, body)["responses"]
    assert (result["name"], result["topic_id"], result["error_code"]) == (name, topic_id, 0)
    (again,) = raw.call(ApiKey.DELETE_TOPICS, 6, body)["responses"]
    assert (again["name"], again["error_code"]) == (None, ErrorCode.UNKNOWN_TOPIC_ID)


def test_delete_invalid_entries(raw: RawClient) -> None:
    name = unique_topic("delete-bad")
    topic_id = create_one(raw, new_topic(name))["topic_id"]
    topics = [
        {"name": name, "topic_id": topic_id},
        {"name": None, "topic_id": ZERO_UUID},
        {"name": "dup-x", "topic_id": ZERO_UUID},
        {"name": "dup-x", "topic_id": ZERO_UUID},
    ]
    results = raw.call(ApiKey.DELETE_TOPICS, 6, {"topics": topics, "timeout_ms": 5000})["responses"]
    assert [r["error_code"] for r in results] == [ErrorCode.INVALID_REQUEST] * 3  # the duplicate is answered once
    assert results[0]["error_message"] == "You may not specify both topic name and topic id."
    assert results[1]["error_message"] == "Neither topic name nor id were specified."
    assert results[2]["error_message"] == "Duplicate topic name."
    assert partition_count(raw, name) == 1


def test_delete_disabled(configured: BrokerProcess) -> None:
    with RawClient(configured.bootstrap) as raw:
        name = unique_topic("keep")
        create_one(raw, new_topic(name))
        (result,) = delete(raw, [name], version=4)
        assert result["error_code"] == ErrorCode.TOPIC_DELETION_DISABLED
        (old,) = delete(raw, [name], version=1)
        assert old["error_code"] == ErrorCode.INVALID_REQUEST
        assert partition_count(raw, name) == 1


# --------------------------------------------------------------------------- CreatePartitions, raw protocol


def create_partitions(
    raw: RawClient, *topics: tuple[str, int, list[list[int]] | None], validate_only: bool = False, version: int = 3
) -> list[dict[str, Any]]:
    body = {
        "topics": [
            {
                "name": name,
                "count": count,
                "assignments": None if assigned is None else [{"broker_ids": ids} for ids in assigned],
            }
            for name, count, assigned in topics
        ],
        "timeout_ms": 5000,
        "validate_only": validate_only,
    }
    return list(raw.call(ApiKey.CREATE_PARTITIONS, version, body)["results"])


def test_create_partitions_grows_and_new_partitions_take_records(raw: RawClient) -> None:
    name = unique_topic("grow")
    create_one(raw, new_topic(name, 2))
    (result,) = create_partitions(raw, (name, 5, None))
    assert (result["error_code"], result["error_message"]) == (0, None)
    assert partition_count(raw, name) == 5
    assert produce(raw, name, batch_of(3), partition=4)["error_code"] == 0
    (assigned,) = create_partitions(raw, (name, 7, [[1], [1]]), version=0)
    assert assigned["error_code"] == 0
    assert partition_count(raw, name) == 7


def test_create_partitions_validate_only(raw: RawClient) -> None:
    name = unique_topic("grow-validate")
    create_one(raw, new_topic(name, 1))
    (result,) = create_partitions(raw, (name, 3, None), validate_only=True)
    assert result["error_code"] == 0
    assert partition_count(raw, name) == 1


def test_create_partitions_errors(raw: RawClient) -> None:
    name = unique_topic("grow-bad")
    create_one(raw, new_topic(name, 3))
    cases = [
        ((name, 3, None), ErrorCode.INVALID_PARTITIONS, "Topic already has 3 partition(s)."),
        ((name, 2, None), ErrorCode.INVALID_PARTITIONS, f"The topic {name} currently has 3 partition(s); 2 would"),
        ((name, 5, [[1]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "add 2 additional partition(s), but only 1"),
        ((name, 4, [[2]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "includes broker 2"),
        ((unique_topic("missing"), 4, None), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ""),
    ]
    for topic, code, fragment in cases:
        (result,) = create_partitions(raw, topic)
        assert result["error_code"] == code, (topic, result)
        assert fragment in (result["error_message"] or ""), result
    results = create_partitions(raw, (name, 6, None), (name, 7, None))
    assert [(r["name"], r["error_code"]) for r in results] == [(name, ErrorCode.INVALID_REQUEST)]
    assert partition_count(raw, name) == 3


# --------------------------------------------------------------------------- DescribeCluster, raw protocol


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_cluster(raw: RawClient, broker: BrokerProcess, version: int) -> None:
    body = {"include_cluster_authorized_operations": False, "include_fenced_brokers": version >= 2}
    response = raw.call(ApiKey.DESCRIBE_CLUSTER, version, body)
    assert response["error_code"] == 0
    assert response["controller_id"] == 1
    assert [(b["broker_id"], b["host"], b["port"]) for b in response["brokers"]] == [(1, "127.0.0.1", broker.port)]
    metadata = raw.call(ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
    assert response["cluster_id"] == metadata["cluster_id"] and response["cluster_id"]
    assert response["cluster_authorized_operations"] == -(2**31)
    if version >= 1:
        assert response["endpoint_type"] == 1
    if version >= 2:
        assert [b["is_fenced"] for b in response["brokers"]] == [False]  # this node is never fenced


def test_describe_cluster_operations_and_endpoint_types(raw: RawClient) -> None:
    response = raw.call(ApiKey.DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True})
    operations = response["cluster_authorized_operations"]
    assert {bit for bit in range(32) if operations >> bit & 1} == {5, 7, 8, 9, 10, 11, 12}
    controller = raw.call(ApiKey.DESCRIBE_CLUSTER, 1, {"endpoint_type": 2})
    assert controller["error_code"] == ErrorCode.MISMATCHED_ENDPOINT_TYPE
    unknown = raw.call(ApiKey.DESCRIBE_CLUSTER, 1, {"endpoint_type": 7})
    assert unknown["error_code"] == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE


# --------------------------------------------------------------------------- kafka-python


def test_kafka_python_admin(broker: BrokerProcess) -> None:
    from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic
    from kafka.errors import (
        InvalidPartitionsError,
        InvalidReplicationFactorError,
        InvalidTopicError,
        TopicAlreadyExistsError,
        UnknownTopicOrPartitionError,
    )

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    try:
        name = unique_topic("kp")
        created = admin.create_topics([NewTopic(name, 3, 1, topic_configs={"retention.ms": "120000"})])
        (result,) = created["topics"]
        assert (result["error_code"], result["num_partitions"]) == (0, 3)
        assert result["configs"]["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        assert name in admin.list_topics()
        probe = unique_topic("kp-validate")
        admin.create_topics([NewTopic(probe, 1, 1)], validate_only=True)
        assert probe not in admin.list_topics()
        with pytest.raises(InvalidReplicationFactorError, match="single-node"):
            admin.create_topics([NewTopic(unique_topic("kp"), 1, 3)])
        with pytest.raises(InvalidTopicError):
            admin.create_topics([NewTopic("kp bad name", 1, 1)])
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic(name, 1, 1)])
        admin.create_partitions({name: NewPartitions(5)})
        with pytest.raises(InvalidPartitionsError):
            admin.create_partitions({name: NewPartitions(2)})
        (described,) = admin.describe_topics([name])
        assert len(described["partitions"]) == 5
        cluster = admin.describe_cluster()
        assert [b["broker_id"] for b in cluster["brokers"]] == [1] and cluster["controller_id"] == 1
        assert cluster["cluster_id"]
        admin.delete_topics([name])
        assert name not in admin.list_topics()
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.delete_topics([name])
    finally:
        admin.close()


# --------------------------------------------------------------------------- confluent-kafka (librdkafka)


def confluent_error(future: Any) -> tuple[int, str]:
    from confluent_kafka import KafkaException

    with pytest.raises(KafkaException) as info:
        future.result(timeout=10)
    error = info.value.args[0]
    return error.code(), error.str()


def test_confluent_admin(broker: BrokerProcess) -> None:
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    name, bad_rf, probe = unique_topic("ck"), unique_topic("ck"), unique_topic("ck-validate")
    futures = admin.create_topics(
        [NewTopic(name, 3, 1, config={"retention.ms": "60000"}), NewTopic(bad_rf, 1, 3), NewTopic("ck/bad", 1, 1)],
        request_timeout=10,
    )
    assert futures[name].result(timeout=10) is None
    code, message = confluent_error(futures[bad_rf])
    assert code == ErrorCode.INVALID_REPLICATION_FACTOR and "single-node" in message
    assert confluent_error(futures["ck/bad"])[0] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert confluent_error(admin.create_topics([NewTopic(name, 1, 1)])[name])[0] == ErrorCode.TOPIC_ALREADY_EXISTS
    assert admin.create_topics([NewTopic(probe, 2, 1)], validate_only=True)[probe].result(timeout=10) is None
    topics = admin.list_topics(timeout=10).topics
    assert name in topics and probe not in topics and len(topics[name].partitions) == 3
    assert admin.create_partitions([NewPartitions(name, 6)])[name].result(timeout=10) is None
    assert confluent_error(admin.create_partitions([NewPartitions(name, 4)])[name])[0] == ErrorCode.INVALID_PARTITIONS
    assert len(admin.list_topics(name, timeout=10).topics[name].partitions) == 6
    cluster = admin.describe_cluster(request_timeout=10).result(timeout=10)
    assert [node.id for node in cluster.nodes] == [1] and cluster.controller.id == 1 and cluster.cluster_id
    assert admin.delete_topics([name])[name].result(timeout=10) is None
    missing = admin.delete_topics([name])[name]
    assert confluent_error(missing)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# --------------------------------------------------------------------------- aiokafka


def test_aiokafka_admin(broker: BrokerProcess) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
    from aiokafka.errors import InvalidPartitionsError

    async def scenario() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
        await admin.start()
        try:
            name = unique_topic("aio")
            response = await admin.create_topics([NewTopic(name, 2, 1, topic_configs={"segment.bytes": "1048576"})])
            assert [(t[0], t[1]) for t in response.topic_errors] == [(name, 0)]
            response = await admin.create_topics([NewTopic(unique_topic("aio"), 1, 2)])
            assert response.topic_errors[0][1] == ErrorCode.INVALID_REPLICATION_FACTOR
            response = await admin.create_topics([NewTopic(name, 1, 1)])
            assert response.topic_errors[0][1] == ErrorCode.TOPIC_ALREADY_EXISTS
            await admin.create_partitions({name: NewPartitions(4)})
            with pytest.raises(InvalidPartitionsError):
                await admin.create_partitions({name: NewPartitions(3)})
            (described,) = await admin.describe_topics([name])
            assert len(described["partitions"]) == 4
            response = await admin.delete_topics([name])
            assert [(t[0], t[1]) for t in response.topic_error_codes] == [(name, 0)]
            assert name not in await admin.list_topics()
        finally:
            await admin.close()

    asyncio.run(scenario())


# --------------------------------------------------------------------------- in-process: the deletion hook

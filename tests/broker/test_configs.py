"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs against a real kbroker process: sources,
synonyms, types and documentation, exact error codes, the effect of a change on running logs, and the
same through kafka-python, confluent-kafka and aiokafka."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.broker.conftest import batch_of, produce, unique_topic
from tests.process import BrokerProcess, RawClient

TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
SOURCE_TOPIC, SOURCE_STATIC, SOURCE_DEFAULT = 1, 4, 5
TYPE_BOOLEAN, TYPE_STRING, TYPE_INT, TYPE_LONG, TYPE_DOUBLE, TYPE_LIST = 1, 2, 3, 5, 6, 7


@pytest.fixture(scope="module")
def static_retention(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker with log.retention.ms set on its command line."""
    data = Path(tmp_path_factory.mktemp("static")) / "data"
    process = BrokerProcess(data, "--config", "log.retention.ms=3600000").start()
    try:
        yield process
    finally:
        process.stop()


def create_topic(raw: RawClient, configs: dict[str, str] | None = None, partitions: int = 1) -> str:
    name = unique_topic("cfg")
    topic = {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": 1,
        "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }
    (result,) = raw.call(ApiKey.CREATE_TOPICS, 7, {"topics": [topic], "timeout_ms": 5000})["topics"]
    assert result["error_code"] == 0, result
    return name


def describe(
    raw: RawClient,
    resource_type: int,
    name: str,
    keys: list[str] | None = None,
    *,
    version: int = 4,
    synonyms: bool = False,
    documentation: bool = False,
) -> dict[str, Any]:
    body = {
        "resources": [{"resource_type": resource_type, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": synonyms,
        "include_documentation": documentation,
    }
    (result,) = raw.call(ApiKey.DESCRIBE_CONFIGS, version, body)["results"]
    assert (result["resource_type"], result["resource_name"]) == (resource_type, name)
    return dict(result)


def topic_configs(raw: RawClient, name: str, **kw: Any) -> dict[str, dict[str, Any]]:
    result = describe(raw, TOPIC, name, **kw)
    assert result["error_code"] == 0, result
    return {c["name"]: c for c in result["configs"]}


def alter(raw: RawClient, resources: list[tuple[int, str, dict[str, str | None]]], validate_only: bool = False) -> list:
    body = {
        "resources": [
            {
                "resource_type": rtype,
                "resource_name": name,
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }
            for rtype, name, configs in resources
        ],
        "validate_only": validate_only,
    }
    return list(raw.call(ApiKey.ALTER_CONFIGS, 2, body)["responses"])


def alter_one(raw: RawClient, rtype: int, name: str, configs: dict[str, str | None], **kw: Any) -> dict[str, Any]:
    (result,) = alter(raw, [(rtype, name, configs)], **kw)
    return dict(result)


def incremental(
    raw: RawClient, rtype: int, name: str, ops: Sequence[tuple[str, int, str | None]], validate_only: bool = False
) -> dict[str, Any]:
    body = {
        "resources": [
            {
                "resource_type": rtype,
                "resource_name": name,
                "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops],
            }
        ],
        "validate_only": validate_only,
    }
    (result,) = raw.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"]
    assert (result["resource_type"], result["resource_name"]) == (rtype, name)
    return dict(result)


def values(raw: RawClient, name: str) -> dict[str, tuple[str | None, int]]:
    return {k: (c["value"], c["config_source"]) for k, c in topic_configs(raw, name).items()}


# --------------------------------------------------------------------------- DescribeConfigs


def test_topic_sources_and_synonyms(raw: RawClient) -> None:
    name = create_topic(raw, {"retention.ms": "60000"})
    configs = topic_configs(raw, name, synonyms=True)
    retention = configs["retention.ms"]
    assert (retention["value"], retention["config_source"], retention["read_only"]) == ("60000", SOURCE_TOPIC, False)
    synonyms = [(s["name"], s["source"]) for s in retention["synonyms"]]
    # As Kafka 4.3: its ConfigHelper drops the broker synonyms ranked before the first one carrying the
    # primary broker name (log.retention.ms, unset), so log.retention.hours is not listed.
    assert synonyms == [("retention.ms", SOURCE_TOPIC)]
    assert retention["synonyms"][0]["value"] == "60000"
    segment = configs["segment.bytes"]
    assert (segment["value"], segment["config_source"]) == ("1073741824", SOURCE_DEFAULT)
    assert [(s["name"], s["value"], s["source"]) for s in segment["synonyms"]] == [
        ("log.segment.bytes", "1073741824", SOURCE_DEFAULT)
    ]
    assert not any(c["is_sensitive"] for c in configs.values())
    plain = topic_configs(raw, name)
    assert all(c["synonyms"] == [] for c in plain.values())
    assert plain["retention.ms"]["config_source"] == SOURCE_TOPIC


def test_static_broker_value_is_the_topic_default(static_retention: BrokerProcess) -> None:
    with RawClient(static_retention.bootstrap) as raw:
        name = create_topic(raw)
        retention = topic_configs(raw, name, synonyms=True)["retention.ms"]
        assert (retention["value"], retention["config_source"]) == ("3600000", SOURCE_STATIC)
        assert [(s["name"], s["value"], s["source"]) for s in retention["synonyms"]][0] == (
            "log.retention.ms",
            "3600000",
            SOURCE_STATIC,
        )
        broker = {c["name"]: c for c in describe(raw, BROKER, "1", ["log.retention.ms"])["configs"]}
        assert (broker["log.retention.ms"]["value"], broker["log.retention.ms"]["config_source"]) == (
            "3600000",
            SOURCE_STATIC,
        )


def test_types_and_documentation(raw: RawClient) -> None:
    name = create_topic(raw)
    configs = topic_configs(raw, name, documentation=True)
    expected = {
        "retention.ms": TYPE_LONG,
        "segment.bytes": TYPE_INT,
        "cleanup.policy": TYPE_LIST,
        "preallocate": TYPE_BOOLEAN,
        "min.cleanable.dirty.ratio": TYPE_DOUBLE,
        "compression.type": TYPE_STRING,
    }
    assert {k: configs[k]["config_type"] for k in expected} == expected
    assert all(isinstance(c["documentation"], str) and c["documentation"] for c in configs.values())
    assert all(c["documentation"] is None for c in topic_configs(raw, name).values())
    assert configs["min.cleanable.dirty.ratio"]["value"] == "0.5"
    assert configs["cleanup.policy"]["value"] == "delete"


def test_requested_keys_filter(raw: RawClient) -> None:
    name = create_topic(raw)
    result = describe(raw, TOPIC, name, ["retention.ms", "no.such.config", "segment.ms"])
    assert sorted(c["name"] for c in result["configs"]) == ["retention.ms", "segment.ms"]
    assert len(describe(raw, TOPIC, name, [])["configs"]) == len(describe(raw, TOPIC, name, None)["configs"]) > 20


def test_old_version_and_several_resources(raw: RawClient) -> None:
    name = create_topic(raw, {"segment.ms": "100000"})
    body = {
        "resources": [
            {"resource_type": TOPIC, "resource_name": name, "configuration_keys": ["segment.ms"]},
            {"resource_type": TOPIC, "resource_name": unique_topic("absent"), "configuration_keys": None},
        ],
        "include_synonyms": True,
    }
    first, missing = raw.call(ApiKey.DESCRIBE_CONFIGS, 1, body)["results"]
    (config,) = first["configs"]
    # log.roll.hours is dropped: the primary broker name log.roll.ms is unset (Kafka's ConfigHelper)
    assert (config["value"], config["config_source"], len(config["synonyms"])) == ("100000", SOURCE_TOPIC, 1)
    assert (missing["error_code"], missing["configs"]) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])


def test_describe_errors(raw: RawClient) -> None:
    assert describe(raw, TOPIC, "bad name")["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    for rtype, name, fragment in [
        (BROKER, "2", "Unexpected broker id, expected 1"),
        (BROKER, "one", "must be an integer"),
        (BROKER_LOGGER, "", "Broker id must not be empty"),
        (BROKER_LOGGER, "2", "Unexpected broker id, expected 1"),
        (GROUP, "", "Group name must not be empty"),
        (16, "m", "Unsupported resource type"),
    ]:
        result = describe(raw, rtype, name)
        assert result["error_code"] == ErrorCode.INVALID_REQUEST, result
        assert fragment in result["error_message"]


def test_broker_configs(raw: RawClient, broker: BrokerProcess) -> None:
    result = describe(raw, BROKER, "1", synonyms=True, documentation=True)
    assert result["error_code"] == 0
    configs = {c["name"]: c for c in result["configs"]}
    writable = {name for name, c in configs.items() if not c["read_only"]}
    assert "log.retention.ms" in writable and "message.max.bytes" in writable
    assert not writable & {"log.retention.hours", "num.partitions", "listeners", "node.id"}
    assert (configs["listeners"]["value"], configs["listeners"]["config_source"]) == (
        f"PLAINTEXT://{broker.bootstrap}",
        SOURCE_STATIC,
    )
    assert configs["log.dirs"]["config_source"] == SOURCE_STATIC
    assert (configs["num.partitions"]["value"], configs["num.partitions"]["config_source"]) == ("1", SOURCE_DEFAULT)
    assert configs["num.partitions"]["config_type"] == TYPE_INT
    hours = configs["log.retention.hours"]
    assert [s["name"] for s in hours["synonyms"]] == ["log.retention.hours"]
    assert describe(raw, BROKER, "")["configs"] == []
    named = describe(raw, BROKER, "1", ["num.io.threads", "message.max.bytes", "nope"])["configs"]
    assert sorted(c["name"] for c in named) == ["message.max.bytes", "num.io.threads"]


# --------------------------------------------------------------------------- AlterConfigs


def test_alter_configs_replaces_every_override(raw: RawClient) -> None:
    name = create_topic(raw, {"retention.ms": "60000", "segment.ms": "100000"})
    assert alter_one(raw, TOPIC, name, {"max.message.bytes": "2000"})["error_code"] == 0
    now = values(raw, name)
    assert now["max.message.bytes"] == ("2000", SOURCE_TOPIC)
    assert now["retention.ms"][1] == SOURCE_DEFAULT and now["segment.ms"][1] == SOURCE_DEFAULT
    assert alter_one(raw, TOPIC, name, {})["error_code"] == 0
    assert all(source == SOURCE_DEFAULT for _, source in values(raw, name).values())


def test_alter_configs_validate_only(raw: RawClient) -> None:
    name = create_topic(raw, {"retention.ms": "60000"})
    assert alter_one(raw, TOPIC, name, {"retention.ms": "1000"}, validate_only=True)["error_code"] == 0
    assert values(raw, name)["retention.ms"] == ("60000", SOURCE_TOPIC)
    bad = alter_one(raw, TOPIC, name, {"retention.ms": "x"}, validate_only=True)
    assert bad["error_code"] == ErrorCode.INVALID_CONFIG


def test_alter_configs_errors(raw: RawClient) -> None:
    name = create_topic(raw, {"retention.ms": "60000"})
    absent = unique_topic("absent")
    cases: list[tuple[int, str, dict[str, str | None], ErrorCode, str]] = [
        (TOPIC, name, {"no.such.config": "1"}, ErrorCode.INVALID_CONFIG, "Unknown topic config name: no.such.config"),
        (TOPIC, name, {"retention.ms": "soon"}, ErrorCode.INVALID_CONFIG, "retention.ms"),
        (TOPIC, name, {"segment.bytes": "10"}, ErrorCode.INVALID_CONFIG, "segment.bytes"),
        (TOPIC, name, {"retention.ms": None}, ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms"),
        (TOPIC, absent, {"retention.ms": "1"}, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{absent}' does not"),
        (TOPIC, absent, {"nope": "1"}, ErrorCode.INVALID_CONFIG, "nope"),
        (TOPIC, "", {}, ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed."),
        (TOPIC, "a b", {}, ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid"),
        (BROKER, "1", {"log.retention.hours": "1"}, ErrorCode.INVALID_REQUEST, "Cannot update these configs dynam"),
        (BROKER, "", {"num.partitions": "3"}, ErrorCode.INVALID_REQUEST, "dynamically: [num.partitions]"),
        (BROKER, "", {"log.retention.ms": "soon"}, ErrorCode.INVALID_REQUEST, "Invalid value soon for configuration"),
        (BROKER, "9", {}, ErrorCode.INVALID_REQUEST, "Unexpected broker id"),
        (BROKER_LOGGER, "1", {"root": "DEBUG"}, ErrorCode.INVALID_REQUEST, "does not support the resource type"),
    ]
    for rtype, resource, configs, code, fragment in cases:
        result = alter_one(raw, rtype, resource, configs)
        assert result["error_code"] == code, (resource, configs, result)
        assert fragment in result["error_message"], result
    assert alter_one(raw, BROKER, "1", {})["error_code"] == 0
    assert values(raw, name)["retention.ms"] == ("60000", SOURCE_TOPIC)


def test_alter_configs_duplicates(raw: RawClient) -> None:
    name = create_topic(raw)
    twice = alter(raw, [(TOPIC, name, {"retention.ms": "1000"}), (TOPIC, name, {"segment.ms": "1000"})])
    assert [r["error_code"] for r in twice] == [ErrorCode.INVALID_REQUEST] * 2
    body = {
        "resources": [
            {
                "resource_type": TOPIC,
                "resource_name": name,
                "configs": [{"name": "retention.ms", "value": "1"}, {"name": "retention.ms", "value": "2"}],
            }
        ],
        "validate_only": False,
    }
    (result,) = raw.call(ApiKey.ALTER_CONFIGS, 0, body)["responses"]
    assert (result["error_code"], result["error_message"]) == (
        ErrorCode.INVALID_REQUEST,
        "Error due to duplicate config keys",
    )
    assert values(raw, name)["retention.ms"][1] == SOURCE_DEFAULT


# --------------------------------------------------------------------------- IncrementalAlterConfigs


def test_incremental_set_and_delete(raw: RawClient) -> None:
    name = create_topic(raw, {"retention.ms": "60000", "segment.ms": "100000"})
    result = incremental(raw, TOPIC, name, [("retention.ms", SET, "120000"), ("segment.ms", DELETE, None)])
    assert (result["error_code"], result["error_message"]) == (0, None)
    now = values(raw, name)
    assert now["retention.ms"] == ("120000", SOURCE_TOPIC)
    assert now["segment.ms"][1] == SOURCE_DEFAULT
    # Deleting what is not set (even an unknown name) changes nothing, as in Kafka.
    assert incremental(raw, TOPIC, name, [("flush.ms", DELETE, None), ("no.such", DELETE, None)])["error_code"] == 0
    assert values(raw, name)["retention.ms"] == ("120000", SOURCE_TOPIC)


def test_incremental_append_and_subtract(raw: RawClient) -> None:
    name = create_topic(raw)
    assert incremental(raw, TOPIC, name, [("cleanup.policy", APPEND, "compact")])["error_code"] == 0
    assert values(raw, name)["cleanup.policy"] == ("delete,compact", SOURCE_TOPIC)
    assert incremental(raw, TOPIC, name, [("cleanup.policy", APPEND, "compact,delete")])["error_code"] == 0
    assert values(raw, name)["cleanup.policy"] == ("delete,compact", SOURCE_TOPIC)
    assert incremental(raw, TOPIC, name, [("cleanup.policy", SUBTRACT, "delete")])["error_code"] == 0
    assert values(raw, name)["cleanup.policy"] == ("compact", SOURCE_TOPIC)
    # An empty list is accepted as in Kafka: neither deletion nor compaction.
    assert incremental(raw, TOPIC, name, [("cleanup.policy", SUBTRACT, "compact")])["error_code"] == 0
    assert values(raw, name)["cleanup.policy"] == ("", SOURCE_TOPIC)


def test_incremental_errors(raw: RawClient) -> None:
    name = create_topic(raw, {"retention.ms": "60000"})
    cases: list[tuple[list[tuple[str, int, str | None]], ErrorCode, str]] = [
        ([("retention.ms", APPEND, "5")], ErrorCode.INVALID_CONFIG, "Can't APPEND to key retention.ms"),
        ([("segment.ms", SUBTRACT, "5")], ErrorCode.INVALID_CONFIG, "Can't SUBTRACT to key segment.ms"),
        ([("no.such", SET, "5")], ErrorCode.INVALID_CONFIG, "Unknown topic config name: no.such"),
        ([("retention.ms", SET, "-7")], ErrorCode.INVALID_CONFIG, "retention.ms"),
        ([("retention.ms", SET, None)], ErrorCode.INVALID_REQUEST, "Null value not supported"),
        ([("retention.ms", 9, "1")], ErrorCode.INVALID_REQUEST, "Unknown operations type 9"),
        ([("retention.ms", SET, "1"), ("retention.ms", DELETE, None)], ErrorCode.INVALID_REQUEST, "duplicate"),
    ]
    for ops, code, fragment in cases:
        result = incremental(raw, TOPIC, name, ops)
        assert result["error_code"] == code, (ops, result)
        assert fragment in result["error_message"], result
    broker = incremental(raw, BROKER, "1", [("log.retention.hours", SET, "1")])
    assert broker["error_code"] == ErrorCode.INVALID_REQUEST
    logger = incremental(raw, BROKER_LOGGER, "1", [("kbroker", APPEND, "DEBUG")])
    assert logger["error_code"] == ErrorCode.INVALID_REQUEST
    absent = incremental(raw, TOPIC, unique_topic("absent"), [("retention.ms", SET, "1")])
    assert absent["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert values(raw, name)["retention.ms"] == ("60000", SOURCE_TOPIC)


def test_incremental_validate_only(raw: RawClient) -> None:
    name = create_topic(raw)
    assert incremental(raw, TOPIC, name, [("retention.ms", SET, "5000")], validate_only=True)["error_code"] == 0
    assert values(raw, name)["retention.ms"][1] == SOURCE_DEFAULT


# --------------------------------------------------------------------------- effect on the running logs


def test_max_message_bytes_applies_at_once(raw: RawClient) -> None:
    name = create_topic(raw)
    big = batch_of(1, value_size=3000)
    assert produce(raw, name, big)["error_code"] == 0
    assert incremental(raw, TOPIC, name, [("max.message.bytes", SET, "1000")])["error_code"] == 0
    assert produce(raw, name, big)["error_code"] == ErrorCode.MESSAGE_TOO_LARGE
    assert produce(raw, name, batch_of(1, value_size=100))["error_code"] == 0
    assert incremental(raw, TOPIC, name, [("max.message.bytes", DELETE, None)])["error_code"] == 0
    assert produce(raw, name, big)["error_code"] == 0


def test_segment_bytes_and_timestamp_type_apply_at_once(raw: RawClient, broker: BrokerProcess) -> None:
    name = create_topic(raw)
    assert produce(raw, name, batch_of(1))["log_append_time_ms"] == -1
    ops = [("segment.bytes", SET, "1024"), ("message.timestamp.type", SET, "LogAppendTime")]
    assert incremental(raw, TOPIC, name, ops)["error_code"] == 0
    for _ in range(6):
        answer = produce(raw, name, batch_of(4, value_size=100))
        assert answer["error_code"] == 0 and answer["log_append_time_ms"] > 1_000_000_000_000
    segments = list((broker.data_dir / f"{name}-0").glob("*.log"))
    assert len(segments) > 1


def test_timestamp_limits_default_and_apply_at_once(raw: RawClient) -> None:
    """message.timestamp.after.max.ms defaults to Kafka 4's one hour (topic and broker), and an override
    changes what Produce accepts at once."""
    name = create_topic(raw)
    now = values(raw, name)
    assert now["message.timestamp.after.max.ms"] == ("3600000", SOURCE_DEFAULT)
    assert now["message.timestamp.before.max.ms"] == ("9223372036854775807", SOURCE_DEFAULT)
    broker = {c["name"]: c for c in describe(raw, BROKER, "1", ["log.message.timestamp.after.max.ms"])["configs"]}
    assert broker["log.message.timestamp.after.max.ms"]["value"] == "3600000"
    late = batch_of(1, start_ts=int(time.time() * 1000) + 2 * 3_600_000)
    assert produce(raw, name, late)["error_code"] == ErrorCode.INVALID_TIMESTAMP
    assert incremental(raw, TOPIC, name, [("message.timestamp.after.max.ms", SET, "86400000")])["error_code"] == 0
    assert produce(raw, name, late)["error_code"] == 0


def test_overrides_survive_a_restart(start_broker: Callable[..., BrokerProcess]) -> None:
    first = start_broker()
    with RawClient(first.bootstrap) as raw:
        name = create_topic(raw, {"retention.ms": "60000"})
        assert incremental(raw, TOPIC, name, [("segment.ms", SET, "200000")])["error_code"] == 0
    first.stop()
    again = BrokerProcess(first.data_dir).start()
    try:
        with RawClient(again.bootstrap) as raw:
            now = values(raw, name)
            assert now["retention.ms"] == ("60000", SOURCE_TOPIC)
            assert now["segment.ms"] == ("200000", SOURCE_TOPIC)
    finally:
        again.stop()


# --------------------------------------------------------------------------- real clients


def test_kafka_python_configs(broker: BrokerProcess) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    try:
        name = unique_topic("kp-cfg")
        admin.create_topics([NewTopic(name, 1, 1, topic_configs={"retention.ms": "60000"})])
        resource = ConfigResource(ConfigResourceType.TOPIC, name)
        described = admin.describe_configs([resource], include_synonyms=True, config_filter="all")["topic"][name]
        assert described["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        assert described["segment.bytes"]["config_source"] == "DEFAULT_CONFIG"
        assert described["retention.ms"]["synonyms"][0]["source"] == "DYNAMIC_TOPIC_CONFIG"
        modified = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])["topic"][name]
        assert set(modified) == {"retention.ms"}
        changes = ConfigResource(ConfigResourceType.TOPIC, name, configs={"segment.ms": "300000"})
        assert admin.alter_configs([changes]) == {"topic": {name: "OK"}}
        legacy = ConfigResource(ConfigResourceType.TOPIC, name, configs={"max.message.bytes": "5000"})
        assert admin.alter_configs([legacy], incremental=False) == {"topic": {name: "OK"}}
        modified = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])["topic"][name]
        assert {k: v["value"] for k, v in modified.items()} == {
            "retention.ms": "60000",
            "segment.ms": "300000",
            "max.message.bytes": "5000",
        }
        admin.reset_configs([ConfigResource(ConfigResourceType.TOPIC, name, configs=["retention.ms"])])
        modified = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])["topic"][name]
        assert set(modified) == {"segment.ms", "max.message.bytes"}
        bad = ConfigResource(ConfigResourceType.TOPIC, name, configs={"no.such": "1"})
        outcome = admin.alter_configs([bad], raise_on_unknown=False)["topic"][name]
        assert "InvalidConfigurationError" in outcome or "no.such" in outcome
        brokers = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
        assert brokers["broker"]["1"]["listeners"]["config_source"] == "STATIC_BROKER_CONFIG"
    finally:
        admin.close()


def confluent_error(future: Any) -> tuple[int, str]:
    from confluent_kafka import KafkaException

    with pytest.raises(KafkaException) as info:
        future.result(timeout=10)
    error = info.value.args[0]
    return error.code(), error.str()


def test_confluent_configs(broker: BrokerProcess) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
        NewTopic,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    name = unique_topic("ck-cfg")
    admin.create_topics([NewTopic(name, 1, 1, config={"retention.ms": "60000"})])[name].result(timeout=10)
    topic = ConfigResource(ResourceType.TOPIC, name)

    def current() -> dict[str, Any]:
        (future,) = admin.describe_configs([topic]).values()
        return dict(future.result(timeout=10))

    configs = current()
    assert configs["retention.ms"].value == "60000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert [s.name for s in configs["retention.ms"].synonyms.values()][0] == "retention.ms"
    ops = [
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ConfigEntry("segment.ms", "400000", incremental_operation=AlterConfigOpType.SET),
    ]
    changed = ConfigResource(ResourceType.TOPIC, name, incremental_configs=ops)
    (future,) = admin.incremental_alter_configs([changed]).values()
    future.result(timeout=10)
    configs = current()
    assert configs["cleanup.policy"].value == "delete,compact"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["segment.ms"].value == "400000"
    unknown = ConfigResource(
        ResourceType.TOPIC,
        name,
        incremental_configs=[ConfigEntry("no.such", "1", incremental_operation=AlterConfigOpType.SET)],
    )
    (future,) = admin.incremental_alter_configs([unknown]).values()
    code, message = confluent_error(future)
    assert code == ErrorCode.INVALID_CONFIG and "no.such" in message
    broker_change = ConfigResource(
        ResourceType.BROKER,
        "1",
        incremental_configs=[ConfigEntry("log.retention.hours", "1", incremental_operation=AlterConfigOpType.SET)],
    )
    (future,) = admin.incremental_alter_configs([broker_change]).values()
    assert confluent_error(future)[0] == ErrorCode.INVALID_REQUEST
    (future,) = admin.describe_configs([ConfigResource(ResourceType.BROKER, "1")]).values()
    broker_configs = future.result(timeout=10)
    assert broker_configs["listeners"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert broker_configs["listeners"].is_read_only


def test_aiokafka_configs(broker: BrokerProcess) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    async def scenario() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
        await admin.start()
        try:
            name = unique_topic("aio-cfg")
            await admin.create_topics([NewTopic(name, 1, 1, topic_configs={"retention.ms": "60000"})])
            (response,) = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
            (resource,) = response.resources
            assert resource[0] == 0
            entries = {entry[0]: entry for entry in resource[4]}
            assert entries["retention.ms"][1] == "60000"
            altered = ConfigResource(ConfigResourceType.TOPIC, name, configs={"segment.ms": "500000"})
            (response,) = await admin.alter_configs([altered])
            assert [(r[0], r[3]) for r in response.resources] == [(0, name)]
            (response,) = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
            entries = {entry[0]: entry for entry in response.resources[0][4]}
            assert entries["segment.ms"][1] == "500000"
            assert entries["retention.ms"][1] != "60000"  # AlterConfigs replaces every override
            bad = ConfigResource(ConfigResourceType.TOPIC, name, configs={"no.such": "1"})
            (response,) = await admin.alter_configs([bad])
            assert response.resources[0][0] == ErrorCode.INVALID_CONFIG
        finally:
            await admin.close()

    asyncio.run(scenario())

"""Dynamic broker configs, group configs and broker loggers against a real kbroker (each test its own broker,
as these change broker-wide state)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from protocol.errors import ErrorCode
from tests.broker.conftest import batch_of, list_offset, produce
from tests.broker.test_configs import (
    APPEND,
    BROKER,
    BROKER_LOGGER,
    DELETE,
    GROUP,
    SET,
    alter_one,
    create_topic,
    describe,
    incremental,
    values,
)
from tests.process import BrokerProcess, RawClient

DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT, LOGGER, GROUP_CONFIG = 2, 3, 4, 5, 6, 8


@pytest.fixture
def own(start_broker: Callable[..., BrokerProcess]) -> BrokerProcess:
    return start_broker("--config", "log.retention.hours=100")


@pytest.fixture
def raw(own: BrokerProcess) -> Iterator[RawClient]:
    with RawClient(own.bootstrap) as client:
        yield client


def _entries(raw: RawClient, rtype: int, name: str, keys: list[str] | None = None) -> dict[str, dict]:
    result = describe(raw, rtype, name, keys, synonyms=True)
    assert result["error_code"] == 0, result
    return {c["name"]: c for c in result["configs"]}


def _synonyms(entry: dict) -> list[tuple[str, str | None, int]]:
    return [(s["name"], s["value"], s["source"]) for s in entry["synonyms"]]


def test_cluster_default_then_per_broker_with_kafkas_sources(raw: RawClient) -> None:
    topic = create_topic(raw)
    assert incremental(raw, BROKER, "", [("log.retention.ms", SET, "7200000")])["error_code"] == 0
    default = _entries(raw, BROKER, "")
    assert list(default) == ["log.retention.ms"]
    assert _synonyms(default["log.retention.ms"]) == [("log.retention.ms", "7200000", DYNAMIC_DEFAULT)]
    assert values(raw, topic)["retention.ms"] == ("7200000", DYNAMIC_DEFAULT)
    assert incremental(raw, BROKER, "1", [("log.retention.ms", SET, "3600000")])["error_code"] == 0
    entry = _entries(raw, BROKER, "1", ["log.retention.ms"])["log.retention.ms"]
    assert (entry["value"], entry["config_source"], entry["read_only"]) == ("3600000", DYNAMIC_BROKER, False)
    assert _synonyms(entry) == [
        ("log.retention.ms", "3600000", DYNAMIC_BROKER),
        ("log.retention.ms", "7200000", DYNAMIC_DEFAULT),
        ("log.retention.hours", "100", STATIC),
        ("log.retention.hours", "336", DEFAULT),
    ]
    assert values(raw, topic)["retention.ms"] == ("3600000", DYNAMIC_BROKER)
    assert incremental(raw, BROKER, "1", [("log.retention.ms", DELETE, None)])["error_code"] == 0
    assert values(raw, topic)["retention.ms"] == ("7200000", DYNAMIC_DEFAULT)
    assert incremental(raw, BROKER, "", [("log.retention.ms", DELETE, None)])["error_code"] == 0
    assert values(raw, topic)["retention.ms"] == ("360000000", DEFAULT)  # log.retention.hours=100, no synonym
    assert _entries(raw, BROKER, "") == {}


def test_message_max_bytes_applies_to_running_topics_at_once(raw: RawClient) -> None:
    topic = create_topic(raw)
    assert produce(raw, topic, batch_of(1, value_size=2000))["error_code"] == 0
    assert incremental(raw, BROKER, "", [("message.max.bytes", SET, "1000")])["error_code"] == 0
    assert produce(raw, topic, batch_of(1, value_size=2000))["error_code"] == ErrorCode.MESSAGE_TOO_LARGE
    assert produce(raw, create_topic(raw), batch_of(1, value_size=2000))["error_code"] == ErrorCode.MESSAGE_TOO_LARGE
    assert incremental(raw, BROKER, "", [("message.max.bytes", DELETE, None)])["error_code"] == 0
    assert produce(raw, topic, batch_of(1, value_size=2000))["error_code"] == 0


def test_retention_set_dynamically_deletes_old_segments(start_broker: Callable[..., BrokerProcess]) -> None:
    quick = start_broker("--config", "log.retention.check.interval.ms=100")
    with RawClient(quick.bootstrap) as raw:
        topic = create_topic(raw)
        for _ in range(8):
            assert produce(raw, topic, batch_of(1, value_size=100))["error_code"] == 0
        assert list_offset(raw, topic, -2)["offset"] == 0
        changes = [("log.segment.bytes", SET, "200"), ("log.retention.bytes", SET, "400")]
        assert incremental(raw, BROKER, "", changes)["error_code"] == 0
        for _ in range(8):  # the new segment size rolls these into small segments
            assert produce(raw, topic, batch_of(1, value_size=100))["error_code"] == 0
        _wait_for(lambda: list_offset(raw, topic, -2)["offset"] > 8)
        assert list_offset(raw, topic, -1)["offset"] == 16


def test_append_validate_only_and_unknown_names(raw: RawClient) -> None:
    result = incremental(raw, BROKER, "", [("log.cleanup.policy", APPEND, "compact")], validate_only=True)
    assert result["error_code"] == 0
    assert _entries(raw, BROKER, "") == {}
    assert incremental(raw, BROKER, "", [("log.cleanup.policy", APPEND, "compact")])["error_code"] == 0
    assert _entries(raw, BROKER, "")["log.cleanup.policy"]["value"] == "delete,compact"  # from Kafka's default
    # Kafka stores a name it does not know, and reports it without a value
    assert alter_one(raw, BROKER, "1", {"custom.setting": "x"})["error_code"] == 0
    custom = _entries(raw, BROKER, "1", ["custom.setting"])["custom.setting"]
    assert (custom["value"], custom["config_source"], custom["read_only"]) == (None, DYNAMIC_BROKER, True)
    # AlterConfigs replaces the whole per-broker set
    assert alter_one(raw, BROKER, "1", {"log.segment.bytes": "2097152"})["error_code"] == 0
    assert "custom.setting" not in _entries(raw, BROKER, "1")


def test_dynamic_configs_survive_a_restart(own: BrokerProcess) -> None:
    with RawClient(own.bootstrap) as raw:
        assert incremental(raw, BROKER, "", [("log.retention.ms", SET, "7200000")])["error_code"] == 0
        assert incremental(raw, BROKER, "1", [("log.segment.bytes", SET, "2097152")])["error_code"] == 0
        assert incremental(raw, GROUP, "g1", [("consumer.session.timeout.ms", SET, "50000")])["error_code"] == 0
        topic = create_topic(raw)
    own.stop()
    own.start()
    with RawClient(own.bootstrap) as raw:
        assert values(raw, topic)["retention.ms"] == ("7200000", DYNAMIC_DEFAULT)
        assert values(raw, topic)["segment.bytes"] == ("2097152", DYNAMIC_BROKER)
        group = _entries(raw, GROUP, "g1")["consumer.session.timeout.ms"]
        assert (group["value"], group["config_source"]) == ("50000", GROUP_CONFIG)


def test_group_configs(raw: RawClient) -> None:
    configs = _entries(raw, GROUP, "some-group")
    assert set(configs) == {
        "consumer.session.timeout.ms",
        "consumer.heartbeat.interval.ms",
        "share.session.timeout.ms",
        "share.heartbeat.interval.ms",
        "share.record.lock.duration.ms",
        "share.delivery.count.limit",
        "share.partition.max.record.locks",
        "share.auto.offset.reset",
        "share.isolation.level",
        "kbroker.share.tag.filter",
        "errors.deadletterqueue.topic.name",
    }
    session = configs["consumer.session.timeout.ms"]
    assert (session["value"], session["config_source"], session["read_only"]) == ("45000", DEFAULT, False)
    assert _synonyms(session) == [("group.consumer.session.timeout.ms", "45000", DEFAULT)]
    assert incremental(raw, GROUP, "g", [("consumer.session.timeout.ms", SET, "50000")])["error_code"] == 0
    session = _entries(raw, GROUP, "g")["consumer.session.timeout.ms"]
    assert _synonyms(session) == [
        ("consumer.session.timeout.ms", "50000", GROUP_CONFIG),
        ("group.consumer.session.timeout.ms", "45000", DEFAULT),
    ]
    for ops, code, message in [
        ([("consumer.session.timeout.ms", SET, "5000")], ErrorCode.INVALID_CONFIG, "greater than or equal to"),
        ([("consumer.heartbeat.interval.ms", SET, "60000")], ErrorCode.INVALID_CONFIG, "less than or equal to"),
        ([("foo", SET, "1")], ErrorCode.INVALID_CONFIG, "Unknown group config name: foo"),
        ([("kbroker.share.tag.filter", SET, "a || (b")], ErrorCode.INVALID_CONFIG, "is not closed"),
        ([("kbroker.share.tag.filter", SET, "a |")], ErrorCode.INVALID_CONFIG, "unexpected character"),
        ([("errors.deadletterqueue.topic.name", SET, "bad name")], ErrorCode.INVALID_CONFIG, "Invalid value"),
        ([("errors.deadletterqueue.topic.name", SET, "__consumer_offsets")], ErrorCode.INVALID_CONFIG, "internal"),
    ]:
        result = incremental(raw, GROUP, "g", ops)
        assert result["error_code"] == code and message in result["error_message"], result
    empty = incremental(raw, GROUP, "", [("consumer.session.timeout.ms", SET, "50000")])
    assert (empty["error_code"], empty["error_message"]) == (
        ErrorCode.INVALID_REQUEST,
        "Default group resources are not allowed.",
    )


def test_broker_logger_levels_change_at_run_time(own: BrokerProcess, raw: RawClient) -> None:
    assert "level=debug event=connection_closed" not in own.log_text()  # a debug event, below the root's INFO
    loggers = _entries(raw, BROKER_LOGGER, "1")
    assert (loggers["root"]["value"], loggers["root"]["config_source"]) == ("INFO", LOGGER)
    assert loggers["kbroker.connection"]["value"] == "INFO"
    assert incremental(raw, BROKER_LOGGER, "1", [("kbroker.connection", SET, "DEBUG")])["error_code"] == 0
    assert _entries(raw, BROKER_LOGGER, "1", ["kbroker.connection"])["kbroker.connection"]["value"] == "DEBUG"
    with RawClient(own.bootstrap):
        pass
    _wait_for(lambda: "level=debug event=connection_closed" in own.log_text())
    assert incremental(raw, BROKER_LOGGER, "1", [("kbroker.connection", DELETE, None)])["error_code"] == 0
    assert _entries(raw, BROKER_LOGGER, "1", ["kbroker.connection"])["kbroker.connection"]["value"] == "INFO"
    for ops, code, message in [
        ([("no.such.logger", SET, "DEBUG")], ErrorCode.INVALID_CONFIG, "Logger no.such.logger does not exist!"),
        ([("root", SET, "LOUD")], ErrorCode.INVALID_CONFIG, "Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE"),
        ([("root", DELETE, None)], ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger"),
        ([("root", APPEND, "DEBUG")], ErrorCode.INVALID_REQUEST, "APPEND operation is not allowed"),
    ]:
        result = incremental(raw, BROKER_LOGGER, "1", ops)
        assert result["error_code"] == code and message in result["error_message"], result


def _wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_list_config_resources(raw: RawClient) -> None:
    topic = create_topic(raw)
    assert incremental(raw, GROUP, "with-configs", [("consumer.session.timeout.ms", SET, "50000")])["error_code"] == 0
    every = raw.call(74, 1, {"resource_types": []})
    listed = [(r["resource_name"], r["resource_type"]) for r in every["config_resources"]]
    assert listed == [("with-configs", GROUP), ("1", BROKER_LOGGER), ("1", BROKER), (topic, 2)]
    only_groups = raw.call(74, 1, {"resource_types": [GROUP]})["config_resources"]
    assert [r["resource_name"] for r in only_groups] == ["with-configs"]  # groups with configs only, as Kafka
    assert raw.call(74, 1, {"resource_types": [16]})["config_resources"] == []  # no client-metrics subscriptions
    assert raw.call(74, 1, {"resource_types": [99]})["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    assert raw.call(74, 0, {}) == {"throttle_time_ms": 0, "error_code": 0, "config_resources": []}

"""docker-compose.yml and the apache/kafka image's KAFKA_* environment convention.

There is no container engine where these tests run: the compose file's environment is read here and
given to a kbroker process directly (host names and ports swapped for local ones)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from kbroker.cli import build_parser, load_config
from kbroker.cli.serve import environment_properties
from kbroker.config_env import properties_from_environment, property_name
from tests.process import BrokerProcess, free_port

COMPOSE = Path(__file__).resolve().parents[1] / "docker-compose.yml"


def compose_environment() -> dict[str, str]:
    """The kbroker service's `environment:` mapping (the file keeps it as `NAME: "value"` lines)."""
    lines = COMPOSE.read_text().splitlines()
    start = lines.index("    environment:") + 1
    environment: dict[str, str] = {}
    for line in lines[start:]:
        if line.strip().startswith("#"):
            continue
        match = re.fullmatch(r' {6}([A-Z0-9_]+): "(.*)"', line)
        if match is None:
            break
        environment[match.group(1)] = match.group(2)
    return environment


def test_property_names_follow_the_image() -> None:
    assert property_name("KAFKA_LISTENERS") == "listeners"
    assert property_name("KAFKA_ADVERTISED_LISTENERS") == "advertised.listeners"
    assert property_name("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP") == "listener.security.protocol.map"
    assert property_name("KAFKA_NUM_PARTITIONS") == "num.partitions"
    assert property_name("KAFKA_VALID___PROPERTY__ALL_CASES") == "valid-property_all.cases"
    assert property_name("KAFKA_KAFKA_VALID_PROPERTY") == "kafka.valid.property"
    for not_a_property in ("KAFKA_OPTS", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_LOGGERS", "KAFKA_VERSION", "KAFKA_", "PATH"):
        assert property_name(not_a_property) is None
    assert properties_from_environment({"KAFKA_NUM_PARTITIONS": "3", "HOME": "/root", "KAFKA_OPTS": "-X"}) == {
        "num.partitions": "3"
    }


def test_precedence_config_over_environment_over_file(tmp_path: Path) -> None:
    server_properties = tmp_path / "server.properties"
    server_properties.write_text("num.partitions=2\nlog.retention.hours=10\ndefault.replication.factor=1\n")
    environ = {"KAFKA_NUM_PARTITIONS": "5", "KAFKA_LOG_RETENTION_HOURS": "20", "KAFKA_NOT_A_SETTING": "1"}
    args = build_parser().parse_args(["serve", "--config-file", str(server_properties), "--config", "num.partitions=7",
                                      "--data-dir", str(tmp_path / "data")])  # fmt: skip
    skipped: dict[str, str] = {}
    config = load_config(args, environ, skipped)
    assert config.get_int("num.partitions") == 7  # --config
    assert config.get_int("log.retention.hours") == 20  # the environment over the file
    assert config.get_int("default.replication.factor") == 1  # the file
    assert skipped == {"KAFKA_NOT_A_SETTING": "not.a.setting"}
    assert load_config(build_parser().parse_args(["serve"]), None).get_int("num.partitions") == 1  # no environment


def test_every_compose_variable_names_a_known_setting(tmp_path: Path) -> None:
    environment = compose_environment()
    kafka_variables = [name for name in environment if name.startswith("KAFKA_")]
    assert len(kafka_variables) == 15  # the parse found the whole block
    known, unknown = environment_properties(environment)
    assert unknown == {} and len(known) == len(kafka_variables)
    args = build_parser().parse_args(["serve", "--data-dir", str(tmp_path / "data")])
    config = load_config(args, environment)
    assert {x.name: (x.bind.port, x.advertised.host, x.advertised.port) for x in config.listeners} == {
        "INTERNAL": (19092, "kbroker", 19092),
        "EXTERNAL": (9092, "localhost", 9092),
    }
    assert config.get_int("num.partitions") == 3 and config.get_str("inter.broker.listener.name") == "INTERNAL"
    assert set(config.ignored_settings()) >= {"process.roles", "controller.quorum.voters"}


def test_kbroker_runs_with_the_compose_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compose file's environment, with local host names and free ports, serves both listeners to a
    real client, and the KRaft settings are logged as ignored."""
    internal, external, controller = free_port(), free_port(), free_port()
    swap = {"kbroker:19092": f"127.0.0.1:{internal}", "0.0.0.0:19092": f"127.0.0.1:{internal}",
            "localhost:9092": f"127.0.0.1:{external}", "0.0.0.0:9092": f"127.0.0.1:{external}",
            "0.0.0.0:29093": f"127.0.0.1:{controller}", "kbroker:29093": f"127.0.0.1:{controller}"}  # fmt: skip
    for name, value in compose_environment().items():
        if name == "KBROKER_HTTP_LISTEN":
            continue
        for old, new in swap.items():
            value = value.replace(old, new)
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CLUSTER_ID", "MkU3OEVBNTcwNTJENDM2Qk")
    broker = BrokerProcess(tmp_path / "data", port=external, listen_flag=False).start()
    try:
        topic = f"compose-{time.monotonic_ns()}"
        for port in (internal, external):
            producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}"})
            producer.produce(topic, value=b"via %d" % port, partition=0)
            assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{internal}", "group.id": topic,
                             "auto.offset.reset": "earliest"})  # fmt: skip
        consumer.subscribe([topic])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < 2 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
        consumer.close()
        assert values == [b"via %d" % internal, b"via %d" % external]
        metadata = Producer({"bootstrap.servers": f"127.0.0.1:{external}"}).list_topics(topic, timeout=10)
        assert len(metadata.topics[topic].partitions) == 3  # KAFKA_NUM_PARTITIONS
        assert {b.port for b in metadata.brokers.values()} == {external}  # EXTERNAL advertises its own address
    finally:
        broker.stop()
    log = broker.log_text()
    assert "config_ignored" in log and "process.roles" in log and "controller.quorum.voters" in log
    assert "CLUSTER_ID" in log

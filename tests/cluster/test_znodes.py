"""The znode payloads in Kafka's ZooKeeper-mode JSON shapes, both ways."""

from __future__ import annotations

import json
import uuid

import pytest

from kbroker.cluster import znodes
from kbroker.cluster.znodes import BrokerEndpoint, BrokerRegistration, PartitionState, TopicAssignment


def test_broker_registration_as_kafka_writes_it() -> None:
    registration = BrokerRegistration(
        2,
        (BrokerEndpoint("INTERNAL", "SSL", "10.0.0.2", 9093), BrokerEndpoint("CLIENT", "PLAINTEXT", "b2", 9092)),
        rack="r1",
        timestamp_ms=1700000000000,
    )
    data = znodes.encode_broker(registration)
    assert json.loads(data) == {
        "version": 5,
        "host": "b2",
        "port": 9092,
        "endpoints": ["INTERNAL://10.0.0.2:9093", "CLIENT://b2:9092"],
        "listener_security_protocol_map": {"INTERNAL": "SSL", "CLIENT": "PLAINTEXT"},
        "jmx_port": -1,
        "timestamp": "1700000000000",
        "features": {},
        "rack": "r1",
    }
    assert znodes.decode_broker(2, data) == registration
    # a registration written by Apache Kafka 2.8 (version 5, no rack)
    kafka = b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"port":9092,"host":"localhost","version":5,"timestamp":"1"}'
    assert znodes.decode_broker(0, kafka).endpoint("PLAINTEXT") == BrokerEndpoint(
        "PLAINTEXT", "PLAINTEXT", "localhost", 9092
    )


def test_topic_assignment_and_state() -> None:
    topic_id = uuid.uuid4()
    assignment = TopicAssignment("orders", topic_id, {1: (2, 3), 0: (1, 2)})
    value = json.loads(znodes.encode_topic(assignment))
    assert value["version"] == 2 and value["partitions"] == {"0": [1, 2], "1": [2, 3]}
    assert value["adding_replicas"] == {} and value["removing_replicas"] == {}
    assert len(value["topic_id"]) == 22  # Kafka's Uuid text: 16 bytes in url-safe base64, unpadded
    assert znodes.decode_topic("orders", znodes.encode_topic(assignment)) == assignment
    state = PartitionState(1, 5, (1, 2), 3)
    assert json.loads(znodes.encode_partition_state(state)) == {
        "controller_epoch": 3,
        "leader": 1,
        "version": 1,
        "leader_epoch": 5,
        "isr": [1, 2],
    }
    assert znodes.decode_partition_state(znodes.encode_partition_state(state), 8) == PartitionState(1, 5, (1, 2), 3, 8)


def test_controller_cluster_id_and_paths() -> None:
    assert json.loads(znodes.encode_controller(4, 12)) == {"version": 1, "brokerid": 4, "timestamp": "12"}
    assert znodes.decode_controller(znodes.encode_controller(4, 12)) == 4
    assert znodes.decode_controller_epoch(b"17") == 17
    assert znodes.decode_cluster_id(znodes.encode_cluster_id("abc")) == "abc"
    assert znodes.partition_state_path("t", 3) == "/brokers/topics/t/partitions/3/state"


@pytest.mark.parametrize(
    "data", [b"", b"[]", b"{", b'{"leader":1}', b'{"leader":"x","leader_epoch":0,"controller_epoch":0,"isr":[]}']
)
def test_malformed_state_is_a_format_error(data: bytes) -> None:
    with pytest.raises(znodes.ZnodeFormatError):
        znodes.decode_partition_state(data, 0)

"""The znodes of Kafka's ZooKeeper mode: paths and JSON payloads, written as Kafka's brokers wrote them.

    /cluster/id                               {"version":"1","id":CLUSTER_ID}
    /controller                               ephemeral {"version":1,"brokerid":N,"timestamp":"MS"}
    /controller_epoch                         "E" (plain integer)
    /brokers/ids/N                            ephemeral {"version":5,"host":..,"port":..,"endpoints":[..],
                                                         "listener_security_protocol_map":{..},"jmx_port":-1,
                                                         "timestamp":"MS","features":{}} (+ "rack")
    /brokers/topics/T                         {"version":2,"partitions":{"0":[1,2,3]},"adding_replicas":{},
                                               "removing_replicas":{},"topic_id":UUID} (a partition being
                                               reassigned: "adding_replicas":{"0":[4]}, and so on)
    /brokers/topics/T/partitions/P/state      {"version":1,"leader":N,"leader_epoch":E,"controller_epoch":C,
                                               "isr":[..]}
    /config/topics/T                          {"version":1,"config":{name: value}}
    /latest_producer_id_block                 {"version":1,"broker":N,"block_start":"S","block_end":"E"}

Pure: no I/O. Malformed payloads raise ZnodeFormatError.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
TOPIC_CONFIGS = "/config/topics"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"

NO_LEADER = -1  # Kafka's LeaderAndIsr.NoLeader


class ZnodeFormatError(ValueError):
    """A znode's payload is not what Kafka's ZooKeeper mode writes there."""


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{partition_path(topic, partition)}/state"


def topic_config_path(topic: str) -> str:
    return f"{TOPIC_CONFIGS}/{topic}"


def _json(data: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ZnodeFormatError(f"{what}: not JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise ZnodeFormatError(f"{what}: not a JSON object")
    return value


def _dump(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's Uuid text form: url-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except ValueError as exc:
        raise ZnodeFormatError(f"invalid topic id {text!r}") from exc


# --------------------------------------------------------------------------- /cluster/id


def encode_cluster_id(cluster_id: str) -> bytes:
    return _dump({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    value = _json(data, CLUSTER_ID).get("id")
    if not isinstance(value, str) or not value:
        raise ZnodeFormatError(f"{CLUSTER_ID}: no id")
    return value


# --------------------------------------------------------------------------- controller


def encode_controller(broker_id: int, timestamp_ms: int) -> bytes:
    return _dump({"version": 1, "brokerid": broker_id, "timestamp": str(timestamp_ms)})


def decode_controller(data: bytes) -> int:
    value = _json(data, CONTROLLER).get("brokerid")
    if not isinstance(value, int):
        raise ZnodeFormatError(f"{CONTROLLER}: no brokerid")
    return value


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def decode_controller_epoch(data: bytes) -> int:
    try:
        return int(data.decode().strip())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ZnodeFormatError(f"{CONTROLLER_EPOCH}: not an integer") from exc


# --------------------------------------------------------------------------- broker registrations


@dataclass(frozen=True)
class BrokerEndpoint:
    listener: str
    protocol: str
    host: str
    port: int

    def connection_string(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


@dataclass(frozen=True)
class BrokerRegistration:
    """A live broker as it registered under /brokers/ids/N: its advertised endpoints, one per listener."""

    broker_id: int
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None = None
    timestamp_ms: int = 0

    def endpoint(self, listener: str) -> BrokerEndpoint | None:
        for endpoint in self.endpoints:
            if endpoint.listener == listener:
                return endpoint
        return None


def encode_broker(registration: BrokerRegistration) -> bytes:
    # host/port: the first PLAINTEXT endpoint, for old readers, as Kafka writes them (else null/-1)
    plaintext = next((e for e in registration.endpoints if e.protocol == "PLAINTEXT"), None)
    value: dict[str, Any] = {
        "version": 5,
        "host": plaintext.host if plaintext else None,
        "port": plaintext.port if plaintext else -1,
        "endpoints": [e.connection_string() for e in registration.endpoints],
        "listener_security_protocol_map": {e.listener: e.protocol for e in registration.endpoints},
        "jmx_port": -1,
        "timestamp": str(registration.timestamp_ms),
        "features": {},
    }
    if registration.rack is not None:
        value["rack"] = registration.rack
    return _dump(value)


def decode_broker(broker_id: int, data: bytes) -> BrokerRegistration:
    what = broker_path(broker_id)
    value = _json(data, what)
    protocols = value.get("listener_security_protocol_map") or {}
    endpoints = []
    for text in value.get("endpoints") or ():
        name, sep, address = str(text).partition("://")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not port.isdigit():
            raise ZnodeFormatError(f"{what}: invalid endpoint {text!r}")
        endpoints.append(BrokerEndpoint(name, str(protocols.get(name, name)), host.strip("[]"), int(port)))
    rack = value.get("rack")
    timestamp = value.get("timestamp", "0")
    return BrokerRegistration(
        broker_id,
        tuple(endpoints),
        rack if isinstance(rack, str) else None,
        int(timestamp) if str(timestamp).isdigit() else 0,
    )


# --------------------------------------------------------------------------- topics


@dataclass(frozen=True)
class TopicAssignment:
    """/brokers/topics/T: the topic id and each partition's replicas (the first is the preferred leader).

    While a partition is being reassigned (kbroker.cluster.reassignment) its replicas are the target's
    followed by the original's others, `adding` names the target's new ones and `removing` the original's
    that go; partitions not being reassigned have no entry there (Kafka 2.4+'s znode, KIP-455)."""

    topic: str
    topic_id: uuid.UUID
    partitions: Mapping[int, tuple[int, ...]]
    adding: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    removing: Mapping[int, tuple[int, ...]] = field(default_factory=dict)


def encode_topic(assignment: TopicAssignment) -> bytes:
    return _dump(
        {
            "version": 2,
            "partitions": {str(p): list(r) for p, r in sorted(assignment.partitions.items())},
            "adding_replicas": {str(p): list(r) for p, r in sorted(assignment.adding.items()) if r},
            "removing_replicas": {str(p): list(r) for p, r in sorted(assignment.removing.items()) if r},
            "topic_id": kafka_uuid(assignment.topic_id),
        }
    )


def decode_topic(topic: str, data: bytes) -> TopicAssignment:
    what = topic_path(topic)
    value = _json(data, what)
    raw = value.get("partitions")
    if not isinstance(raw, dict):
        raise ZnodeFormatError(f"{what}: no partitions")
    partitions = _replica_lists(raw, what)
    topic_id = value.get("topic_id")
    return TopicAssignment(
        topic,
        parse_kafka_uuid(topic_id) if isinstance(topic_id, str) else uuid.UUID(int=0),
        partitions,
        {p: r for p, r in _replica_lists(value.get("adding_replicas") or {}, what).items() if r},
        {p: r for p, r in _replica_lists(value.get("removing_replicas") or {}, what).items() if r},
    )


def _replica_lists(raw: Any, what: str) -> dict[int, tuple[int, ...]]:
    if not isinstance(raw, dict):
        raise ZnodeFormatError(f"{what}: not a map of partitions")
    result: dict[int, tuple[int, ...]] = {}
    for key, replicas in raw.items():
        if not str(key).isdigit() or not isinstance(replicas, list) or not all(isinstance(r, int) for r in replicas):
            raise ZnodeFormatError(f"{what}: invalid partition {key!r}")
        result[int(key)] = tuple(replicas)
    return result


def encode_topic_config(config: Mapping[str, str]) -> bytes:
    return _dump({"version": 1, "config": dict(config)})


def decode_topic_config(data: bytes) -> dict[str, str]:
    config = _json(data, TOPIC_CONFIGS).get("config") or {}
    return {str(k): str(v) for k, v in config.items()}


# --------------------------------------------------------------------------- partition state


@dataclass(frozen=True)
class PartitionState:
    """LeaderAndIsr with the epoch of the controller that wrote it, and the znode version it was read at
    (`zk_version`, -1 when not yet written): the next write is a compare-and-set against it."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int = -1

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER


def encode_partition_state(state: PartitionState) -> bytes:
    return _dump(
        {
            "controller_epoch": state.controller_epoch,
            "leader": state.leader,
            "version": 1,
            "leader_epoch": state.leader_epoch,
            "isr": list(state.isr),
        }
    )


def decode_partition_state(data: bytes, zk_version: int, what: str = "partition state") -> PartitionState:
    value = _json(data, what)
    try:
        leader, epoch, controller_epoch = (
            int(value["leader"]),
            int(value["leader_epoch"]),
            int(value["controller_epoch"]),
        )
        isr: Sequence[Any] = value["isr"]
        return PartitionState(leader, epoch, tuple(int(r) for r in isr), controller_epoch, zk_version)
    except (KeyError, TypeError, ValueError) as exc:
        raise ZnodeFormatError(f"{what}: {exc}") from exc


# --------------------------------------------------------------------------- producer id blocks


def encode_producer_id_block(broker_id: int, start: int, end: int) -> bytes:
    return _dump({"version": 1, "broker": broker_id, "block_start": str(start), "block_end": str(end)})


def decode_producer_id_block(data: bytes) -> tuple[int, int]:
    """(block_start, block_end) of the last block handed out."""
    value = _json(data, PRODUCER_ID_BLOCK)
    try:
        return int(value["block_start"]), int(value["block_end"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ZnodeFormatError(f"{PRODUCER_ID_BLOCK}: {exc}") from exc

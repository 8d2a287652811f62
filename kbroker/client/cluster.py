"""Bootstrap, metadata, leaders and coordinators, and retries of Kafka's retriable errors."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kbroker.client.connection import BrokerConnection, KafkaError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

T = TypeVar("T")
COORDINATOR_GROUP = 0
BACKOFF_S = 0.1


@dataclass
class PartitionInfo:
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    error_code: int = 0


@dataclass
class TopicInfo:
    name: str
    topic_id: bytes
    is_internal: bool
    error_code: int
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)


def parse_bootstrap(text: str) -> list[tuple[str, int]]:
    """`host:port[,host:port...]`; a missing port is Kafka's 9092."""
    servers = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep:
            host, port = item, "9092"
        try:
            servers.append((host.strip("[]") or "127.0.0.1", int(port)))
        except ValueError:
            raise ValueError(f"bad bootstrap address {item!r}: expected HOST:PORT") from None
    if not servers:
        raise ValueError("no bootstrap address given")
    return servers


class Cluster:
    """What the client knows of the cluster: brokers, topics, and one connection per broker."""

    def __init__(self, bootstrap: str, client_id: str = "kbroker-cli", timeout_s: float = 30.0) -> None:
        self.bootstrap = parse_bootstrap(bootstrap)
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.brokers: dict[int, tuple[str, int]] = {}
        self.cluster_id: str | None = None
        self.controller_id = -1
        self._connections: dict[int, BrokerConnection] = {}
        self._any: BrokerConnection | None = None

    def close(self) -> None:
        for conn in {id(c): c for c in [*self._connections.values(), self._any] if c}.values():
            conn.close()
        self._connections.clear()
        self._any = None

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- connections

    def any_connection(self) -> BrokerConnection:
        """A connection to some broker: the first bootstrap address that answers."""
        if self._any is not None:
            return self._any
        errors = []
        for host, port in self.bootstrap:
            try:
                self._any = BrokerConnection(host, port, self.client_id, self.timeout_s)
                return self._any
            except OSError as exc:
                errors.append(f"{host}:{port}: {exc.strerror or exc}")
        raise ConnectionError("no bootstrap broker reachable (" + "; ".join(errors) + ")")

    def connection(self, node_id: int) -> BrokerConnection:
        conn = self._connections.get(node_id)
        if conn is None:
            if node_id not in self.brokers:
                self.metadata([])
            if node_id not in self.brokers:
                raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {node_id} is not in the metadata")
            host, port = self.brokers[node_id]
            conn = BrokerConnection(host, port, self.client_id, self.timeout_s)
            self._connections[node_id] = conn
        return conn

    def drop(self, node_id: int) -> None:
        conn = self._connections.pop(node_id, None)
        if conn is not None:
            conn.close()

    # -- metadata

    def metadata(self, topics: Iterable[str] | None, allow_auto_create: bool = False) -> dict[str, TopicInfo]:
        """Metadata for `topics` (None: every topic; []: brokers only)."""
        names = None if topics is None else [{"name": t} for t in topics]
        body = {"topics": names, "allow_auto_topic_creation": allow_auto_create}
        response = self.any_connection().call(ApiKey.METADATA, body)
        self.brokers = {b["node_id"]: (b["host"], b["port"]) for b in response["brokers"]}
        self.cluster_id = response["cluster_id"]
        self.controller_id = response["controller_id"]
        result = {}
        for topic in response["topics"]:
            info = TopicInfo(topic["name"], topic["topic_id"], topic["is_internal"], topic["error_code"])
            for p in topic["partitions"]:
                info.partitions[p["partition_index"]] = PartitionInfo(
                    p["partition_index"], p["leader_id"], p["replica_nodes"], p["isr_nodes"], p["error_code"]
                )
            result[info.name] = info
        return result

    def topic(self, name: str) -> TopicInfo:
        """One topic's metadata; UNKNOWN_TOPIC_OR_PARTITION (after the usual retries) when it does not exist."""

        def attempt() -> TopicInfo:
            info = self.metadata([name]).get(name)
            code = info.error_code if info else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if code:
                raise KafkaError(code, context=f"topic {name}")
            assert info is not None
            if any(p.leader < 0 for p in info.partitions.values()):
                raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, context=f"topic {name}")
            return info

        return self.retry(attempt, attempts=5)

    def leaders(self, topic: TopicInfo, partitions: Iterable[int]) -> dict[int, list[int]]:
        """Leader node -> the partitions of `topic` it leads."""
        by_leader: dict[int, list[int]] = {}
        for partition in partitions:
            if partition not in topic.partitions:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, context=f"{topic.name}[{partition}]")
            by_leader.setdefault(topic.partitions[partition].leader, []).append(partition)
        return by_leader

    def coordinator(self, group: str) -> BrokerConnection:
        """A connection to `group`'s coordinator (FindCoordinator, retried while it loads)."""

        def attempt() -> BrokerConnection:
            conn = self.any_connection()
            version = conn.version(ApiKey.FIND_COORDINATOR)
            if version >= 4:
                response = conn.call(
                    ApiKey.FIND_COORDINATOR, {"key_type": COORDINATOR_GROUP, "coordinator_keys": [group]}
                )
                entry = response["coordinators"][0]
            else:
                entry = conn.call(ApiKey.FIND_COORDINATOR, {"key": group, "key_type": COORDINATOR_GROUP})
            if entry["error_code"]:
                raise KafkaError(entry["error_code"], context=f"group {group}")
            self.brokers.setdefault(entry["node_id"], (entry["host"], entry["port"]))
            return self.connection(entry["node_id"])

        return self.retry(attempt)

    # -- retries

    def retry(self, attempt: Callable[[], T], attempts: int = 10) -> T:
        """Run `attempt`, again after a short back-off while it fails with a retriable Kafka error."""
        for n in range(attempts):
            try:
                return attempt()
            except KafkaError as error:
                if not error.retriable or n == attempts - 1:
                    raise
            except ConnectionError:
                self.close()
                if n == attempts - 1:
                    raise
            time.sleep(BACKOFF_S * (n + 1))
        raise AssertionError("unreachable")


def check(code: int, context: str, message: str | None = None) -> None:
    if code:
        raise KafkaError(code, message, context)


def first(items: list[Any], what: str) -> Any:
    if not items:
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"the broker's answer has no {what}")
    return items[0]

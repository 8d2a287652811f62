"""One adapter interface over every client in the compatibility suite.

Each scenario is written once against :class:`Client` and parametrized over the registry in
:mod:`tests.compat.clients.registry`. A client that cannot do something lists it in ``missing`` with the
reason, and the scenario is skipped for it with that reason.

Byte fields travel as ``bytes | None`` here and as base64 (``null`` for None) in the drivers' JSON.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from tests.compat.clients.members import GroupDescription, Member, MemberConfig, TxnProducer

Start = Literal["earliest", "latest"] | dict[int, int]
OffsetSpec = Literal["earliest", "latest"] | int
Headers = tuple[tuple[str, bytes | None], ...]

GROUP_APIS = ("FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetFetch", "OffsetCommit")

# The protocol APIs each adapter operation uses, by Kafka's API names. A client replaces entries in
# ``Client.op_apis`` where it uses others (for example an idempotent producer also needs InitProducerId).
BASE_OP_APIS: dict[str, tuple[str, ...]] = {
    "produce": ("Metadata", "Produce"),
    "consume": ("Metadata", "Fetch", "ListOffsets"),
    "create_topic": ("Metadata", "CreateTopics"),
    "describe_topic": ("Metadata",),
    "topic_configs": ("Metadata", "DescribeConfigs"),
    "alter_config": ("Metadata", "IncrementalAlterConfigs"),
    "create_partitions": ("Metadata", "CreatePartitions"),
    "delete_topic": ("Metadata", "DeleteTopics"),
    "list_offset": ("Metadata", "ListOffsets"),
    "delete_records": ("Metadata", "DeleteRecords"),
    "partitions_for": ("Metadata",),
    "group": ("Metadata", "Fetch", "ListOffsets", *GROUP_APIS),
    "describe_group": ("Metadata", "FindCoordinator", "DescribeGroups", "OffsetFetch", "ListOffsets"),
    "produce_idempotent": ("Metadata", "Produce", "InitProducerId"),
    "txn": ("Metadata", "Produce", "FindCoordinator", "InitProducerId", "AddPartitionsToTxn", "EndTxn"),
    "txn.send_offsets": ("AddOffsetsToTxn", "TxnOffsetCommit", *GROUP_APIS),
}

# librdkafka enables LZ4 only when the broker advertises FindCoordinator v0 (its feature map dates LZ4 by the
# API that came with Kafka 0.8.2); without it, lz4 batches are silently sent uncompressed.
LIBRDKAFKA_APIS: dict[str, tuple[str, ...]] = {"compression.lz4": ("FindCoordinator",)}

# Capabilities a client may lack (keys of ``Client.missing``).
CAPABILITIES = (
    "produce.timestamp",  # set an explicit CreateTime per record
    "produce.record_headers",  # different headers on each record of one produce call
    "produce.binary",  # arbitrary bytes in keys/values (not just text)
    "produce.null_key",
    "produce.null_value",
    "consume.position",  # report the consumer position after consuming
    "consume.reset_none",  # auto.offset.reset=none reports OFFSET_OUT_OF_RANGE
    "long_poll",  # a consume call can wait on an empty partition while another client produces
    "list_offsets.no_match",  # list_offset reports ListOffsets' -1 when no record has a late enough timestamp
    *BASE_OP_APIS,
    "compression.gzip",
    "compression.snappy",
    "compression.lz4",
    "compression.zstd",
    "acks.0",
    "group.kill",  # run a member in a process of its own and kill it (no LeaveGroup)
    "group.cooperative",  # the cooperative-sticky assignor
    "group.static",  # static membership (group.instance.id)
    "group.consumer_protocol",  # group.protocol=consumer (KIP-848), with broker-side regex subscriptions
    "group.consumer_static",  # a static member of a KIP-848 group leaves for a while (epoch -2) and comes back
    "consume.read_committed",  # isolation.level=read_committed
)


class ClientError(Exception):
    """An operation failed in the client; ``kind`` is a normalized error name (e.g. offset_out_of_range)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class Record:
    """A record to produce."""

    key: bytes | None
    value: bytes | None
    headers: Headers = ()
    timestamp: int | None = None
    partition: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "key": b64(self.key),
            "value": b64(self.value),
            "headers": [[k, b64(v)] for k, v in self.headers],
            "timestamp": self.timestamp,
            "partition": self.partition,
        }


@dataclass(frozen=True)
class Consumed:
    """A record as a consumer saw it."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp: int

    @classmethod
    def from_message(cls, message: Any) -> Consumed:
        """From a kafka-python or aiokafka ConsumerRecord (same attribute names in both)."""
        return cls(
            partition=message.partition,
            offset=message.offset,
            key=message.key,
            value=message.value,
            headers=tuple((k, v) for k, v in message.headers),
            timestamp=message.timestamp,
        )

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Consumed:
        return cls(
            partition=int(obj["partition"]),
            offset=int(obj["offset"]),
            key=unb64(obj["key"]),
            value=unb64(obj["value"]),
            headers=tuple((str(k), unb64(v)) for k, v in obj.get("headers") or []),
            timestamp=int(obj["timestamp"]),
        )


@dataclass
class ConsumeResult:
    records: list[Consumed]
    positions: dict[int, int] | None = None
    error: str | None = None
    error_message: str = ""


@dataclass
class TopicDescription:
    name: str
    partitions: list[int]


@dataclass
class Client:
    """Base adapter. Subclasses implement the operations they support and list the rest in ``missing``."""

    name: str = ""
    missing: dict[str, str] = field(default_factory=dict)
    op_apis: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def apis(self, *ops: str) -> set[str]:
        """The API names this client needs for these operations (or capabilities, where they need APIs)."""
        needed: set[str] = set()
        for op in ops:
            needed.update(self.op_apis.get(op, BASE_OP_APIS.get(op, ())))
        return needed

    def close(self) -> None:
        """Release processes or connections held across calls."""

    # Produce / consume ---------------------------------------------------------------------------
    def produce(
        self, bootstrap: str, topic: str, records: Sequence[Record], acks: str = "all", compression: str = "none"
    ) -> list[tuple[int, int]]:
        """Produce records in order; return (partition, offset) per record ((-1, -1) when unknown)."""
        raise NotImplementedError

    def consume(
        self,
        bootstrap: str,
        topic: str,
        partitions: Sequence[int],
        start: Start,
        max_records: int,
        timeout_s: float,
        reset: str = "earliest",
        isolation: str = "read_uncommitted",
    ) -> ConsumeResult:
        """Assign the partitions (no group), start as told, return once max_records arrived or timeout_s passed."""
        raise NotImplementedError

    # Admin ---------------------------------------------------------------------------------------
    def create_topic(self, bootstrap: str, topic: str, partitions: int, configs: dict[str, str]) -> None:
        raise NotImplementedError

    def describe_topic(self, bootstrap: str, topic: str) -> TopicDescription:
        raise NotImplementedError

    def topic_configs(self, bootstrap: str, topic: str) -> dict[str, str]:
        """All configs of a topic, name -> value (values as strings)."""
        raise NotImplementedError

    def alter_config(self, bootstrap: str, topic: str, key: str, value: str) -> None:
        raise NotImplementedError

    def create_partitions(self, bootstrap: str, topic: str, total: int) -> None:
        raise NotImplementedError

    def delete_topic(self, bootstrap: str, topic: str) -> None:
        raise NotImplementedError

    def list_offset(self, bootstrap: str, topic: str, partition: int, spec: OffsetSpec) -> int:
        """ListOffsets for one partition; -1 when no record has a timestamp >= spec."""
        raise NotImplementedError

    def delete_records(self, bootstrap: str, topic: str, partition: int, before: int) -> int:
        """Delete records below ``before``; return the new low watermark."""
        raise NotImplementedError

    def partitions_for(self, bootstrap: str, topic: str) -> list[int]:
        """A metadata request that may auto-create the topic; the partitions it reports."""
        raise NotImplementedError

    # Groups, idempotence, transactions (tests/compat/clients/members.py) ----------------------------------
    def produce_idempotent(
        self, bootstrap: str, topic: str, records: Sequence[Record], pace_ms: int = 0
    ) -> list[tuple[int, int]]:
        """Produce with enable.idempotence and acks=all, sleeping ``pace_ms`` after each send (a long run)."""
        raise NotImplementedError

    def open_member(self, bootstrap: str, config: MemberConfig) -> Member:
        """Subscribe a consumer in ``config.group``; it polls in the background until closed."""
        raise NotImplementedError

    def describe_group(self, bootstrap: str, group: str, topic: str) -> GroupDescription:
        """The group's state, members and assignments, committed offsets and the topic's end offsets (admin API)."""
        raise NotImplementedError

    def txn_producer(self, bootstrap: str, transactional_id: str, timeout_ms: int = 60000) -> TxnProducer:
        """A producer with this transactional id, after InitProducerId."""
        raise NotImplementedError

    def spawn(self) -> Client:
        """The same client in a process of its own, for members that are killed (``kill``)."""
        raise NotImplementedError

    def kill(self) -> None:
        """SIGKILL the client's process (only for a client from ``spawn``)."""
        raise NotImplementedError


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)

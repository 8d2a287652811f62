"""kafka-python 3: group members, group descriptions, idempotent and transactional producers."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import kafka.errors as errors
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, OffsetSpec
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.structs import OffsetAndMetadata

from tests.compat.clients.adapter import ClientError, Consumed, Record
from tests.compat.clients.members import (
    GroupDescription,
    GroupMemberDescription,
    Member,
    MemberConfig,
    ThreadMember,
    TxnProducer,
    fenced_or_other,
)

ASSIGNORS: dict[str, Any] = {
    "": RangePartitionAssignor,
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}


def _fail(exc: BaseException) -> ClientError:
    return ClientError(fenced_or_other(repr(exc)), repr(exc))


@dataclass
class KafkaPythonMember(ThreadMember):
    consumer: KafkaConsumer | None = None
    to_consumed: Any = None

    def _open(self) -> None:
        c = self.config
        self.consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=c.group,
            group_instance_id=c.instance_id,
            enable_auto_commit=False,
            auto_offset_reset=c.reset,
            session_timeout_ms=c.session_timeout_ms,
            heartbeat_interval_ms=c.heartbeat_interval_ms,
            partition_assignment_strategy=[ASSIGNORS[c.assignor]],
            isolation_level=c.isolation,
            fetch_max_wait_ms=200,
            metadata_max_age_ms=2000,
        )
        # Load the topic's metadata before joining: a kafka-python leader elected before its metadata has the
        # topic assigns it to nobody and rebalances again when it arrives (on Kafka 4.3 a member was lost then).
        self.consumer.partitions_for_topic(c.topic)
        self.consumer.subscribe([c.topic])

    def _poll(self) -> tuple[list[Consumed], set[int]]:
        assert self.consumer is not None
        batches = self.consumer.poll(timeout_ms=200)
        records = [self.to_consumed(m) for batch in batches.values() for m in batch]
        return records, {tp.partition for tp in self.consumer.assignment()}

    def _commit(self, offsets: dict[int, int] | None) -> None:
        assert self.consumer is not None
        try:
            if offsets is None:
                self.consumer.commit()
            else:
                wire = {TopicPartition(self.config.topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()}
                self.consumer.commit(wire)
        except errors.KafkaError as exc:
            raise _fail(exc) from exc

    def _close(self) -> None:
        assert self.consumer is not None
        self.consumer.close(autocommit=False)


def open_member(bootstrap: str, config: MemberConfig, to_consumed: Any) -> Member:
    if config.assignor not in ASSIGNORS:
        raise ClientError("unsupported", f"kafka-python has no {config.assignor} assignor")
    return KafkaPythonMember(config=config, bootstrap=bootstrap, to_consumed=to_consumed).start()


def describe_group(bootstrap: str, group: str, topic: str) -> GroupDescription:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="compat-kafka-python")
    try:
        described = admin.describe_groups([group])[group]
        committed = admin.list_group_offsets({group: None})[group]
        partitions = sorted(p["partition_index"] for p in admin.describe_topics([topic])[0]["partitions"])
        ends = admin.list_partition_offsets({TopicPartition(topic, p): OffsetSpec.LATEST for p in partitions})
    except errors.KafkaError as exc:
        raise _fail(exc) from exc
    finally:
        admin.close()
    if described.get("error"):
        raise ClientError("other", str(described["error"]))
    members = []
    for m in described["members"]:
        mine = [tp.partition for tp in _assigned(m["member_assignment"]) if tp.topic == topic]
        members.append(GroupMemberDescription(m["member_id"], m.get("group_instance_id"), sorted(mine)))
    return GroupDescription(
        str(described["group_state"]),
        members,
        {tp.partition: int(om.offset) for tp, om in committed.items() if tp.topic == topic and om.offset >= 0},
        {tp.partition: int(info.offset) for tp, info in ends.items()},
    )


def _assigned(assignment: Any) -> list[TopicPartition]:
    """A described member's partitions: kafka-python decodes the assignment, or leaves it a dict or bytes."""
    if hasattr(assignment, "partitions"):
        return list(assignment.partitions())
    if isinstance(assignment, dict):
        parts = assignment.get("assigned_partitions") or assignment.get("assignment") or []
        out = []
        for entry in parts:
            topic, partitions = (entry["topic"], entry["partitions"]) if isinstance(entry, dict) else entry
            out += [TopicPartition(topic, p) for p in partitions]
        return out
    raise ClientError("other", f"cannot read the member assignment {assignment!r}")


def produce_idempotent(bootstrap: str, topic: str, records: Sequence[Record], pace_ms: int) -> list[tuple[int, int]]:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5, delivery_timeout_ms=90000
    )
    try:
        futures = []
        for r in records:
            futures.append(producer.send(topic, key=r.key, value=r.value, partition=r.partition))
            if pace_ms:
                time.sleep(pace_ms / 1000)
        producer.flush(timeout=90)
        return [(m.partition, m.offset) for m in (f.get(timeout=90) for f in futures)]
    except errors.KafkaError as exc:
        raise _fail(exc) from exc
    finally:
        producer.close(timeout=5)


@dataclass
class KafkaPythonTxn(TxnProducer):
    producer: KafkaProducer

    def _call(self, action: Any, *args: Any) -> Any:
        try:
            return action(*args)
        except errors.KafkaError as exc:
            raise _fail(exc) from exc

    def begin(self) -> None:
        self._call(self.producer.begin_transaction)

    def send(self, topic: str, records: Sequence[Record]) -> None:
        def go() -> None:
            futures = [self.producer.send(topic, key=r.key, value=r.value, partition=r.partition) for r in records]
            self.producer.flush(timeout=30)
            for f in futures:
                f.get(timeout=30)

        self._call(go)

    def send_offsets(self, member: Member, group: str, topic: str, offsets: dict[int, int]) -> None:
        metadata: Any = group
        if isinstance(member, KafkaPythonMember):
            metadata = member.on_thread(lambda: member.consumer.group_metadata())  # type: ignore[union-attr]
        wire = {TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()}
        self._call(self.producer.send_offsets_to_transaction, wire, metadata)

    def commit(self) -> None:
        self._call(self.producer.commit_transaction)

    def abort(self) -> None:
        self._call(self.producer.abort_transaction)

    def close(self) -> None:
        self.producer.close(timeout=5)


def txn_producer(bootstrap: str, transactional_id: str, timeout_ms: int) -> TxnProducer:
    try:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            transactional_id=transactional_id,
            transaction_timeout_ms=timeout_ms,
            linger_ms=5,
        )
    except errors.KafkaError as exc:
        raise _fail(exc) from exc
    txn = KafkaPythonTxn(producer)
    txn._call(producer.init_transactions)
    return txn

"""confluent-kafka (librdkafka): group members, group descriptions, idempotent and transactional producers."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

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


def _fail(error: KafkaError | KafkaException | BaseException) -> ClientError:
    text = repr(error.args[0] if isinstance(error, KafkaException) and error.args else error)
    return ClientError(fenced_or_other(text), text)


@dataclass
class ConfluentMember(ThreadMember):
    consumer: Consumer | None = None
    to_consumed: Any = None

    def _open(self) -> None:
        c = self.config
        settings: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": c.group,
            "enable.auto.commit": False,
            "auto.offset.reset": c.reset,
            "isolation.level": c.isolation,
            "fetch.wait.max.ms": 200,
            "topic.metadata.refresh.interval.ms": 2000,
        }
        if c.protocol == "consumer":  # KIP-848: the broker owns session, heartbeat and assignment
            settings["group.protocol"] = "consumer"
            if c.assignor:
                settings["group.remote.assignor"] = c.assignor
        else:
            settings["session.timeout.ms"] = c.session_timeout_ms
            settings["heartbeat.interval.ms"] = c.heartbeat_interval_ms
            settings["partition.assignment.strategy"] = c.assignor or "range,roundrobin"
        if c.instance_id is not None:
            settings["group.instance.id"] = c.instance_id
        self.consumer = Consumer(settings)
        self.consumer.subscribe([c.topic if c.topic_regex is None else "^" + c.topic_regex])

    def _poll(self) -> tuple[list[Consumed], set[int]]:
        assert self.consumer is not None
        records = []
        for message in self.consumer.consume(500, 0.2):
            error = message.error()
            if error is None:
                records.append(self.to_consumed(message))
            elif error.code() != KafkaError._PARTITION_EOF:
                raise KafkaException(error)
        return records, {tp.partition for tp in self.consumer.assignment() if tp.topic == self.config.topic}

    def _commit(self, offsets: dict[int, int] | None) -> None:
        assert self.consumer is not None
        try:
            if offsets is None:
                self.consumer.commit(asynchronous=False)
            else:
                tps = [TopicPartition(self.config.topic, p, o) for p, o in offsets.items()]
                self.consumer.commit(offsets=tps, asynchronous=False)
        except KafkaException as exc:
            raise _fail(exc) from exc

    def _close(self) -> None:
        assert self.consumer is not None
        self.consumer.close()


def open_member(bootstrap: str, config: MemberConfig, to_consumed: Any) -> Member:
    return ConfluentMember(config=config, bootstrap=bootstrap, to_consumed=to_consumed).start()


def describe_group(bootstrap: str, group: str, topic: str) -> GroupDescription:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive its futures
    try:
        described = admin.describe_consumer_groups([group])[group].result(timeout=30)
        listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=30)
        partitions = sorted(admin.list_topics(topic=topic, timeout=20).topics[topic].partitions)
        specs = {TopicPartition(topic, p): OffsetSpec.latest() for p in partitions}
        ends = {tp.partition: f.result(timeout=30).offset for tp, f in admin.list_offsets(specs).items()}
    except KafkaException as exc:
        raise _fail(exc) from exc
    members = [
        GroupMemberDescription(
            member_id=m.member_id,
            instance_id=m.group_instance_id,
            partitions=sorted(tp.partition for tp in m.assignment.topic_partitions if tp.topic == topic),
        )
        for m in described.members
    ]
    committed = {tp.partition: tp.offset for tp in listed.topic_partitions if tp.topic == topic and tp.offset >= 0}
    return GroupDescription(described.state.name, members, committed, ends)


def produce_idempotent(bootstrap: str, topic: str, records: Sequence[Record], pace_ms: int) -> list[tuple[int, int]]:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 60000,
        }
    )
    results: list[tuple[int, int] | KafkaError] = [(-1, -1)] * len(records)

    def delivered(index: int) -> Any:
        def callback(error: KafkaError | None, message: Any) -> None:
            results[index] = error if error is not None else (message.partition(), message.offset())

        return callback

    for index, r in enumerate(records):
        kwargs: dict[str, Any] = {"key": r.key, "value": r.value}
        if r.partition is not None:
            kwargs["partition"] = r.partition
        producer.produce(topic, on_delivery=delivered(index), **kwargs)
        producer.poll(0)
        if pace_ms:
            time.sleep(pace_ms / 1000)
    if producer.flush(90) != 0:
        raise ClientError("timeout", "records not delivered within 90s")
    for result in results:
        if isinstance(result, KafkaError):
            raise _fail(result)
    return [r for r in results if isinstance(r, tuple)]


@dataclass
class ConfluentTxn(TxnProducer):
    producer: Producer
    errors: list[KafkaError] = field(default_factory=list)

    def _call(self, action: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return action(*args, **kwargs)
        except KafkaException as exc:
            raise _fail(exc) from exc

    def begin(self) -> None:
        self._call(self.producer.begin_transaction)

    def send(self, topic: str, records: Sequence[Record]) -> None:
        def delivered(error: KafkaError | None, message: Any) -> None:
            if error is not None:
                self.errors.append(error)

        for r in records:
            kwargs: dict[str, Any] = {"key": r.key, "value": r.value}
            if r.partition is not None:
                kwargs["partition"] = r.partition
            self._call(self.producer.produce, topic, on_delivery=delivered, **kwargs)
        self.producer.flush(30)
        if self.errors:
            raise _fail(self.errors.pop())

    def send_offsets(self, member: Member, group: str, topic: str, offsets: dict[int, int]) -> None:
        assert isinstance(member, ConfluentMember)
        metadata = member.on_thread(lambda: member.consumer.consumer_group_metadata())  # type: ignore[union-attr]
        tps = [TopicPartition(topic, p, o) for p, o in offsets.items()]
        self._call(self.producer.send_offsets_to_transaction, tps, metadata, 30)

    def commit(self) -> None:
        self._call(self.producer.commit_transaction, 30)

    def abort(self) -> None:
        self._call(self.producer.abort_transaction, 30)

    def close(self) -> None:
        try:
            self.producer.flush(1)
        except KafkaException:
            pass  # a fenced producer fails everything, flush included


def txn_producer(bootstrap: str, transactional_id: str, timeout_ms: int) -> TxnProducer:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": timeout_ms,
            "linger.ms": 5,
        }
    )
    txn = ConfluentTxn(producer)
    txn._call(producer.init_transactions, 30)
    return txn

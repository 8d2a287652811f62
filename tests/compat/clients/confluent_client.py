"""confluent-kafka (librdkafka) as an in-process client of the compatibility suite."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from tests.compat.clients import confluent_groups
from tests.compat.clients.adapter import (
    LIBRDKAFKA_APIS,
    Client,
    ClientError,
    Consumed,
    ConsumeResult,
    Record,
    Start,
    TopicDescription,
)
from tests.compat.clients.adapter import (
    OffsetSpec as Spec,
)
from tests.compat.clients.pydriver import InProcessGroupOps

RESET = {"earliest": "earliest", "latest": "latest", "none": "error"}
OUT_OF_RANGE = {KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE}


def _raise(error: KafkaError | KafkaException | BaseException) -> None:
    if isinstance(error, KafkaException):
        error = error.args[0]
    if isinstance(error, KafkaError):
        kind = "offset_out_of_range" if error.code() in OUT_OF_RANGE else "other"
        if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            kind = "unknown_topic"
        if error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
            kind = "topic_exists"
        if error.code() in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE):
            kind = "message_too_large"
        raise ClientError(kind, str(error))
    raise ClientError("other", repr(error))


def _wait(future: Future[Any]) -> Any:
    try:
        return future.result(timeout=30)
    except KafkaException as exc:
        _raise(exc)


def _consumed(message: Message) -> Consumed:
    timestamp = int(message.timestamp()[1])
    return Consumed(
        partition=_position(message)[0],
        offset=_position(message)[1],
        key=_header(message.key()),
        value=_header(message.value()),
        headers=tuple((str(h[0]), _header(h[1])) for h in message.headers() or []),
        timestamp=timestamp,
    )


@dataclass
class ConfluentClient(InProcessGroupOps, Client):
    name: str = "confluent-kafka"
    groups = confluent_groups
    to_consumed = staticmethod(_consumed)
    missing: dict[str, str] = field(default_factory=dict)
    op_apis: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(LIBRDKAFKA_APIS))

    def _admin(self, bootstrap: str) -> AdminClient:
        return AdminClient({"bootstrap.servers": bootstrap, "client.id": "compat-confluent"})

    def produce(
        self, bootstrap: str, topic: str, records: Sequence[Record], acks: str = "all", compression: str = "none"
    ) -> list[tuple[int, int]]:
        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": acks,
                "compression.type": compression,
                "linger.ms": 5,
                "message.timeout.ms": 30000,
            }
        )
        results: list[tuple[int, int] | KafkaError] = [(-1, -1)] * len(records)

        def delivered(index: int) -> Any:
            def callback(error: KafkaError | None, message: Message) -> None:
                results[index] = error if error is not None else _position(message)

            return callback

        for index, r in enumerate(records):
            kwargs: dict[str, Any] = {"key": r.key, "value": r.value, "headers": list(r.headers)}
            if r.partition is not None:
                kwargs["partition"] = r.partition
            if r.timestamp is not None:
                kwargs["timestamp"] = r.timestamp
            while True:
                try:
                    producer.produce(topic, on_delivery=delivered(index), **kwargs)
                    break
                except BufferError:
                    producer.poll(0.1)
        if producer.flush(30) != 0:
            raise ClientError("timeout", "records not delivered within 30s")
        out = []
        for result in results:
            if isinstance(result, KafkaError):
                _raise(result)
            assert isinstance(result, tuple)
            out.append((result[0], result[1] if result[1] >= 0 else -1))
        return out

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
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "isolation.level": isolation,
                "group.id": "compat-confluent-unused",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": RESET[reset],
                "fetch.wait.max.ms": 200,
            }
        )
        if start == "earliest" or start == "latest":
            offset = OFFSET_BEGINNING if start == "earliest" else OFFSET_END
            tps = [TopicPartition(topic, p, offset) for p in partitions]
        else:
            tps = [TopicPartition(topic, p, start[p]) for p in partitions]
        result = ConsumeResult(records=[])
        try:
            consumer.assign(tps)
            deadline = time.monotonic() + timeout_s
            while len(result.records) < max_records and time.monotonic() < deadline:
                wait = max(0.001, min(0.5, deadline - time.monotonic()))
                for message in consumer.consume(max_records - len(result.records), wait):
                    error = message.error()
                    if error is None:
                        result.records.append(_consumed(message))
                    elif error.code() in OUT_OF_RANGE:
                        result.error, result.error_message = "offset_out_of_range", str(error)
                        return result
                    elif error.code() != KafkaError._PARTITION_EOF:
                        result.error, result.error_message = "other", str(error)
                        return result
            result.positions = {tp.partition: tp.offset for tp in consumer.position(tps)}
        finally:
            consumer.close()
        return result

    def create_topic(self, bootstrap: str, topic: str, partitions: int, configs: dict[str, str]) -> None:
        admin = self._admin(bootstrap)
        _wait(admin.create_topics([NewTopic(topic, partitions, 1, config=configs)])[topic])

    def describe_topic(self, bootstrap: str, topic: str) -> TopicDescription:
        admin = self._admin(bootstrap)
        described = admin.list_topics(topic=topic, timeout=20).topics[topic]
        if described.error is not None:
            _raise(described.error)
        return TopicDescription(topic, sorted(described.partitions))

    def topic_configs(self, bootstrap: str, topic: str) -> dict[str, str]:
        resource = ConfigResource(ResourceType.TOPIC, topic)
        admin = self._admin(bootstrap)
        entries = _wait(admin.describe_configs([resource])[resource])
        return {name: str(entry.value) for name, entry in entries.items()}

    def alter_config(self, bootstrap: str, topic: str, key: str, value: str) -> None:
        entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
        admin = self._admin(bootstrap)
        _wait(admin.incremental_alter_configs([resource])[resource])

    def create_partitions(self, bootstrap: str, topic: str, total: int) -> None:
        admin = self._admin(bootstrap)
        _wait(admin.create_partitions([NewPartitions(topic, total)])[topic])

    def delete_topic(self, bootstrap: str, topic: str) -> None:
        admin = self._admin(bootstrap)
        _wait(admin.delete_topics([topic])[topic])

    def list_offset(self, bootstrap: str, topic: str, partition: int, spec: Spec) -> int:
        if spec == "earliest":
            wire = OffsetSpec.earliest()
        elif spec == "latest":
            wire = OffsetSpec.latest()
        else:
            wire = OffsetSpec.for_timestamp(int(spec))
        tp = TopicPartition(topic, partition)
        admin = self._admin(bootstrap)  # must outlive the future
        return int(_wait(admin.list_offsets({tp: wire})[tp]).offset)

    def delete_records(self, bootstrap: str, topic: str, partition: int, before: int) -> int:
        tp = TopicPartition(topic, partition, before)
        admin = self._admin(bootstrap)  # must outlive the future
        return int(_wait(admin.delete_records([tp])[tp]).low_watermark)

    def partitions_for(self, bootstrap: str, topic: str) -> list[int]:
        producer = Producer({"bootstrap.servers": bootstrap, "allow.auto.create.topics": True})
        deadline = time.monotonic() + 20
        while True:
            described = producer.list_topics(topic=topic, timeout=10).topics[topic]
            if described.error is None and described.partitions:
                return sorted(described.partitions)
            if time.monotonic() > deadline:
                _raise(described.error or KafkaError(KafkaError._TIMED_OUT))
            time.sleep(0.1)


def _position(message: Message) -> tuple[int, int]:
    partition, offset = message.partition(), message.offset()
    return (-1 if partition is None else partition, -1 if offset is None else offset)


def _header(value: object) -> bytes | None:
    return value if value is None or isinstance(value, bytes) else str(value).encode()
